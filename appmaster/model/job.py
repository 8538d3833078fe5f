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

:class:`Job` holds the rules of a task's way to running and of success; the rest are
objects and functions it hands the job's core (jobcore.py: the plan, the task table of
jobtasks.py, where the job stands, the steps every rule takes), each as pure as this one: the
failure rules by YARN's verdict (jobfailures.py), the deadlines and timeouts
(jobdeadlines.py), the messages a user reads (jobmessages.py). A task changes state only
through the table (``TaskTable.move``), checked against the moves it allows. The actions
the job returns are in jobactions.py.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable

from appmaster.common import registry
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.clusterview import ClusterView, QueueStanding, host_of
from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import WAITING, JobState, Role, SuccessPolicy, TaskState
from appmaster.model.history import History, Mark
from appmaster.model.jobactions import (
    Action,
    DumpStacks,
    EndJob,
    Fence,
    FlexAnswer,
    Kill,
    PublishSpec,
    Request,
    ShowTensorBoard,
    Stop,
    TrainingDone,
)
from appmaster.model.jobcore import JobCore
from appmaster.model.jobdeadlines import REASK_S, Deadlines
from appmaster.model.jobfailures import FAILURE_SETTLE_S, VERDICT_WAIT_S, FailureRules
from appmaster.model.jobflex import flex, flex_refusal
from appmaster.model.jobmessages import preempted_line, restored_line
from appmaster.model.jobqueue import QueueRules
from appmaster.model.jobstall import Watchdog
from appmaster.model.jobtasks import NOT_RUNNING_YET, Key, Task, TaskIndex, TaskTable
from appmaster.model.phases import PhaseClock
from appmaster.model.verdicts import ContainerEnd, Verdict

# The job's public surface, wherever each part lives: master.py, view.py and the tests
# import it from here.
__all__ = ["FAILURE_SETTLE_S", "NOT_RUNNING_YET", "REASK_S", "VERDICT_WAIT_S", "Action",
           "DumpStacks", "EndJob", "Fence", "FlexAnswer", "Job", "Key", "Kill", "PublishSpec",
           "Request", "ShowTensorBoard",
           "Stop", "Task", "TaskIndex", "TaskTable", "TrainingDone"]

log = logging.getLogger("tfyarn.master")


