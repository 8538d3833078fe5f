"""The job's task table: every task, what each is, which container runs it, how its containers
ended, and the one place a task moves from state to state (:meth:`TaskTable.move`), checked
against the table of the moves a task can make (:data:`MOVES`), with the index that groups
the tasks by where they stand."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import Role, TaskState

Key = tuple[str, int]


@dataclass
class Task:
    """One task and the container currently running it."""

    role: Role
    index: int
    container: str = ""
    attempt: int = 0
    previous_address: str | None = None  # before its last restart: its successor tries it
    failed_at: float | None = None  # when its last failure was heard, for recovery times
    yarn_container_id: str | None = None
    node: str | None = None  # the NodeManager's host:http-port
    user: str | None = None
    exit_code: int | None = None
    mirror: dict | None = None  # its local work dir against HDFS (appmaster/agent/mirror.py)
    gpus: dict | None = None  # the GPUs its agent found and holds (appmaster/common/gpus.py)
    progress: dict | None = None  # what its event files say (appmaster/agent/progress.py)
    requested_at: float = 0.0  # when its container was last asked for
    # How its containers ended, by YARN's verdict (model/verdicts.py): failed, preempted...
    verdicts: Counter[str] = field(default_factory=Counter)
    signalled_failure: str = ""  # where and how, as the agent's word told it
    # What the index groups tasks by: changed only by TaskTable, read through the properties.
    _state: TaskState = field(default=TaskState.REQUESTED, init=False)
    _address: str | None = field(default=None, init=False)  # where its TF server listens
    # Its script was killed by a signal: YARN's verdict on its container (memory, preemption)
    # is awaited until then before the exit is judged as the task's own failure.
    _verdict_due: float | None = field(default=None, init=False)

    @property
    def state(self) -> TaskState:
        return self._state

    @property
    def address(self) -> str | None:
        return self._address

    @property
    def verdict_due(self) -> float | None:
        return self._verdict_due

    @property
    def key(self) -> Key:
        return (self.role, self.index)

    @property
    def name(self) -> str:
        return f"{self.role} {self.index}"

    @property
    def host(self) -> str:
        return (self.node or "?").rsplit(":", 1)[0]


# Short of running: the states a task passes through on its way to its script.
NOT_RUNNING_YET = (TaskState.REQUESTED, TaskState.ALLOCATED, TaskState.STARTED,
                   TaskState.REGISTERED, TaskState.STOPPED)


_LIVE = (TaskState.REQUESTED, TaskState.ALLOCATED, TaskState.STARTED, TaskState.REGISTERED,
         TaskState.RUNNING)
_ENDS = (TaskState.FINISHED, TaskState.FAILED, TaskState.STOPPED)
# Every move a task can make: state -> the states it may go to. Forward along the way to its
# script; back to REQUESTED when its container is asked for again (replaced, a new generation,
# sent back from a lost node, asked again), from anywhere but STOPPED; to an end from any
# live state, since a container can end at any moment; STOPPED (the job ended) is the last.
MOVES: dict[TaskState, frozenset[TaskState]] = {
    TaskState.REQUESTED: frozenset({TaskState.REQUESTED, TaskState.ALLOCATED,
                                    TaskState.STARTED, *_ENDS}),
    TaskState.ALLOCATED: frozenset({TaskState.REQUESTED, TaskState.STARTED, *_ENDS}),
    # the evaluator runs without exporting; TensorBoard's export says it runs
    TaskState.STARTED: frozenset({TaskState.REQUESTED, TaskState.REGISTERED, TaskState.RUNNING,
                                  *_ENDS}),
    TaskState.REGISTERED: frozenset({TaskState.REQUESTED, TaskState.RUNNING, *_ENDS}),
    # TensorBoard runs from its export: its agent's "running" follows
    TaskState.RUNNING: frozenset({TaskState.REQUESTED, TaskState.RUNNING, *_ENDS}),
    # a new generation starts every task again, a finished or dropped one too
    TaskState.FINISHED: frozenset({TaskState.REQUESTED}),
    TaskState.FAILED: frozenset({TaskState.REQUESTED}),
    TaskState.STOPPED: frozenset(),
}
assert set(MOVES) == set(TaskState) and set(_LIVE + _ENDS) == set(TaskState)


class IllegalMove(ValueError):
    """A rule moved a task where the table of moves does not allow: a bug of the rules."""


class TaskIndex:
    """The job's tasks grouped by where they stand, kept up to date by :class:`TaskTable` as
    they move: an event's "has every task started / registered / run?" is then a count, not
    a pass over every task. At 1,000 tasks those passes, one or more per event and again for
    the next deadline, made the AppMaster's work per event grow with the job (issue 28). A
    task enters its group's dict last when it changes, so the tasks still waiting for a
    container are in the order they were asked for."""

    def __init__(self, cluster_roles: Iterable[str]) -> None:
        self.roles = tuple(cluster_roles)  # the TensorFlow cluster's; side tasks: verdicts only
        self.by_state: defaultdict[tuple[str, TaskState], dict[Key, Task]] = defaultdict(dict)
        self.unregistered: dict[Key, Task] = {}  # cluster tasks counted on, without an address
        self.verdict_awaited: dict[Key, Task] = {}  # tasks whose container's verdict is due

    def add(self, task: Task) -> None:
        if task.verdict_due is not None:
            self.verdict_awaited[task.key] = task
        if task.role not in self.roles:
            return
        self.by_state[(task.role, task.state)][task.key] = task
        if task.address is None and task.state != TaskState.FAILED:
            self.unregistered[task.key] = task

    def discard(self, task: Task) -> None:
        self.verdict_awaited.pop(task.key, None)
        self.unregistered.pop(task.key, None)
        if task.role in self.roles:
            self.by_state[(task.role, task.state)].pop(task.key, None)

    def count(self, *states: TaskState, roles: Iterable[str] | None = None) -> int:
        return sum(len(self.by_state[(role, state)])
                   for role in (self.roles if roles is None else roles) for state in states)

    def live(self, roles: Iterable[str] | None = None) -> int:
        """How many of these roles' tasks the job still counts on (not dropped as failed)."""
        return self.count(*(s for s in TaskState if s != TaskState.FAILED), roles=roles)

    def in_state(self, state: TaskState) -> list[Task]:
        return [task for role in self.roles for task in self.by_state[(role, state)].values()]

    def oldest_request(self) -> float | None:
        """When the longest-waiting container request was made: each role's first."""
        firsts = [next(iter(group.values())).requested_at for role in self.roles
                  if (group := self.by_state[(role, TaskState.REQUESTED)])]
        return min(firsts) if firsts else None


