"""A task's whole life in one place: the moves a task can make from state to state
(:data:`MOVES`, with why each is made), what a task carries while it is in each state (the
fields of :class:`Task`), and the job's task table, the one place a task changes state
(:meth:`TaskTable.move`), with the index that groups the tasks by where they stand and the
heartbeats that tell the job which tasks went silent.

A task's life (the states are appmaster/common/vocabulary.py's ``TaskState``)::

    REQUESTED ─► ALLOCATED ─► STARTED ─► REGISTERED ─► RUNNING ─► FINISHED
    (asked for)  (given:       (its agent  (its address (its script
      ▲           localizing)   holds a     exported)     runs)
      │                         port)
      ├─ REPLACING  its container failed and was counted: a new one asked for
      ├─ LOST       its agent went silent, or YARN lost its node: a new container asked for
      ├─ PREEMPTED  YARN took its container back: asked for again, uncounted
      └─ STALLED    its training step stood still past the stall timeout: counted, asked for

    On its way to running, a job that holds part of its containers while the rest do not
    come gives back what it holds and withdraws what it asked (queuewait.py):
      QUEUED   neither given nor asked for: asked for again (REQUESTED) after a backoff

    Any live task whose container ends otherwise than with success:
      KILLED   its script was killed by a signal: YARN's word on why (memory? preempted?) is
               awaited until ``due``, then it is judged like any failure
      FAILING  a plain TensorFlow worker failed: it is counted and replaced at ``due``, unless
               a ps or the chief failed meanwhile (then it fell with the cluster, uncounted)
      FAILED   past its role's failure threshold, or dropped (failure policy ignore)
    A new generation (a ps or chief failed, a PyTorch or JAX rank failed, flex) asks for every
    task again (REQUESTED); the job's end stops whatever still runs (STOPPED).

The rules that make these moves are in job.py (the way to running, success), jobfailures.py
(failures by YARN's verdict) and jobdeadlines.py (timeouts, silence); none keeps a task's
standing anywhere but here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from appmaster.common.clusterview import host_of
from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import WAITING, Role, TaskState
from appmaster.model.stall import StepTrack

Key = tuple[str, int]

S = TaskState
# The states whose task's end is being judged, each until its task's ``due``.
JUDGED = (S.KILLED, S.FAILING)
# Short of running: the states a task passes through on its way to its script (a task
# being judged is on its way to a new container).
NOT_RUNNING_YET = (*WAITING, S.QUEUED, S.ALLOCATED, S.STARTED, S.REGISTERED, *JUDGED,
                   S.STOPPED)
# What a task of a job on its way to running holds or asks of YARN: given back, to QUEUED,
# while part of the job cannot come.
GIVEN_BACK = (*WAITING, S.ALLOCATED, S.STARTED, S.REGISTERED)

_ASKED = frozenset(WAITING)  # asked for (again), each state saying why
_ENDS = frozenset({S.KILLED, S.FAILING, S.FINISHED, S.FAILED, S.STOPPED})
# Every move a task can make: state -> the states it may go to. Forward along the way to its
# script; back to a waiting state when its container is asked for again (replaced, lost,
# preempted, a new generation, sent back from a lost node, asked again), from anywhere but
# STOPPED; to an end, or to being judged, from any live state, since a container can end at
# any moment. A waiting task stays in its state when its request is made again.
MOVES: dict[TaskState, frozenset[TaskState]] = {
    **dict.fromkeys(WAITING, _ASKED | {S.QUEUED, S.ALLOCATED, S.STARTED} | _ENDS),
    # given back while part of the job could not come: asked for again after a backoff
    S.QUEUED: frozenset({S.REQUESTED}) | _ENDS,
    S.ALLOCATED: _ASKED | {S.QUEUED, S.STARTED} | _ENDS,
    # the evaluator runs without exporting; TensorBoard's export says it runs
    S.STARTED: _ASKED | {S.QUEUED, S.REGISTERED, S.RUNNING} | _ENDS,
    S.REGISTERED: _ASKED | {S.QUEUED, S.RUNNING} | _ENDS,
    # TensorBoard runs from its export: its agent's "running" follows
    S.RUNNING: _ASKED | {S.RUNNING} | _ENDS,
    # judged: a failure (KILLED -> FAILING for a worker), asked for again, or an end (its
    # container's end said it succeeded after all; the threshold; the job's end)
    S.KILLED: _ASKED | {S.FAILING, S.FINISHED, S.FAILED, S.STOPPED},
    S.FAILING: _ASKED | {S.FAILED, S.STOPPED},
    # a new generation starts every task again, a finished or dropped one too
    S.FINISHED: frozenset({S.REQUESTED}),
    S.FAILED: frozenset({S.REQUESTED}),
    S.STOPPED: frozenset(),
}
assert set(MOVES) == set(TaskState)
assert all(MOVES[state] >= {S.FAILED} for state in TaskState if state not in (
    S.FINISHED, S.FAILED, S.STOPPED))  # any live task can fail


@dataclass
class Task:
    """One task, the container currently running it, and what the job knows of it."""

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
    # its training steps in its current container (appmaster/model/stall.py), from its
    # processes (appmaster/agent/steps.py) or, without them, the chief's summaries
    steps: StepTrack | None = None
    steps_from_summaries: bool = False
    requested_at: float = 0.0  # when its container was last asked for
    # (bytes there, bytes in all) of its container's files on its node while YARN localizes
    # them, as the patched AppMaster heard from the NodeManager
    localized: tuple[int, int] | None = None
    # How its containers ended, by YARN's verdict (model/verdicts.py): failed, preempted...
    verdicts: Counter[str] = field(default_factory=Counter)
    # KILLED: where and how, as its agent's word told it; FAILING: the failure to count.
    failure: str = ""
    # Its open request was made again (lost by YARN, or its placement relaxed): the
    # container that meets it sets no new allocation deadline.
    asked_again: bool = False
    sent_back_from: set[str] = field(default_factory=set)  # hosts its replacement left
    # Its agent's heartbeat counter as last read, and when the master saw it change (only
    # the master's clock counts: a host's own clock never matters).
    beat: bytes | None = None
    heard_at: float | None = None
    # STOPPED: the state the job's end found it in, so it counts as far as it got
    stopped_in: TaskState | None = None
    # What the index groups tasks by: changed only by TaskTable, read through the properties.
    _state: TaskState = field(default=TaskState.REQUESTED, init=False)
    _address: str | None = field(default=None, init=False)  # where its TF server listens
    _due: float | None = field(default=None, init=False)  # KILLED, FAILING: judged then

    @property
    def state(self) -> TaskState:
        return self._state

    @property
    def address(self) -> str | None:
        return self._address

    @property
    def due(self) -> float | None:
        """When its end is judged, while it is KILLED or FAILING."""
        return self._due

    @property
    def key(self) -> Key:
        return (self.role, self.index)

    @property
    def name(self) -> str:
        return f"{self.role} {self.index}"

    @property
    def host(self) -> str:
        return host_of(self.node or "?")


class IllegalMove(ValueError):
    """A rule moved a task where the table of moves does not allow: a bug of the rules."""


class TaskIndex:
    """The job's tasks grouped by where they stand, kept up to date by :class:`TaskTable` as
    they move: an event's "has every task started / registered / run?" is then a count, not
    a pass over every task. At 1,000 tasks those passes, one or more per event and again for
    the next deadline, made the AppMaster's work per event grow with the job. A task enters
    its group's dict last when it changes, so the tasks still waiting for a container are in
    the order they were asked for."""

    def __init__(self, cluster_roles: Iterable[str]) -> None:
        self.roles = tuple(cluster_roles)  # the training cluster's; side tasks: judged only
        self.by_state: defaultdict[tuple[str, TaskState], dict[Key, Task]] = defaultdict(dict)
        self.unregistered: dict[Key, Task] = {}  # cluster tasks counted on, without an address
        self.judged: dict[Key, Task] = {}  # KILLED or FAILING, of any role

    def add(self, task: Task) -> None:
        if task.state in JUDGED:
            self.judged[task.key] = task
        if task.role not in self.roles:
            return
        self.by_state[(task.role, task.state)][task.key] = task
        if task.address is None and task.state != TaskState.FAILED:
            self.unregistered[task.key] = task

    def discard(self, task: Task) -> None:
        self.judged.pop(task.key, None)
        self.unregistered.pop(task.key, None)
        if task.role in self.roles:
            self.by_state[(task.role, task.state)].pop(task.key, None)

    def count(self, *states: TaskState, roles: Iterable[str] | None = None) -> int:
        return sum(len(self.by_state[(role, state)])
                   for role in (self.roles if roles is None else roles) for state in states)

    def live(self, roles: Iterable[str] | None = None) -> int:
        """How many of these roles' tasks the job still counts on (not dropped as failed)."""
        return self.count(*(s for s in TaskState if s != TaskState.FAILED), roles=roles)

    def in_state(self, *states: TaskState) -> list[Task]:
        return [task for role in self.roles for state in states
                for task in self.by_state[(role, state)].values()]

    def waiting(self) -> list[Task]:
        """The cluster's tasks whose container YARN has not given yet."""
        return self.in_state(*WAITING)

    def oldest_request(self) -> float | None:
        """When the longest-waiting container request was made: each group's first."""
        firsts = [next(iter(group.values())).requested_at for role in self.roles
                  for state in WAITING if (group := self.by_state[(role, state)])]
        return min(firsts) if firsts else None

    def in_judgement(self, state: TaskState) -> list[Task]:
        """Tasks of every role in ``state`` (KILLED or FAILING)."""
        return [task for task in self.judged.values() if task.state == state]


