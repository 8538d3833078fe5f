"""The job's task table (appmaster/model/jobtasks.py): the one place a task moves from state to
state, every move checked against the table of allowed moves, the index following each."""

from __future__ import annotations

from collections import deque

import pytest

from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.vocabulary import WAITING, Role, TaskState
from appmaster.model.jobtasks import JUDGED, MOVES, IllegalMove, Task, TaskTable

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


def move(tasks: TaskTable, task: Task, state: TaskState, **fields) -> None:
    """A move as the rules make it: a judged state with the time it is judged at."""
    tasks.move(task, state, due=10.0 if state in JUDGED else None, **fields)


def task_in(state: TaskState) -> tuple[TaskTable, Task]:
    tasks = table()
    worker = tasks.tasks[("worker", 1)]
    for step in path_to(state)[1:]:
        move(tasks, worker, step)
    assert worker.state == state
    return tasks, worker


def index_agrees(tasks: TaskTable) -> None:
    """The index each event's checks read, against a pass over the tasks."""
    for state in TaskState:
        assert tasks.index.count(state) == sum(t.state == state for t in tasks.tasks.values())
    assert set(tasks.index.unregistered) == {
        t.key for t in tasks.tasks.values() if t.address is None and t.state != TaskState.FAILED}
    assert set(tasks.index.judged) == {
        t.key for t in tasks.every_task() if t.state in JUDGED}
    assert all((t.due is not None) == (t.state in JUDGED) for t in tasks.every_task())


def test_every_state_can_be_reached_from_a_new_task() -> None:
    assert {state for state in TaskState if path_to(state)} == set(TaskState)
    assert table().tasks[("ps", 0)].state == TaskState.REQUESTED


@pytest.mark.parametrize(("old", "new"), ALLOWED, ids=lambda s: str(s))
def test_each_allowed_move_is_made_and_the_index_follows(old: TaskState,
                                                         new: TaskState) -> None:
    tasks, worker = task_in(old)
    move(tasks, worker, new)
    assert worker.state == new
    index_agrees(tasks)


@pytest.mark.parametrize(("old", "new"), REFUSED, ids=lambda s: str(s))
def test_each_move_the_table_does_not_allow_is_refused_and_changes_nothing(
        old: TaskState, new: TaskState) -> None:
    tasks, worker = task_in(old)
    with pytest.raises(IllegalMove, match=f"worker 1 cannot go from {old} to {new}"):
        move(tasks, worker, new, address="h:1")
    assert (worker.state, worker.address) == (old, None)
    index_agrees(tasks)


def test_a_task_goes_back_only_to_be_asked_for_again_and_a_stopped_one_nowhere() -> None:
    way = [*WAITING, *WAY[1:]]
    for old, new in ALLOWED:
        if old in way and new in way and way.index(new) < way.index(old):
            assert new in WAITING, (old, new)
        if old.ended:
            assert new == TaskState.REQUESTED, (old, new)
    assert MOVES[TaskState.STOPPED] == frozenset()
    assert (TaskState.FINISHED, TaskState.RUNNING) in REFUSED
    assert (TaskState.REQUESTED, TaskState.RUNNING) in REFUSED
    assert (TaskState.FAILING, TaskState.RUNNING) in REFUSED  # judged: replaced, never back


def test_any_live_task_can_end_or_be_judged_and_a_judged_one_only_leaves() -> None:
    for old in TaskState:
        if not old.ended and old not in JUDGED:
            assert {*JUDGED, TaskState.FAILED, TaskState.STOPPED} <= MOVES[old], old
    for judged in JUDGED:
        assert not MOVES[judged] & {TaskState.ALLOCATED, TaskState.STARTED,
                                    TaskState.REGISTERED, TaskState.RUNNING}


def test_the_address_and_the_due_time_change_through_the_table() -> None:
    tasks, worker = task_in(TaskState.STARTED)
    tasks.move(worker, TaskState.REGISTERED, address="h:2222")
    assert worker.address == "h:2222" and ("worker", 1) not in tasks.index.unregistered
    tasks.move(worker, TaskState.KILLED, due=12.0, failure="(c on nm1): exit code 137")
    assert (worker.state, worker.due, worker.failure) == (TaskState.KILLED, 12.0,
                                                          "(c on nm1): exit code 137")
    index_agrees(tasks)
    tasks.move(worker, TaskState.REPLACING, address=None)
    assert (worker.address, worker.due, worker.failure) == (None, None, "")
    index_agrees(tasks)


def test_a_judged_state_needs_its_due_time_and_no_other_state_takes_one() -> None:
    tasks, worker = task_in(TaskState.RUNNING)
    with pytest.raises(IllegalMove, match="need one"):
        tasks.move(worker, TaskState.FAILING)
    with pytest.raises(IllegalMove, match="alone"):
        tasks.move(worker, TaskState.REPLACING, due=3.0)
    assert worker.state == TaskState.RUNNING and worker.due is None


def test_a_task_cannot_be_moved_behind_the_tables_back() -> None:
    worker = table().tasks[("worker", 0)]
    for name, value in (("state", TaskState.RUNNING), ("address", "h:1"), ("due", 1.0)):
        with pytest.raises(AttributeError):
            setattr(worker, name, value)
    assert worker.role is Role.WORKER


def test_heartbeats_are_heard_by_changed_counters_and_silence_is_listed() -> None:
    tasks, worker = task_in(TaskState.RUNNING)
    worker.container = "worker_1"
    tasks.watch(worker, 100.0)
    tasks.hear({"worker_1": b"1"}, 110.0)
    tasks.hear({"worker_1": b"1"}, 125.0)  # the same counter: not a beat
    assert tasks.silent_for(worker, 130.0) == 20.0
    assert tasks.silent(130.0, timeout_s=30.0) == []
    assert tasks.silent(141.0, timeout_s=30.0) == [("worker_1", worker, 31.0)]
    tasks.forget("worker_1")
    assert tasks.silent(200.0, timeout_s=30.0) == [] and tasks.silent_for(worker, 200.0) is None