class _Keep:
    """A field a move leaves as it is."""


KEEP = _Keep()


class TaskTable:
    """Every task of the job (the TensorFlow cluster's, TensorBoard and the evaluator beside
    it), the container each runs in, and the one place their states change."""

    def __init__(self, plan: JobPlan, am_attempt: int = 1) -> None:
        # A later AppMaster attempt starts every task again: count the earlier starts.
        self.tasks = {(name, index): Task(Role(name), index, attempt=am_attempt - 1)
                      for name, index in plan.task_keys()}
        # Beside the TensorFlow cluster: not in its spec; their ends never end training.
        self.tensorboard = Task(Role.TENSORBOARD, 0) if plan.tensorboard else None
        self.evaluator = (Task(Role.EVALUATOR, 0, attempt=am_attempt - 1)
                          if plan.evaluator else None)
        self.by_container: dict[str, Task] = {}  # the containers the job waits on
        self.index = TaskIndex(role.name for role in plan.roles)
        for task in self.every_task():
            self.index.add(task)

    def add(self, role: Role, index: int) -> Task:
        """A task the job gains (flex): asked for with the next generation."""
        task = self.tasks[(role, index)] = Task(role, index)
        self.index.add(task)
        return task

    def remove(self, role: str, index: int) -> Task:
        """A task the job loses (flex); its container, if any, is the caller's to stop."""
        task = self.tasks.pop((role, index))
        self.index.discard(task)
        return task

    def every_task(self) -> list[Task]:
        return [*self.tasks.values(), *(t for t in (self.tensorboard, self.evaluator) if t)]

    def move(self, task: Task, state: TaskState, address: str | None | _Keep = KEEP,
             verdict_due: float | None | _Keep = KEEP) -> None:
        """``task`` goes to ``state`` (its address, its verdict's due time with it, if
        given): :class:`IllegalMove` if :data:`MOVES` does not allow it."""
        if state not in MOVES[task.state]:
            raise IllegalMove(f"{task.name} cannot go from {task.state} to {state}")
        self._change(task, state, address, verdict_due)

    def update(self, task: Task, address: str | None | _Keep = KEEP,
               verdict_due: float | None | _Keep = KEEP) -> None:
        """``task``'s address or its verdict's due time change; its state does not."""
        self._change(task, task.state, address, verdict_due)

    def _change(self, task: Task, state: TaskState, address: str | None | _Keep,
                verdict_due: float | None | _Keep) -> None:
        self.index.discard(task)
        task._state = state
        if not isinstance(address, _Keep):
            task._address = address
        if not isinstance(verdict_due, _Keep):
            task._verdict_due = verdict_due
        self.index.add(task)

    def live_tasks(self) -> list[Task]:
        """Tasks the job still counts on (an ignored failed worker is dropped)."""
        return [t for t in self.tasks.values() if t.state != TaskState.FAILED]
