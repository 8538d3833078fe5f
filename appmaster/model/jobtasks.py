"""The job's tasks and the index that groups them by where they stand (appmaster/model/job.py's
state): what each task is, which container runs it, how its containers ended."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from appmaster.common.vocabulary import TaskState


@dataclass
class Task:
    """One task and the container currently running it."""

    role: str
    index: int
    container: str = ""
    attempt: int = 0
    address: str | None = None
    previous_address: str | None = None  # before its last restart: its successor tries it
    state: TaskState = TaskState.REQUESTED
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
    # Its script was killed by a signal: YARN's verdict on its container (memory, preemption)
    # is awaited until then before the exit is judged as the task's own failure.
    verdict_due: float | None = None
    signalled_failure: str = ""  # where and how, as the agent's word told it

    def __setattr__(self, name: str, value: object) -> None:
        # The job's index (TaskIndex) follows every change of the fields it groups by.
        index = self.__dict__.get("_index")
        if index is None or name not in TaskIndex.FIELDS:
            object.__setattr__(self, name, value)
            return
        index.discard(self)
        object.__setattr__(self, name, value)
        index.add(self)

    @property
    def key(self) -> tuple[str, int]:
        return (self.role, self.index)

    @property
    def name(self) -> str:
        return f"{self.role} {self.index}"

    @property
    def host(self) -> str:
        return (self.node or "?").rsplit(":", 1)[0]


Key = tuple[str, int]
# Short of running: the states a task passes through on its way to its script.
NOT_RUNNING_YET = (TaskState.REQUESTED, TaskState.ALLOCATED, TaskState.STARTED,
                   TaskState.REGISTERED, TaskState.STOPPED)


class TaskIndex:
    """The job's tasks grouped by where they stand, kept up to date as they change
    (``Task.__setattr__``): an event's "has every task started / registered / run?" is then a
    count, not a pass over every task. At 1,000 tasks those passes, one or more per event
    and again for the next deadline, made the AppMaster's work per event grow with the job
    (issue 28). A task enters its group's dict last when it changes, so the tasks still
    waiting for a container are in the order they were asked for."""

    FIELDS = frozenset({"state", "address", "verdict_due"})

    def __init__(self, cluster_roles: Iterable[str]) -> None:
        self.roles = tuple(cluster_roles)  # the TensorFlow cluster's; side tasks: verdicts only
        self.by_state: defaultdict[tuple[str, TaskState], dict[Key, Task]] = defaultdict(dict)
        self.unregistered: dict[Key, Task] = {}  # cluster tasks counted on, without an address
        self.verdict_awaited: dict[Key, Task] = {}  # tasks whose container's verdict is due

    def track(self, task: Task) -> None:
        object.__setattr__(task, "_index", self)
        self.add(task)

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