class Job:
    """Every task of the job, its generation and failures, and the rules that move them."""

    def __init__(self, plan: JobPlan, now: float, am_attempt: int = 1,
                 draw: Callable[[], float] = random.random) -> None:
        """``draw``: uniform numbers in [0, 1), which part jobs that gave their containers
        back at the same moment (queuewait.py)."""
        self.core = JobCore(plan, now, am_attempt, draw)
        self.table = self.core.table
        self.rules = FailureRules(self.core, self._succeeded)
        self.deadlines = Deadlines(self.core, self.rules)
        self.queue = QueueRules(self.core)
        self.watchdog = Watchdog(self.core, self.rules)

    # ------------------------------------------------------------ what the job is

    @property
    def plan(self) -> JobPlan:
        return self.core.plan

    @property
    def state(self) -> JobState:
        return self.core.state

    @property
    def generation(self) -> int:
        return self.core.generation

    @property
    def spec(self) -> ClusterSpec | None:
        return self.core.spec

    @property
    def tasks(self) -> dict[Key, Task]:
        return self.table.tasks

    @property
    def tensorboard(self) -> Task | None:
        return self.table.tensorboard

    @property
    def evaluator(self) -> Task | None:
        return self.table.evaluator

    @property
    def by_container(self) -> dict[str, Task]:
        return self.table.by_container

    @property
    def index(self) -> TaskIndex:
        return self.table.index

    @property
    def history(self) -> History:
        return self.core.history

    @property
    def clock(self) -> PhaseClock:
        return self.core.clock

    @property
    def restarts(self) -> list[str]:
        return self.core.restarts

    @property
    def failures(self) -> Counter[str]:
        return self.rules.failures

    @property
    def lost_nodes(self) -> dict[str, float]:
        return self.rules.lost_nodes

    @property
    def evaluation_deadline(self) -> float | None:
        return self.deadlines.evaluation_deadline

    # ------------------------------------------------------------ events

    def start(self, now: float) -> list[Action]:
        """The AppMaster is up: ask for every task's container."""
        return self._run(self.core.request_all, now)

    def assigned(self, task: Task, container: str, now: float) -> registry.TaskAssignment:
        """YARN took the request of a :class:`Request` as ``container``: what it runs."""
        self.deadlines.assigned(task, now)
        task.requested_at = now
        task.previous_address = task.address or task.previous_address
        task.container = container
        self.table.move(task, task.state, address=None)  # it waits, as it was asked for
        task.gpus = None  # its new agent says which it holds
        task.steps = None  # no step yet in its new container: not judged before its first
        task.localized = None  # nothing heard yet of its new container's files
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
        return self._run(self.rules.exited, now, container, exit_code, failure)

    def on_container_end(self, container: str, succeeded: bool, now: float,
                         failure: str = "", end: ContainerEnd | None = None) -> list[Action]:
        """YARN says the container ended (the agent may not have said so: it was killed);
        ``end``: YARN's verdict, when it did not succeed (a plain failure if not given)."""
        return self._run(self.rules.container_ended, now, container, succeeded, failure,
                         end or ContainerEnd(Verdict.FAILED))

    def on_constraints_off(self, role: str, now: float) -> None:
        """The ResourceManager takes no placement constraints: the role's containers are
        asked for without them, which the diagnostics, status and page say."""
        self.core.note(now, Mark.PLACEMENT, f"{role}: ANTI_AFFINITY_REQUIRED not enforced: "
                       "the ResourceManager's yarn.resourcemanager.placement-constraints."
                       f"handler is disabled, so two {role} containers may share a host")

    def on_localized(self, container: str, there: int, in_all: int) -> None:
        """How many bytes of ``container``'s files its node holds so far, of all (the
        patched AppMaster asks the NodeManager while YARN localizes them)."""
        task = self.task_of(container)
        if task is not None and task.container == container:  # not a container it left
            task.localized = (there, in_all)

    def on_preempt_notice(self, container: str, now: float) -> list[str]:
        """YARN announced it will preempt ``container``: noted (status, page, report). The
        containers to tell: its task's, and the chief's (rank 0's), which saves the
        checkpoint a restart resumes from."""
        task = self.task_of(container)
        if task is None:
            return []
        self.core.note(now, Mark.PREEMPTED, preempted_line(task, self.core.words))
        chief = self.tasks.get(self.plan.chief)  # worker 0 (rank 0) without a chiefworker
        told = [container]
        if chief is not None and chief.container and chief.container != container:
            told.append(chief.container)
        return told

    def on_flex(self, request: str, role: str, count: int, now: float) -> list[Action]:
        """``tfyarn flex``: ``role`` to ``count`` tasks, as a new generation (jobflex.py)."""
        why = flex_refusal(self.plan, self.state, role, count)
        if why is not None:
            return [FlexAnswer(request, False, why)]
        actions = self._run(self._flex, now, role, count)
        return [*actions, FlexAnswer(request, True, self.restarts[-1])]

    def _flex(self, now: float, role: str, count: int) -> None:
        flex(self.core, self.rules, role, count, now)

    def on_allocated(self, containers: dict[str, str | None], now: float) -> None:
        """YARN gave these containers (container -> node), whose agents have not started:
        their files are still being localized, which no allocation timeout should end."""
        for container, node in containers.items():
            task = self.by_container.get(container)
            if task is not None and task.state.waiting:
                self.table.move(task, TaskState.ALLOCATED)
                task.node = node
                self._given(now)

    def on_placement_relaxed(self, relaxed: dict[Key, str], now: float) -> list[Action]:
        """These tasks' requests for named hosts waited past yarn.placement.escalate.seconds
        (``relaxed``: what to say of each): those YARN has not met yet are asked for
        again, on any host."""
        return self._run(self._relax, now, relaxed)

    def _relax(self, now: float, relaxed: dict[Key, str]) -> None:
        for key, line in relaxed.items():
            task = self.tasks.get(key)
            if task is not None and task.state.waiting:
                self.core.note(now, Mark.PLACEMENT, line)
                self.deadlines.ask_again(task, now, line)

    def on_cluster(self, nodes: ClusterView, standing: QueueStanding | None, now: float,
                   pending: int | None = None) -> list[Action]:
        """What the ResourceManager says of the cluster while tasks wait for containers
        (its nodes, the job's queue, how many of its asks it holds): see
        :meth:`QueueRules.on_cluster`."""
        if pending is not None:
            self.core.pending_heard = (now, pending)
        return self._run(self.queue.on_cluster, now, nodes, standing)

    def waits_for_containers(self) -> bool:
        return self.queue.waits()

    def on_heartbeats(self, beats: dict[str, bytes], now: float) -> list[Action]:
        """Every agent's heartbeat counter, read at once: silent tasks are lost."""
        return self._run(self.deadlines.heard, now, beats)

    def on_tick(self, now: float) -> list[Action]:
        """A deadline passed (see :meth:`next_deadline`)."""
        return self._run(self._tick, now)

    def _tick(self, now: float) -> EndJob | None:
        # first: a gang given back asks for nothing the deadlines would ask for again
        self.queue.check(now)
        return self.deadlines.check(now) or self.watchdog.check(now)

    def waiting_for_yarn(self, now: float) -> bool:
        """Whether the master should ask YARN which requests it met before the tick: see
        :meth:`Deadlines.waiting_for_yarn`, and a decision of the queue's rules."""
        return self.deadlines.waiting_for_yarn(now) or self.queue.due(now)

    def next_deadline(self) -> float | None:
        due = [t for t in (self.deadlines.next_deadline(), self.queue.next_deadline(),
                           self.watchdog.next_deadline()) if t is not None]
        return min(due) if due else None

    def heartbeats_due(self, now: float) -> bool:
        return self.deadlines.heartbeats_due(now)

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
        if mirror is not None and task.key == self.plan.chief:
            self._tell_restore(mirror)
        if progress is not None and now is not None:
            if isinstance(progress.get("step"), int):
                self.watchdog.heard(task, progress["step"], now, summaries=True)
            if task.key == self.plan.chief:
                self.history.on_training(now, progress)
            elif task is self.evaluator:
                self.history.on_evaluation(now, progress)

    def on_steps(self, container: str, steps: list[int | None], now: float) -> None:
        """A task's processes' steps (None: one that reported none yet): the slowest one's
        is the task's, for the stall watchdog and stragglers."""
        task = self.by_container.get(container)
        known = [step for step in steps if isinstance(step, int)]
        if task is not None and known:
            self.watchdog.heard(task, min(known), now)

    def _tell_restore(self, mirror: dict) -> None:
        """The chief of a restarted generation restored its work dir: the restart's line
        says from what (restored_line), once, so no restart claims a checkpoint it lacked."""
        generation = self.core.generation
        self.core.note_attempt_restore(mirror)
        if not mirror.get("restore_done") or self.core.restore_told >= generation:
            return
        self.core.restore_told = generation
        mark = f"generation {generation}"
        for i in range(len(self.restarts) - 1, -1, -1):
            if self.restarts[i].endswith(mark):
                self.restarts[i] += f", {restored_line(mirror)}"
                log.info("%s", self.restarts[i])
                return

    def ended(self, status: JobState, now: float | None = None) -> None:
        """The application ends: tasks still running were ended by tfyarn, not failed."""
        self.core.state = status
        if now is not None:  # their containers end with the application
            self.history.end_open(f"stopped: the job {str(status).lower()}", now)
        for task in (*self.tasks.values(), *([self.evaluator] if self.evaluator else [])):
            if not task.state.ended:
                self.table.move(task, TaskState.FINISHED if task.exit_code == 0
                                else TaskState.STOPPED)

    def recently_lost(self, now: float) -> set[str]:
        """Hosts where a task was lost within three heartbeat timeouts: maybe half alive,
        or back with an empty cache."""
        return {host for host, at in self.lost_nodes.items()
                if now - at <= 3 * self.plan.heartbeat_timeout_s}

    def task_of(self, container: str) -> Task | None:
        return self.by_container.get(container)

    def live_tasks(self) -> list[Task]:
        """Tasks the job still counts on (an ignored failed worker is dropped)."""
        return self.table.live_tasks()

    # ------------------------------------------------------------ the rules

    def _run(self, rule: Callable[..., EndJob | None], now: float, *args) -> list[Action]:
        """A rule's actions; the job's end, if the rule decided it, comes last. A rule that
        decides the end returns it (and stops there); so does every rule that calls it."""
        actions = self.core.actions = []
        end = rule(now, *args)
        if end is not None:
            self.core.state = end.status
            actions.append(end)
        return actions

    def _started(self, now: float, container: str, node: str | None,
                 yarn_container_id: str | None, user: str | None) -> None:
        task = self.by_container.get(container)
        if task is None or task.state not in (*WAITING, TaskState.ALLOCATED):
            return
        if self._on_a_lost_node(task, container, node, now):
            return
        was_waiting = task.state.waiting
        self.table.move(task, TaskState.STARTED)
        if was_waiting:
            self._given(now)
        task.yarn_container_id, task.node, task.user = yarn_container_id, node, user
        self.history.started(container, node, now)
        if task is not self.tensorboard:
            self.table.watch(task, now)
        if not self.index.count(*WAITING, TaskState.ALLOCATED):
            self.clock.mark_once("all started", now)

    def _given(self, now: float) -> None:
        """A task waiting for YARN was seen given its container."""
        self.deadlines.given(now)
        self.queue.given(now)

    def _on_a_lost_node(self, task: Task, container: str, node: str | None,
                        now: float) -> bool:
        """A replacement YARN placed on a node where a task was just lost goes back, once:
        that node may be half alive, and it came back with an empty cache if its NodeManager
        started again; asked for again, the task may land on a node that holds the env. If
        YARN places it there again, it stays: its agent reached the master from there, and
        YARN found no other room (a partition of one node, a full cluster). Sent back until
        three timeouts had passed, such a task waited that long, 90 s by default (issue 37)."""
        host = host_of(node or "")
        if host not in self.recently_lost(now):
            return False
        if host in task.sent_back_from:
            return False
        task.sent_back_from.add(host)
        log.warning("%s landed on %s, where a task was lost %.0f s ago: asking for another "
                    "container", task.name, host, now - self.lost_nodes[host])
        del self.by_container[container]
        self.history.ended(container, "sent back", now)
        self.core.actions.append(Kill(container))
        self.core.request(task, now)
        return True

    def _exported(self, now: float, export: registry.Export) -> None:
        task = self.by_container.get(export.container)
        if task is None:
            return  # a late word from a container the job no longer counts on
        if task is self.tensorboard:
            self.table.move(task, TaskState.RUNNING, address=export.address)
            self.history.running(export.container, now)
            self.core.actions.append(ShowTensorBoard(export.address, export.path))
            return
        if export.generation != self.generation or task is self.evaluator:
            return
        moved = self.spec is not None and export.address != task.previous_address
        self.table.move(task, TaskState.REGISTERED, address=export.address)
        log.info("%s registered at %s (container %s)", task.name, export.address, task.container)
        if moved:
            # Its old port was taken, or YARN put it on another node: the running tasks still
            # hold the old address (a ps keeps calling it), and TF scripts read theirs once.
            # Only a fresh generation gets everyone the new one.
            self.core.note(now, Mark.RESTART, f"{task.name} came back at {export.address}: "
                           f"cluster restarted as generation {self.generation + 1}")
            self.rules.restart_generation(task, now)
            return
        if not self.index.unregistered:
            self.clock.mark_once("all registered", now)
            self._publish_spec(now)

    def _publish_spec(self, now: float) -> None:
        """(Re)publish the generation's spec; a replaced worker's new address goes in."""
        exports: dict[str, dict[int, str]] = {}
        for task in self.live_tasks():  # every one registered: none is without an address
            exports.setdefault(task.role, {})[task.index] = task.address
        self.core.spec = ClusterSpec.from_exports(exports)
        self.core.actions.append(PublishSpec(self.generation, self.core.spec))
        self.clock.mark_once("spec published", now)

    def _running(self, now: float, container: str) -> None:
        task = self.by_container.get(container)
        if task is None:
            return
        self.table.move(task, TaskState.RUNNING)
        self.history.running(container, now)
        if task.failed_at is not None:
            log.info("%s training again %.2f s after its failure was heard (attempt %d)",
                     task.name, now - task.failed_at, task.attempt)
            task.failed_at = None
        if self.state in (JobState.STARTING, JobState.RESTARTING) and not self.index.count(
                *NOT_RUNNING_YET):
            self.clock.mark_once("all running", now)
            self.core.state = JobState.RUNNING

    def _succeeded(self, task: Task, now: float) -> EndJob | None:
        self.table.move(task, TaskState.FINISHED)
        log.info("%s finished (container %s)", task.name, task.container)
        if task is self.evaluator:
            if self.state == JobState.EVALUATING:
                return EndJob(JobState.SUCCEEDED, self.core.success(
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
            return EndJob(JobState.SUCCEEDED, self.core.success())
        self._evaluate_last(now)
        return None

    def _evaluate_last(self, now: float) -> None:
        """Training is done: the TensorFlow tasks go, the evaluator gets the last word."""
        self.core.state = JobState.EVALUATING
        self.deadlines.evaluate_last(now)
        for task in self.live_tasks():
            if task.container in self.by_container:
                self.core.drop(task.container, now, "stopped: training done")
                self.core.actions.append(Kill(task.container))
        self.core.actions.append(TrainingDone())
        log.info("training done: the evaluator evaluates the last checkpoint (up to %.0f s)",
                 self.plan.evaluation_timeout_s)
