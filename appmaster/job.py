"""The job's decisions, apart from any I/O: events in, actions out.

The master (appmaster/master.py) turns what it hears from the registry and from YARN into
calls of :class:`Job`'s ``on_*`` methods and performs the actions they return. Nothing here
talks to YARN, the registry or a clock: each event carries the time it was heard, so every
rule of the failure table can be driven by unit tests (tests/test_job.py).

The rules: a worker is stateless, so a failed worker is replaced by a new container for the
same task index. A ps holds state and the chief drives training, so when one of them fails
the whole TensorFlow cluster restarts as a new generation (old containers killed first,
fresh rendezvous) and the script resumes from the latest checkpoint. Each role's failures
count against its ``yarn.container.failure.threshold``; a task whose port was taken starts
again uncounted; a task silent past the heartbeat timeout counts as failed (its host died).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from appmaster import registry
from appmaster.cluster_spec import ClusterSpec
from appmaster.history import History, Mark
from appmaster.jobplan import JobPlan
from appmaster.liveness import Liveness
from appmaster.phases import PhaseClock
from appmaster.verdicts import ContainerEnd, Verdict, killed_by_signal
from appmaster.vocabulary import JobState, Role, TaskState

log = logging.getLogger("tfyarn.master")


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
    mirror: dict | None = None  # its local work dir against HDFS (appmaster/mirror.py)
    gpus: dict | None = None  # the GPUs its agent found and holds (appmaster/gpus.py)
    progress: dict | None = None  # what its event files say (appmaster/progress.py)
    requested_at: float = 0.0  # when its container was last asked for
    # How its containers ended, by YARN's verdict (appmaster/verdicts.py): failed, preempted...
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


# ------------------------------------------------------------------ actions


@dataclass(frozen=True)
class Request:
    """Ask YARN for a container for ``task``, then tell the job with :meth:`Job.assigned`."""

    task: Task
    generation: int


@dataclass(frozen=True)
class Kill:
    """Stop a container whose end the job no longer waits for."""

    container: str


@dataclass(frozen=True)
class Fence:
    """Take a lost task's registry entry away: if its host comes back, its agent finds it
    gone and ends its script, so an old task never rejoins the job."""

    container: str


@dataclass(frozen=True)
class PublishSpec:
    generation: int
    spec: ClusterSpec


@dataclass(frozen=True)
class ShowTensorBoard:
    address: str


@dataclass(frozen=True)
class TrainingDone:
    """Tell the evaluator that training ended: the last checkpoint is on HDFS."""


@dataclass(frozen=True)
class EndJob:
    status: JobState  # SUCCEEDED or FAILED
    diagnostics: str


Action = Request | Kill | Fence | PublishSpec | ShowTensorBoard | TrainingDone | EndJob


# A script killed by a signal (YARN's kills start with SIGTERM) has its container's end, and
# YARN's verdict on it, within skein's next heartbeats to the RM: waited for this long.
VERDICT_WAIT_S = 10.0
# A worker often fails *because* a ps or the chief just died (its RPCs break first), and its
# agent's word can reach the master before theirs: a worker's failure waits this long for
# such a cause before it is counted and the worker replaced.
FAILURE_SETTLE_S = 5.0
# YARN can lose a container request: skein adds asks one at a time, the ResourceManager may
# give more containers than were asked at that moment, skein releases the extras, and the
# asks they stood for are gone (seen on the local cluster: 3 of 64 tasks never given a
# container though the nodes had room). A task still waiting this long is asked for again
# (its old request withdrawn); the allocation timeout still counts from the first ask.
REASK_S = 30.0


# ------------------------------------------------------------------ the job


class Job:
    """Every task of the job, its generation and failures, and the rules that move them."""

    def __init__(self, plan: JobPlan, now: float, am_attempt: int = 1) -> None:
        self.plan = plan
        self.am_attempt = am_attempt
        self.generation = 0
        # A later AppMaster attempt starts every task again: count the earlier starts.
        self.tasks = {key: Task(*key, attempt=am_attempt - 1) for key in plan.task_keys()}
        # Beside the TensorFlow cluster: not in its spec; their ends never end training.
        self.tensorboard = Task(Role.TENSORBOARD, 0) if plan.tensorboard else None
        self.evaluator = (Task(Role.EVALUATOR, 0, attempt=am_attempt - 1)
                          if plan.evaluator else None)
        self.evaluation_deadline: float | None = None  # once training is done
        self.by_container: dict[str, Task] = {}
        self.failures: Counter[str] = Counter()
        self.restarts: list[str] = []  # one line per restart, for diagnostics and status
        self.history = History()  # curves, faults and containers over time, bounded
        self.clock = PhaseClock()
        self.started_at = now
        self.allocation_deadline = self.registration_deadline = 0.0
        self.state = JobState.STARTING
        self.spec: ClusterSpec | None = None
        # Agents' heartbeats: a silent task is lost long before YARN notices its node.
        self.liveness = Liveness(plan.heartbeat_timeout_s)
        self.next_liveness_check = 0.0
        self.lost_nodes: dict[str, float] = {}  # host -> when a task there was lost
        # Workers that failed, not yet judged (see FAILURE_SETTLE_S): key -> (reason, when)
        self.settling: dict[tuple[str, int], tuple[str, float]] = {}
        self.asked_again: set[tuple[str, int]] = set()  # their next container: no new deadline
        self._actions: list[Action] = []
        self.index = TaskIndex(role.name for role in plan.roles)
        for task in (*self.tasks.values(), self.tensorboard, self.evaluator):
            if task is not None:
                self.index.track(task)

    # ------------------------------------------------------------ events

    def start(self, now: float) -> list[Action]:
        """The AppMaster is up: ask for every task's container."""
        return self._run(self._request_all, now)

    def assigned(self, task: Task, container: str, now: float) -> registry.TaskAssignment:
        """YARN took the request of a :class:`Request` as ``container``: what it runs."""
        if task.key in self.asked_again:
            self.asked_again.discard(task.key)
        else:
            self.allocation_deadline = now + self.plan.allocation_timeout_s
            self.registration_deadline = now + self.plan.registration_timeout_s
        task.requested_at = now
        task.previous_address = task.address or task.previous_address
        task.container, task.state, task.address = container, TaskState.REQUESTED, None
        task.gpus = None  # its new agent says which it holds
        task.verdict_due, task.signalled_failure = None, ""  # a verdict on its old container
        self.by_container[container] = task
        self.history.asked(container, task.name, self.generation, now)
        return registry.TaskAssignment(task.role, task.index, self.generation, task.attempt,
                                       task.previous_address)

    def on_started(self, container: str, now: float, node: str | None = None,
                   yarn_container_id: str | None = None,
                   user: str | None = None) -> list[Action]:
        """The task's agent runs (and says where)."""
        return self._run(self._started, now, container, node, yarn_container_id, user)

    def on_export(self, export: registry.Export, now: float) -> list[Action]:
        """The task's agent exported the address its TensorFlow server will listen on."""
        return self._run(self._exported, now, export)

    def on_running(self, container: str, now: float) -> list[Action]:
        """The task's script started."""
        return self._run(self._running, now, container)

    def on_exited(self, container: str, exit_code: int | None, now: float,
                  failure: str = "") -> list[Action]:
        """The task's agent says its script ended; ``failure``: where and how, if not 0."""
        return self._run(self._exited, now, container, exit_code, failure)

    def on_container_end(self, container: str, succeeded: bool, now: float,
                         failure: str = "", end: ContainerEnd | None = None) -> list[Action]:
        """YARN says the container ended (the agent may not have said so: it was killed);
        ``end``: YARN's verdict, when it did not succeed (a plain failure if not given)."""
        return self._run(self._container_ended, now, container, succeeded, failure,
                         end or ContainerEnd(Verdict.FAILED))

    def on_allocated(self, containers: dict[str, str | None]) -> None:
        """YARN gave these containers (container -> node), whose agents have not started:
        their files are still being localized, which no allocation timeout should end."""
        for container, node in containers.items():
            task = self.by_container.get(container)
            if task is not None and task.state == TaskState.REQUESTED:
                task.state, task.node = TaskState.ALLOCATED, node

    def waiting_for_yarn(self, now: float) -> bool:
        """Whether the allocation deadline passed with containers YARN may not have given:
        the master then asks YARN which it did (``on_allocated``) before ``on_tick``."""
        waiting = self._not_given()
        return bool(waiting) and (now >= self.allocation_deadline or any(
            now >= t.requested_at + REASK_S for t in waiting))

    def on_heartbeats(self, beats: dict[str, bytes], now: float) -> list[Action]:
        """Every agent's heartbeat counter, read at once: silent tasks are lost."""
        return self._run(self._heard, now, beats)

    def on_tick(self, now: float) -> list[Action]:
        """A deadline passed (see :meth:`next_deadline`)."""
        return self._run(self._check_deadlines, now)

    def on_status(self, container: str, gpus: dict | None = None, mirror: dict | None = None,
                  progress: dict | None = None, now: float | None = None) -> None:
        """What an agent found (its GPUs), how its mirror stands, how far its training got
        (kept over time for the chief and the evaluator when ``now`` is given): shown, not
        decided on."""
        task = self.by_container.get(container)
        if task is None:
            return
        task.gpus = task.gpus if gpus is None else gpus
        task.mirror = task.mirror if mirror is None else mirror
        task.progress = task.progress if progress is None else progress
        if progress is not None and now is not None:
            if task.key == self.plan.chief:
                self.history.on_training(now, progress)
            elif task is self.evaluator:
                self.history.on_evaluation(now, progress)

    def ended(self, status: JobState, now: float | None = None) -> None:
        """The application ends: tasks still running were ended by tfyarn, not failed."""
        self.state = status
        if now is not None:  # their containers end with the application
            self.history.end_open(f"stopped: the job {str(status).lower()}", now)
        for task in (*self.tasks.values(), *([self.evaluator] if self.evaluator else [])):
            if not task.state.ended:
                task.state = TaskState.FINISHED if task.exit_code == 0 else TaskState.STOPPED

    def next_deadline(self) -> float | None:
        """Asked after every event: it reads the index, never every task."""
        deadlines = []
        oldest = self.index.oldest_request()
        if oldest is not None:
            deadlines.append(self.allocation_deadline)
            deadlines.append(oldest + REASK_S)
        if self.index.unregistered:
            deadlines.append(self.registration_deadline)
        if self.plan.deadline_s:
            deadlines.append(self.started_at + self.plan.deadline_s)
        if self.liveness.count():
            deadlines.append(self.next_liveness_check)
        if self.evaluation_deadline is not None:
            deadlines.append(self.evaluation_deadline)
        verdicts = self._cluster_verdict_due()
        deadlines += [max(due, verdicts or due) for _, due in self.settling.values()]
        deadlines += [t.verdict_due for t in self._verdicts_awaited()]
        return min(deadlines) if deadlines else None

    def heartbeats_due(self, now: float) -> bool:
        """Whether the master should read the agents' heartbeats now."""
        return bool(self.liveness.count()) and now >= self.next_liveness_check

    def task_of(self, container: str) -> Task | None:
        return self.by_container.get(container)

    def _not_given(self) -> list[Task]:
        """Tasks whose container YARN has not given yet, as far as the job knows."""
        return self.index.in_state(TaskState.REQUESTED)

    def _verdicts_awaited(self) -> list[Task]:
        """Tasks whose script was killed by a signal, their container's end not heard yet."""
        return [t for t in self.index.verdict_awaited.values()
                if self.by_container.get(t.container) is t]

    def live_tasks(self) -> list[Task]:
        """Tasks the job still counts on (an ignored failed worker is dropped)."""
        return [t for t in self.tasks.values() if t.state != TaskState.FAILED]

    # ------------------------------------------------------------ the rules

    def _run(self, rule: Callable[..., EndJob | None], now: float, *args) -> list[Action]:
        """A rule's actions; the job's end, if the rule decided it, comes last. A rule that
        decides the end returns it (and stops there); so does every rule that calls it."""
        self._actions = []
        end = rule(now, *args)
        if end is not None:
            self.state = end.status
            self._actions.append(end)
        return self._actions

    def _request_all(self, now: float) -> None:
        """Every task's container, role by role in priority order (YARN keeps FIFO)."""
        self.clock.restart(now)
        for role in self.plan.roles:
            for index in range(role.instances):
                self._request(self.tasks[(role.name, index)], now)
        for side in (self.tensorboard, self.evaluator):  # once: a restart leaves them be
            if side and side.container not in self.by_container and not side.state.ended:
                self._request(side, now)
        log.info("generation %d: requested %d containers (%s)", self.generation, len(self.tasks),
                 ", ".join(f"{role.instances} {role.name}" for role in self.plan.roles))

    def _request(self, task: Task, now: float) -> None:
        self._actions.append(Request(task, self.generation))

    def _started(self, now: float, container: str, node: str | None,
                 yarn_container_id: str | None, user: str | None) -> None:
        task = self.by_container.get(container)
        if task is None or task.state not in (TaskState.REQUESTED, TaskState.ALLOCATED):
            return
        if self._on_a_lost_node(task, container, node, now):
            return
        task.state = TaskState.STARTED
        task.yarn_container_id, task.node, task.user = yarn_container_id, node, user
        self.history.started(container, node, now)
        if task is not self.tensorboard:
            self.liveness.watch(container, now)
        if not self.index.count(TaskState.REQUESTED, TaskState.ALLOCATED):
            self.clock.mark_once("all started", now)

    def _on_a_lost_node(self, task: Task, container: str, node: str | None,
                        now: float) -> bool:
        """A replacement YARN placed on a node where a task was just lost goes back: that
        node may be half alive (YARN has not noticed it yet). It is asked for again."""
        host = (node or "").rsplit(":", 1)[0]
        lost_at = self.lost_nodes.get(host)
        if lost_at is None or now - lost_at > 3 * self.plan.heartbeat_timeout_s:
            return False
        log.warning("%s landed on %s, where a task was lost %.0f s ago: asking for another "
                    "container", task.name, host, now - lost_at)
        del self.by_container[container]
        self.history.ended(container, "sent back", now)
        self._actions.append(Kill(container))
        self._request(task, now)
        return True

    def _exported(self, now: float, export: registry.Export) -> None:
        task = self.by_container.get(export.container)
        if task is None:
            return  # a late word from a container the job no longer counts on
        if task is self.tensorboard:
            task.address, task.state = export.address, TaskState.RUNNING
            self.history.running(export.container, now)
            self._actions.append(ShowTensorBoard(export.address))
            return
        if export.generation != self.generation or task is self.evaluator:
            return
        moved = self.spec is not None and export.address != task.previous_address
        task.address, task.state = export.address, TaskState.REGISTERED
        log.info("%s registered at %s (container %s)", task.name, export.address, task.container)
        if moved:
            # Its old port was taken, or YARN put it on another node: the running tasks still
            # hold the old address (a ps keeps calling it), and TF scripts read theirs once.
            # Only a fresh generation gets everyone the new one.
            self._note(now, Mark.RESTART, f"{task.name} came back at {export.address}: cluster "
                       f"restarted as generation {self.generation + 1} from the last checkpoint")
            self._restart_generation(task, now)
            return
        if not self.index.unregistered:
            self.clock.mark_once("all registered", now)
            self._publish_spec(now)

    def _publish_spec(self, now: float) -> None:
        """(Re)publish the generation's spec; a replaced worker's new address goes in."""
        exports: dict[str, dict[int, str]] = {}
        for task in self.live_tasks():
            exports.setdefault(task.role, {})[task.index] = task.address
        self.spec = ClusterSpec.from_exports(exports)
        self._actions.append(PublishSpec(self.generation, self.spec))
        self.clock.mark_once("spec published", now)

    def _running(self, now: float, container: str) -> None:
        task = self.by_container.get(container)
        if task is None:
            return
        task.state = TaskState.RUNNING
        self.history.running(container, now)
        if task.failed_at is not None:
            log.info("%s training again %.2f s after its failure was heard (attempt %d)",
                     task.name, now - task.failed_at, task.attempt)
            task.failed_at = None
        if self.state in (JobState.STARTING, JobState.RESTARTING) and not self.index.count(
                *NOT_RUNNING_YET):
            self.clock.mark_once("all running", now)
            self.state = JobState.RUNNING

    def _exited(self, now: float, container: str, exit_code: int | None,
                failure: str) -> EndJob | None:
        task = self.by_container.get(container)
        if task is None:
            return
        task.exit_code = exit_code
        if task is self.tensorboard or task.state.ended:
            return
        if exit_code != 0 and killed_by_signal(exit_code) and task.verdict_due is None:
            # Killed from outside: by YARN (memory, preemption) or by the kernel. Its
            # container's end says which; the agent, ending, beats no more meanwhile.
            self.liveness.forget(container)
            task.verdict_due, task.signalled_failure = now + VERDICT_WAIT_S, failure
            return
        # The agent's word comes at once, YARN's container end only with skein's next
        # heartbeat to the RM (up to 5 s later): act now; that end is then the job's.
        self._drop(container, now, "finished" if exit_code == 0 else "failed")
        if exit_code == 0:
            return self._succeeded(task, now)
        return self._failed(task, self._failure_text(task, failure), now)

    def _container_ended(self, now: float, container: str, succeeded: bool,
                         failure: str, end: ContainerEnd) -> EndJob | None:
        task = self._drop(container, now, "finished" if succeeded else str(end.verdict))
        if task is None:
            return  # one the job stopped itself
        if task is self.tensorboard:
            task.state = TaskState.FINISHED if succeeded else TaskState.FAILED
            log.warning("TensorBoard ended; the job goes on without it")
            return
        heard_at = now
        if task.verdict_due is not None:  # its script was killed: this end says by whom
            failure = failure or task.signalled_failure
            heard_at = task.verdict_due - VERDICT_WAIT_S  # its agent's word
            task.verdict_due, task.signalled_failure = None, ""
        if succeeded:
            return self._succeeded(task, now)
        if end.verdict in (Verdict.PREEMPTED, Verdict.YARN_KILLED):
            self._taken_back(task, end, now)
            return None
        if end.verdict == Verdict.MEMORY:
            return self._count_failure(task, self._memory_text(task, end, failure), now,
                                       "killed for memory", Verdict.MEMORY)
        if end.verdict == Verdict.LOST:
            self.lost_nodes[task.host] = now
            return self._count_failure(task, f"{task.name} (attempt {task.attempt}): its node "
                                       f"was lost or its disks failed {failure}", now,
                                       f"lost on {task.host}", Verdict.LOST)
        return self._failed(task, self._failure_text(task, failure), now, heard_at=heard_at)

    def _taken_back(self, task: Task, end: ContainerEnd, now: float) -> None:
        """YARN took the container back (preempted it for another queue, or its RM killed
        it): not the task's failure. Asked for again by the usual rules, uncounted."""
        task.verdicts[end.verdict] += 1
        what = "preempted by YARN" if end.verdict == Verdict.PREEMPTED else "killed by YARN"
        log.warning("%s (attempt %d) %s: %s", task.name, task.attempt, what, end.message)
        kind = Mark.PREEMPTED  # or killed by the RM: taken back either way
        if task is self.evaluator:
            self._note(now, kind, f"{task.name} {what}: asked for again")
            task.attempt += 1
            task.exit_code = None
            self._request(task, now)
            return
        self._note(now, kind, self._restart_line(task, what))
        self._restart(task, now)

    def _judge_killed_scripts(self, now: float) -> EndJob | None:
        """Scripts killed by a signal whose container's end never came: their own failure."""
        for task in self._verdicts_awaited():
            if now >= task.verdict_due:
                failure = task.signalled_failure
                task.verdict_due, task.signalled_failure = None, ""
                self._drop(task.container, now, "failed")
                end = self._failed(task, self._failure_text(task, failure), now)
                if end is not None:
                    return end
        return None

    def _succeeded(self, task: Task, now: float) -> EndJob | None:
        task.state = TaskState.FINISHED
        log.info("%s finished (container %s)", task.name, task.container)
        if task is self.evaluator:
            if self.state == JobState.EVALUATING:
                return EndJob(JobState.SUCCEEDED, self._success_message(
                    "The evaluator evaluated the last checkpoint."))
            return None  # it ended by itself; training goes on
        if self.plan.success_policy == "chief":
            done = task.key == self.plan.chief  # worker 0 without chiefworker
        else:  # every task but the ps finished (or was dropped)
            done = not self.index.count(*NOT_RUNNING_YET, TaskState.RUNNING, roles=[
                role for role in self.index.roles if role != Role.PS])
        if not done:
            return None
        evaluator = self.evaluator
        if evaluator is None or evaluator.state.ended or evaluator.container not in (
                self.by_container):
            return EndJob(JobState.SUCCEEDED, self._success_message())
        self._evaluate_last(now)
        return None

    def _evaluate_last(self, now: float) -> None:
        """Training is done: the TensorFlow tasks go, the evaluator gets the last word."""
        self.state = JobState.EVALUATING
        self.evaluation_deadline = now + self.plan.evaluation_timeout_s
        for task in self.live_tasks():
            if task.container in self.by_container:
                self._drop(task.container, now, "stopped: training done")
                self._actions.append(Kill(task.container))
        self._actions.append(TrainingDone())
        log.info("training done: the evaluator evaluates the last checkpoint (up to %.0f s)",
                 self.plan.evaluation_timeout_s)

    def _heard(self, now: float, beats: dict[str, bytes]) -> EndJob | None:
        """A task silent past the timeout is lost."""
        self.next_liveness_check = now + self.plan.heartbeat_interval_s
        self.liveness.update(beats, now)
        for container, silent_s in self.liveness.silent(now):
            task = self.by_container.get(container)
            self.liveness.forget(container)
            if task is not None and not task.state.ended:
                end = self._lost(task, silent_s, now)
                if end is not None:
                    return end
        return None

    def _lost(self, task: Task, silent_s: float, now: float) -> EndJob | None:
        """Like a failure, counted against the role's threshold, and the old container is
        fenced off: if its host comes back, its agent finds its task gone and ends itself."""
        container = task.container
        self._drop(container, now, "lost")
        self.lost_nodes[task.host] = now
        self._actions += [Fence(container), Kill(container)]  # YARN frees it once it can
        task.exit_code = None
        reason = (f"{task.name} (attempt {task.attempt}) lost: its agent on {task.node} was "
                  f"silent for {silent_s:.0f} s (site.global.task.heartbeat.timeout "
                  f"{self.plan.heartbeat_timeout_s:.0f} s): its host died or was cut off.")
        return self._count_failure(task, reason, now, f"lost on {task.host}", Verdict.LOST)

    def _failed(self, task: Task, reason: str, now: float, how: str = "failed",
                heard_at: float | None = None) -> EndJob | None:
        """``heard_at``: when the failure was first heard (the settling counts from then)."""
        if task is self.evaluator:
            return self._count_failure(task, reason, now)
        if task.exit_code == registry.PORT_TAKEN_EXIT:
            # Not the task's fault: it starts again on a new port, uncounted.
            self._note(now, Mark.REPLACED, f"{task.name} found its port taken: restarted on a "
                       "new one")
            self._restart(task, now)
            return None
        if how == "failed" and self._replaceable(task):
            due = max(now, (heard_at or now) + FAILURE_SETTLE_S)
            self.settling[task.key] = (reason, due)
            log.info("%s failed; judged in %.0f s unless a ps or the chief failed first",
                     task.name, due - now)
            return None
        return self._count_failure(task, reason, now, how)

    def _count_failure(self, task: Task, reason: str, now: float, how: str = "failed",
                       verdict: Verdict = Verdict.FAILED) -> EndJob | None:
        if task is self.evaluator:
            task.verdicts[verdict] += 1
            return self._evaluator_failed(task, reason, now)
        role = self.plan.role(task.role)
        task.verdicts[verdict] += 1
        self.failures[task.role] += 1
        failures = self.failures[task.role]
        log.warning("failure %d of %s: %s", failures, task.role, reason)
        if role.failure_policy == "ignore":
            task.state = TaskState.FAILED
            self._note(now, Mark.DROPPED, f"{task.name} dropped (failure policy ignore)")
            if not self.index.live(roles=[Role.WORKER]):
                return EndJob(JobState.FAILED,
                              f"Every worker failed and was dropped. Last: {reason}")
            return None
        if not role.may_restart(failures):
            task.state = TaskState.FAILED  # the failure that ends the job
            return EndJob(JobState.FAILED, self._over_threshold_message(task, failures, reason))
        self._note(now, self._mark_kind(task, verdict), self._restart_line(task, how))
        self._restart(task, now)
        return None

    def _restart_line(self, task: Task, how: str) -> str:
        if self._replaceable(task):
            return (f"{task.name} replaced (attempt {task.attempt + 1})" if how == "failed" else
                    f"{task.name} {how}: replaced (attempt {task.attempt + 1})")
        return (f"{task.name} {how}: cluster restarted as generation {self.generation + 1} "
                "from the last checkpoint")

    def _evaluator_failed(self, task: Task, reason: str, now: float) -> EndJob | None:
        """Beside training: its failure fails the job only under the fatal policy."""
        role = self.plan.role(task.role)
        self.failures[task.role] += 1
        failures = self.failures[task.role]
        log.warning("failure %d of the evaluator: %s", failures, reason)
        if role.failure_policy == "fatal":
            task.state = TaskState.FAILED
            return EndJob(JobState.FAILED, self._over_threshold_message(task, failures, reason))
        if self.state == JobState.EVALUATING:
            task.state = TaskState.FAILED
            return EndJob(JobState.SUCCEEDED, self._success_message(
                f"The evaluator failed on the last checkpoint: {reason}"))
        if role.may_restart(failures):
            self._note(now, Mark.REPLACED, f"{task.name} replaced (attempt {task.attempt + 1})")
            task.attempt += 1
            task.exit_code = None
            self._request(task, now)
            return None
        task.state = TaskState.FAILED
        self._note(now, Mark.DROPPED, f"{task.name} dropped after {failures} failure(s); "
                   "training goes on without it")
        return None

    def _restart(self, task: Task, now: float) -> None:
        """A stateless worker alone; a ps or the chief with the whole cluster."""
        task.attempt += 1
        task.failed_at = now
        task.exit_code = None
        if self._replaceable(task):
            log.info("replacing %s with a new container (attempt %d)", task.name, task.attempt)
            self._request(task, now)
        else:
            self._restart_generation(task, now)

    def _replaceable(self, task: Task) -> bool:
        """A plain worker: not the chief (worker 0 in a job without a chiefworker)."""
        return task.role == Role.WORKER and task.key != self.plan.chief

    def _restart_generation(self, failed: Task, now: float) -> None:
        """End every old container first, then a fresh rendezvous for every task."""
        self.generation += 1
        self.spec, self.state = None, JobState.RESTARTING
        for key in self.settling:  # they fell with the cluster: not their own failure
            log.info("%s failed with it: not counted", self.tasks[key].name)
        self.settling.clear()
        for task in self.tasks.values():
            if task.container in self.by_container:  # its end is the job's doing, not a failure
                self._drop(task.container, now, f"stopped: generation {self.generation} began")
                self._actions.append(Kill(task.container))
            if task is not failed:
                task.attempt += 1
            task.state, task.failed_at = TaskState.REQUESTED, failed.failed_at
        log.info("restarting every task as generation %d after %s failed", self.generation,
                 failed.name)
        self._request_all(now)

    def _ask_again(self, task: Task, now: float) -> None:
        """Withdraw a request YARN has not met (it may have lost it) and make it anew."""
        log.info("%s: no container after %.0f s; asking YARN again", task.name,
                 now - task.requested_at)
        self._drop(task.container, now, "withdrawn: asked again")
        self._actions.append(Kill(task.container))  # skein withdraws a pending request
        self.asked_again.add(task.key)
        self._request(task, now)

    def _cluster_verdict_due(self) -> float | None:
        """When YARN's verdict on a killed ps or chief is due at the latest, if one is
        awaited: a worker's failure may be its doing, so it is judged after."""
        dues = [t.verdict_due for t in self._verdicts_awaited() if not self._replaceable(t)]
        return max(dues) if dues else None

    def _judge_settled_failures(self, now: float) -> EndJob | None:
        """Workers whose failure had no cause elsewhere: now counted, and replaced."""
        if self._cluster_verdict_due() is not None:
            return None  # a ps or the chief was killed: its verdict may restart everyone
        for key, (reason, due) in list(self.settling.items()):
            if now >= due:
                del self.settling[key]
                if self.state != JobState.EVALUATING:  # training is over: nothing to replace
                    end = self._count_failure(self.tasks[key], reason, now)
                    if end is not None:
                        return end
        return None

    def _drop(self, container: str, now: float, outcome: str) -> Task | None:
        """The job stops waiting on ``container``: its later words are ignored. ``outcome``:
        how it ended, for the timeline."""
        self.liveness.forget(container)
        self.history.ended(container, outcome, now)
        return self.by_container.pop(container, None)

    def _note(self, now: float, kind: str, line: str) -> None:
        """A restart: a line for the diagnostics and status, a mark on the time axis."""
        self.restarts.append(line)
        self.history.mark(now, kind, line)

    def _mark_kind(self, task: Task, verdict: Verdict) -> str:
        if verdict == Verdict.MEMORY:
            return Mark.MEMORY
        if verdict == Verdict.LOST:
            return Mark.LOST
        return Mark.REPLACED if self._replaceable(task) else Mark.RESTART

    def _check_deadlines(self, now: float) -> EndJob | None:
        end = self._judge_killed_scripts(now) or self._judge_settled_failures(now)
        if end is not None:
            return end
        if self.plan.deadline_s and now >= self.started_at + self.plan.deadline_s:
            return EndJob(JobState.FAILED, f"The job ran past its deadline of "
                          f"{self.plan.deadline_s:.0f} s (site.global.job.deadline) and was "
                          "stopped.")
        if self.state == JobState.EVALUATING:
            if self.evaluation_deadline is not None and now >= self.evaluation_deadline:
                return EndJob(JobState.SUCCEEDED, self._success_message(
                    f"The evaluator did not finish the last checkpoint within "
                    f"{self.plan.evaluation_timeout_s:.0f} s (site.global.evaluation.timeout) "
                    "and was stopped."))
            return None  # the TensorFlow tasks are gone: nothing else to wait for
        waiting = self._not_given()
        if waiting and now < self.allocation_deadline:
            for task in waiting:
                if now >= task.requested_at + REASK_S:
                    self._ask_again(task, now)
        if waiting and now >= self.allocation_deadline:
            lines = [f"YARN did not allocate {len(waiting)} container(s) within "
                     f"{self.plan.allocation_timeout_s:.0f} s (site.global.allocation.timeout):"]
            lines += [f"  {t.name}: {self._describe_request(t)}" for t in waiting]
            return EndJob(JobState.FAILED, "\n".join(lines))
        missing = list(self.index.unregistered.values())
        if missing and now >= self.registration_deadline:
            lines = [f"Tasks did not register within {self.plan.registration_timeout_s:.0f} s "
                     f"(site.global.registration.timeout): {len(missing)} of "
                     f"{self.index.live()} missing."]
            lines += [f"  {t.name}: {self._describe_unregistered(t)}" for t in missing]
            return EndJob(JobState.FAILED, "\n".join(lines))
        return None

    # ------------------------------------------------------------ messages

    def _describe_request(self, task: Task) -> str:
        role = self.plan.role(task.role)
        gpus = f", {role.gpus} yarn.io/gpu" if role.gpus else ""
        partition = f"node label {role.label!r}" if role.label else "the default partition"
        return (f"asked for {role.memory_mb} MB, {role.vcores} vcore(s){gpus} in {partition}; "
                "no node there has that much free for this queue (check `yarn node -list "
                "-showDetails` and the queue's capacity for that label)")

    def _describe_unregistered(self, task: Task) -> str:
        if task.state == TaskState.REQUESTED:
            return f"container {task.container} not started yet: {self._describe_request(task)}"
        if task.state == TaskState.ALLOCATED:
            return (f"container {task.container} was given on {task.node} but its agent never "
                    "started: YARN was still localizing its files (a large packed env takes "
                    "minutes the first time on a node; raise site.global.registration.timeout)")
        return (f"container {task.container} ({task.yarn_container_id}) started on "
                f"{task.node} but its agent never exported an address")

    def _failure_text(self, task: Task, failure: str) -> str:
        return f"{task.name} (attempt {task.attempt}) failed {failure or '(no report)'}"

    def _memory_text(self, task: Task, end: ContainerEnd, failure: str) -> str:
        """What YARN's memory verdict means and the fix: the role's yarn.memory, a value."""
        role = self.plan.role(task.role)
        limit = f"{end.limit_mb:.0f} MB" if end.limit_mb else f"{role.memory_mb} MB"
        used = f"{end.used_mb:.0f} MB" if end.used_mb else "more"
        suggested = end.suggested_memory_mb(role.memory_mb)
        return (f"{task.name} (attempt {task.attempt}) was killed by YARN for memory: its "
                f"processes used {used} of {end.memory_kind or 'physical'} memory, over the "
                f"{limit} its container was given {failure}\nFix: raise \"yarn.memory\" of "
                f"component \"{task.role}\" in resources.json from {role.memory_mb} to "
                f"{suggested} or more (what the script holds at its peak, with room to spare).")

    def _over_threshold_message(self, task: Task, failures: int, reason: str) -> str:
        role = self.plan.role(task.role)
        if role.failure_policy == "fatal":
            rule = "its failure policy is fatal"
        else:
            rule = (f"that is more than its yarn.container.failure.threshold of "
                    f"{role.failure_threshold}")
        return (f"Component {task.role} failed {failures} time(s); {rule}. "
                f"The job is stopped.\n{reason}")

    def _success_message(self, evaluation: str = "") -> str:
        text = f"The chief finished successfully. {self.clock.summary()}."
        if evaluation:
            text += f" {evaluation}"
        if self.am_attempt > 1:
            text += (f" AppMaster attempt {self.am_attempt}: the earlier attempt was lost and "
                     "every task started again from the checkpoint.")
        if self.restarts:
            text += f" Restarts ({len(self.restarts)}): " + "; ".join(self.restarts) + "."
        return text
