"""The job's task table (appmaster/model/jobtasks.py): the one place a task moves from state to
state, every move checked against the table of allowed moves, the index following each."""

from __future__ import annotations

from collections import deque

import pytest

from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.vocabulary import Role, TaskState
from appmaster.model.jobtasks import MOVES, IllegalMove, Task, TaskTable

ALLOWED = [(old, new) for old in TaskState for new in TaskState if new in MOVES[old]]
REFUSED = [(old, new) for old in TaskState for new in TaskState if new not in MOVES[old]]
# The way to a task's script, in order.
WAY = [TaskState.REQUESTED, TaskState.ALLOCATED, TaskState.STARTED, TaskState.REGISTERED,
       TaskState.RUNNING]


def table() -> TaskTable:
    roles = (RolePlan("ps", 1, 1, 1024, 1), RolePlan("worker", 2, 2, 1024, 1))
    return TaskTable(JobPlan(name="job", entry="train.py", python="python3", work_dir="/w",
                             roles=roles,
                             evaluator=RolePlan("evaluator", 1, 3, 1024, 1)))


def path_to(state: TaskState) -> list[TaskState]:
    """The shortest run of allowed moves from a new task's state to ``state``."""
    paths = {TaskState.REQUESTED: [TaskState.REQUESTED]}
    waiting = deque([TaskState.REQUESTED])
    while waiting:
        here = waiting.popleft()
        for there in sorted(MOVES[here]):
            if there not in paths:
                paths[there] = [*paths[here], there]
                waiting.append(there)
    return paths[state]


def task_in(state: TaskState) -> tuple[TaskTable, Task]:
    tasks = table()
    worker = tasks.tasks[("worker", 1)]
    for step in path_to(state)[1:]:
        tasks.move(worker, step)
    assert worker.state == state
    return tasks, worker


def index_agrees(tasks: TaskTable) -> None:
    """The index each event's checks read, against a pass over the tasks."""
    for state in TaskState:
        assert tasks.index.count(state) == sum(t.state == state for t in tasks.tasks.values())
    assert set(tasks.index.unregistered) == {
        t.key for t in tasks.tasks.values() if t.address is None and t.state != TaskState.FAILED}
    assert set(tasks.index.verdict_awaited) == {
        t.key for t in tasks.every_task() if t.verdict_due is not None}


def test_every_state_can_be_reached_from_a_new_task() -> None:
    assert {state for state in TaskState if path_to(state)} == set(TaskState)
    assert table().tasks[("ps", 0)].state == TaskState.REQUESTED


@pytest.mark.parametrize(("old", "new"), ALLOWED, ids=lambda s: str(s))
def test_each_allowed_move_is_made_and_the_index_follows(old: TaskState,
                                                         new: TaskState) -> None:
    tasks, worker = task_in(old)
    tasks.move(worker, new)
    assert worker.state == new
    index_agrees(tasks)


@pytest.mark.parametrize(("old", "new"), REFUSED, ids=lambda s: str(s))
def test_each_move_the_table_does_not_allow_is_refused_and_changes_nothing(
        old: TaskState, new: TaskState) -> None:
    tasks, worker = task_in(old)
    with pytest.raises(IllegalMove, match=f"worker 1 cannot go from {old} to {new}"):
        tasks.move(worker, new, address="h:1")
    assert (worker.state, worker.address) == (old, None)
    index_agrees(tasks)


def test_a_task_goes_back_only_to_be_asked_for_again_and_a_stopped_one_nowhere() -> None:
    for old, new in ALLOWED:
        if old in WAY and new in WAY and WAY.index(new) < WAY.index(old):
            assert new == TaskState.REQUESTED, (old, new)
        if old.ended:
            assert new == TaskState.REQUESTED, (old, new)
    assert MOVES[TaskState.STOPPED] == frozenset()
    assert (TaskState.FINISHED, TaskState.RUNNING) in REFUSED
    assert (TaskState.REQUESTED, TaskState.RUNNING) in REFUSED


def test_the_address_and_the_verdicts_due_time_change_through_the_table() -> None:
    tasks, worker = task_in(TaskState.STARTED)
    tasks.move(worker, TaskState.REGISTERED, address="h:2222")
    assert worker.address == "h:2222" and ("worker", 1) not in tasks.index.unregistered
    tasks.update(worker, verdict_due=12.0)
    assert worker.state == TaskState.REGISTERED and worker.verdict_due == 12.0
    index_agrees(tasks)
    tasks.move(worker, TaskState.REQUESTED, address=None, verdict_due=None)
    assert (worker.address, worker.verdict_due) == (None, None)
    index_agrees(tasks)


def test_a_task_cannot_be_moved_behind_the_tables_back() -> None:
    worker = table().tasks[("worker", 0)]
    for name, value in (("state", TaskState.RUNNING), ("address", "h:1"), ("verdict_due", 1.0)):
        with pytest.raises(AttributeError):
            setattr(worker, name, value)
    assert worker.role is Role.WORKER
