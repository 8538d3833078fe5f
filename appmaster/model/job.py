"""The job's decisions, apart from any I/O: events in, actions out.

The master (appmaster/master/main.py) turns what it hears from the registry and from YARN into
calls of :class:`Job`'s ``on_*`` methods and performs the actions they return. Nothing here
talks to YARN, the registry or a clock: each event carries the time it was heard, so every
rule of the failure table can be driven by unit tests (tests/test_job.py).

The rules: a worker is stateless, so a failed worker is replaced by a new container for the
same task index. A ps holds state and the chief drives training, so when one of them fails
the whole TensorFlow cluster restarts as a new generation (old containers killed first,
fresh rendezvous) and the script resumes from the latest checkpoint. Each role's failures
count against its ``yarn.container.failure.threshold``; a task whose port was taken starts
again uncounted; a task silent past the heartbeat timeout counts as failed (its host died).

:class:`Job` holds the state and the rules of a task's way to running and of success; the
rest it takes from a module per concern, each as pure as this one: the failure rules by
YARN's verdict (jobfailures.py), the deadlines and timeouts (jobdeadlines.py), the messages
a user reads (jobmessages.py). The tasks and their index are in jobtasks.py, the actions it
returns in jobactions.py.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from appmaster.common import registry
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import JobState, Role, SuccessPolicy, TaskState
from appmaster.model.history import History, Mark
from appmaster.model.jobactions import (
    Action,
    EndJob,
    Fence,
    Kill,
    PublishSpec,
    Request,
    ShowTensorBoard,
    TrainingDone,
)
from appmaster.model.jobdeadlines import REASK_S, Deadlines
from appmaster.model.jobfailures import FAILURE_SETTLE_S, VERDICT_WAIT_S, FailureRules
from appmaster.model.jobmessages import JobMessages
from appmaster.model.jobtasks import NOT_RUNNING_YET, Key, Task, TaskIndex
from appmaster.model.liveness import Liveness
from appmaster.model.phases import PhaseClock
from appmaster.model.verdicts import ContainerEnd, Verdict

# The job's public surface, wherever each part lives: master.py, view.py and the tests
# import it from here.
__all__ = ["FAILURE_SETTLE_S", "NOT_RUNNING_YET", "REASK_S", "VERDICT_WAIT_S", "Action",
           "EndJob", "Fence", "Job", "Key", "Kill", "PublishSpec", "Request", "ShowTensorBoard",
           "Task", "TaskIndex", "TrainingDone"]

log = logging.getLogger("tfyarn.master")


class Job(FailureRules, Deadlines, JobMessages):
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
        self.sent_back: set[tuple[str, Key]] = set()  # (host, task) sent back from a lost host
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

    def task_of(self, container: str) -> Task | None:
        return self.by_container.get(container)

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
        """A replacement YARN placed on a node where a task was just lost goes back, once:
        that node may be half alive, and it came back with an empty cache if its NodeManager
        started again; asked for again, the task may land on a node that holds the env. If
        YARN places it there again, it stays: its agent reached the master from there, and
        YARN found no other room (a partition of one node, a full cluster). Sent back until
        three timeouts had passed, such a task waited that long, 90 s by default (issue 37)."""
        host = (node or "").rsplit(":", 1)[0]
        lost_at = self.lost_nodes.get(host)
        if lost_at is None or now - lost_at > 3 * self.plan.heartbeat_timeout_s:
            return False
        if (host, task.key) in self.sent_back:
            return False
        self.sent_back.add((host, task.key))
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
            self._actions.append(ShowTensorBoard(export.address, export.path))
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

    def _succeeded(self, task: Task, now: float) -> EndJob | None:
        task.state = TaskState.FINISHED
        log.info("%s finished (container %s)", task.name, task.container)
        if task is self.evaluator:
            if self.state == JobState.EVALUATING:
                return EndJob(JobState.SUCCEEDED, self._success_message(
                    "The evaluator evaluated the last checkpoint."))
            return None  # it ended by itself; training goes on
        if self.plan.success_policy == SuccessPolicy.CHIEF:
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