class _Keep:
    """A field a move leaves as it is."""


KEEP = _Keep()


class TaskTable:
    """Every task of the job (the training cluster's, TensorBoard and the evaluator beside
    it), the container each runs in, which agents must be heard, and the one place their
    states change."""

    def __init__(self, plan: JobPlan, am_attempt: int = 1) -> None:
        # A later AppMaster attempt starts every task again: count the earlier starts.
        self.tasks = {(name, index): Task(Role(name), index, attempt=am_attempt - 1)
                      for name, index in plan.task_keys()}
        # Beside the training cluster: not in its spec; their ends never end training.
        self.tensorboard = Task(Role.TENSORBOARD, 0) if plan.tensorboard else None
        self.evaluator = (Task(Role.EVALUATOR, 0, attempt=am_attempt - 1)
                          if plan.evaluator else None)
        self.by_container: dict[str, Task] = {}  # the containers the job waits on
        self.heard: dict[str, Task] = {}  # the containers whose agents must keep beating
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
             due: float | None = None, failure: str | _Keep = KEEP) -> None:
        """``task`` goes to ``state`` (its address with it, if given): :class:`IllegalMove`
        if :data:`MOVES` does not allow it. A judged state (KILLED, FAILING) needs the time
        it is judged at, ``due``, and keeps ``failure`` to judge; any other state has
        neither."""
        if state not in MOVES[task.state]:
            raise IllegalMove(f"{task.name} cannot go from {task.state} to {state}")
        if (due is not None) != (state in JUDGED):
            raise IllegalMove(f"{task.name} to {state}: a due time is for {S.KILLED} and "
                              f"{S.FAILING} alone, and they need one")
        self.index.discard(task)
        if state == S.STOPPED:
            task.stopped_in = task.state
        task._state, task._due = state, due
        if not isinstance(address, _Keep):
            task._address = address
        if not isinstance(failure, _Keep):
            task.failure = failure
        elif state not in JUDGED:
            task.failure = ""
        self.index.add(task)

    def waiting_again(self, task: Task) -> TaskState:
        """The state a task asked for again waits in: its own, if it waits already (its
        request made again keeps its reason), else REQUESTED."""
        return task.state if task.state.waiting else S.REQUESTED

    def still_asked(self, task: Task, now: float) -> None:
        """YARN still holds the task's request (the RM said so): it counts as asked at
        ``now``, last of its group."""
        self.index.discard(task)
        task.requested_at = now
        self.index.add(task)

    def live_tasks(self) -> list[Task]:
        """Tasks the job still counts on (an ignored failed worker is dropped)."""
        return [t for t in self.tasks.values() if t.state != TaskState.FAILED]

    # ------------------------------------------------------------ heartbeats

    def watch(self, task: Task, now: float) -> None:
        """From now on, ``task``'s agent must be heard within the heartbeat timeout."""
        task.beat, task.heard_at = None, now
        self.heard[task.container] = task

    def forget(self, container: str) -> None:
        """``container``'s agent need be heard no more (it ended, or the job let it go)."""
        self.heard.pop(container, None)

    def hear(self, beats: dict[str, bytes], now: float) -> None:
        """``beats``: container -> its agent's current counter, as read from the registry.
        A counter that changed since the last read is a beat heard now."""
        for container, task in self.heard.items():
            value = beats.get(container)
            if value is not None and value != task.beat:
                task.beat, task.heard_at = value, now

    def silent(self, now: float, timeout_s: float) -> list[tuple[str, Task, float]]:
        """(container, its task, seconds silent) of every watched agent past the timeout."""
        return [(container, task, now - task.heard_at)
                for container, task in self.heard.items()
                if task.heard_at is not None and now - task.heard_at > timeout_s]

    def silent_for(self, task: Task, now: float) -> float | None:
        """Since ``task``'s agent was last heard; None if it is not watched."""
        if self.heard.get(task.container) is not task or task.heard_at is None:
            return None
        return now - task.heard_at
