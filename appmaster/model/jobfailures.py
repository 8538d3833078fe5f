"""The failure rules, by YARN's verdict on a container's end (appmaster/model/verdicts.py): a
failed worker is replaced; a failed ps or chief, or any rank of a PyTorch or JAX group,
restarts the whole cluster as a new generation; a task preempted or killed by YARN is asked
for again, uncounted; a task killed for memory or lost counts against its role's threshold,
as a failure does; a role's failure policy (restart, ignore, fatal) and
``yarn.container.failure.threshold`` decide when the job ends. Each rule that may end the job
returns its :class:`EndJob`, and stops there. The rules are an object handed the job's core
(jobcore.py: the plan, the task table, the shared steps); a task's standing while its end is
judged (KILLED, FAILING) is the task table's (jobtasks.py), as every other."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from appmaster.common import frameworks, registry
from appmaster.common.jobplan import JobPlan
from appmaster.common.settings import HEARTBEAT_TIMEOUT
from appmaster.common.vocabulary import FailurePolicy, JobState, Role, TaskState
from appmaster.model.failurewindow import FailureWindow
from appmaster.model.history import Mark
from appmaster.model.jobactions import CHIEF_STOP_GRACE_S, STOP_GRACE_S, EndJob, Fence, Kill, Stop
from appmaster.model.jobcore import JobCore
from appmaster.model.jobmessages import (
    failure_text,
    memory_text,
    over_threshold_message,
    restart_line,
)
from appmaster.model.jobtasks import Task
from appmaster.model.verdicts import ContainerEnd, Verdict, killed_by_signal

log = logging.getLogger("tfyarn.master")

# A script killed by a signal (YARN's kills start with SIGTERM) has its container's end, and
# YARN's verdict on it, within skein's next heartbeats to the RM: waited for this long.
VERDICT_WAIT_S = 10.0
# A worker often fails *because* a ps or the chief just died (its RPCs break first), and its
# agent's word can reach the master before theirs: a worker's failure waits this long for
# such a cause before it is counted and the worker replaced.
FAILURE_SETTLE_S = 5.0


class FailureRules:
    """The job's rules for a task's end that was not a success (a success goes to
    ``succeeded``, the rule of the way to success), and what they count."""

    def __init__(self, core: JobCore, succeeded: Callable[[Task, float], EndJob | None]) -> None:
        self.core = core
        self.table = core.table
        self.succeeded = succeeded
        self.failures: Counter[str] = Counter()  # by role, the job's totals
        # what the threshold judges: the failures in the current failure window
        self.window = FailureWindow(self.plan.failure_window_seconds, core.started_at)
        self.lost_nodes: dict[str, float] = {}  # host -> when a task there was lost

    @property
    def plan(self) -> JobPlan:
        return self.core.plan  # flex gives the job a new one

    def stop(self, task: Task) -> None:
        """End ``task``'s container: the job's doing, not its failure."""
        self.core.actions.append(self.ending(task))

    def exited(self, now: float, container: str, exit_code: int | None,
               failure: str) -> EndJob | None:
        task = self.table.by_container.get(container)
        if task is None:
            return None
        task.exit_code = exit_code
        if task is self.table.tensorboard or task.state.ended:
            return None
        if exit_code != 0 and killed_by_signal(exit_code) and task.state != TaskState.KILLED:
            # Killed from outside: by YARN (memory, preemption) or by the kernel. Its
            # container's end says which; the agent, ending, beats no more meanwhile.
            self.table.forget(container)
            self.table.move(task, TaskState.KILLED, due=now + VERDICT_WAIT_S, failure=failure)
            return None
        # The agent's word comes at once, YARN's container end only with skein's next
        # heartbeat to the RM (up to 5 s later): act now; that end is then the job's.
        self.core.drop(container, now, "finished" if exit_code == 0 else "failed")
        if exit_code == 0:
            return self.succeeded(task, now)
        return self._failed(task, failure_text(task, failure), now)

    def container_ended(self, now: float, container: str, succeeded: bool,
                        failure: str, end: ContainerEnd) -> EndJob | None:
        task = self.core.drop(container, now, "finished" if succeeded else str(end.verdict))
        if task is None:
            return None  # one the job stopped itself
        if task is self.table.tensorboard:
            self.table.move(task, TaskState.FINISHED if succeeded else TaskState.FAILED)
            log.warning("TensorBoard ended; the job goes on without it")
            return None
        heard_at = now
        if task.state == TaskState.KILLED:  # its script was killed: this end says by whom
            failure = failure or task.failure
            heard_at = task.due - VERDICT_WAIT_S  # its agent's word
        if succeeded:
            return self.succeeded(task, now)
        if end.verdict in (Verdict.PREEMPTED, Verdict.YARN_KILLED):
            self._taken_back(task, end, now)
            return None
        if end.verdict == Verdict.MEMORY:
            return self._count_failure(task, memory_text(self.plan, task, end, failure), now,
                                       "killed for memory", Verdict.MEMORY)
        if end.verdict == Verdict.LOST:
            self.lost_nodes[task.host] = now
            return self._count_failure(task, f"{task.name} (attempt {task.attempt}): its node "
                                       f"was lost or its disks failed {failure}", now,
                                       f"lost on {task.host}", Verdict.LOST)
        return self._failed(task, failure_text(task, failure), now, heard_at=heard_at)

    def _taken_back(self, task: Task, end: ContainerEnd, now: float) -> None:
        """YARN took the container back (preempted it for another queue, or its RM killed
        it): not the task's failure. Asked for again by the usual rules, uncounted."""
        task.verdicts[end.verdict] += 1
        what = "preempted by YARN" if end.verdict == Verdict.PREEMPTED else "killed by YARN"
        log.warning("%s (attempt %d) %s: %s", task.name, task.attempt, what, end.message)
        kind = Mark.PREEMPTED  # or killed by the RM: taken back either way
        if task is self.table.evaluator:
            self.core.note(now, kind, f"{task.name} {what}: asked for again")
            task.attempt += 1
            task.exit_code = None
            self.core.request(task, now, TaskState.PREEMPTED)
            return
        alone = self._replaceable(task)
        self.core.note(now, kind, restart_line(task, what, alone, self.core.generation))
        self._restart(task, now, alone, TaskState.PREEMPTED)

    def judge_killed_scripts(self, now: float) -> EndJob | None:
        """Scripts killed by a signal whose container's end never came: their own failure."""
        for task in self.table.index.in_judgement(TaskState.KILLED):
            if now >= task.due:
                self.core.drop(task.container, now, "failed")
                end = self._failed(task, failure_text(task, task.failure), now)
                if end is not None:
                    return end
        return None

    def lost(self, task: Task, silent_s: float, now: float) -> EndJob | None:
        """Like a failure, counted against the role's threshold, and the old container is
        fenced off: if its host comes back, its agent finds its task gone and ends itself."""
        container = task.container
        self.core.drop(container, now, "lost")
        self.lost_nodes[task.host] = now
        self.core.actions += [Fence(container), Kill(container)]  # YARN frees it once it can
        task.exit_code = None
        reason = (f"{task.name} (attempt {task.attempt}) lost: its agent on {task.node} was "
                  f"silent for {silent_s:.0f} s ({HEARTBEAT_TIMEOUT.key} "
                  f"{self.plan.heartbeat_timeout_s:.0f} s): its host died or was cut off.")
        return self._count_failure(task, reason, now, f"lost on {task.host}", Verdict.LOST)

    def stalled(self, task: Task, still_s: float, now: float) -> EndJob | None:
        """The stall watchdog judged ``task`` stalled (its processes wrote their stacks):
        like a failure, counted against its role's threshold; its container is ended as a
        healthy task's is (the chief's work dir goes up in full, its hung processes killed
        after their grace)."""
        step = task.steps.step if task.steps else None
        ending = self.ending(task)
        self.core.drop(task.container, now, str(Verdict.STALLED))
        self.core.actions.append(ending)
        task.exit_code = None
        reason = (f"{task.name} (attempt {task.attempt}) stalled: its training step stood at "
                  f"{step} for {still_s:.0f} s (stall timeout "
                  f"{self.plan.stall_timeout_for(task.role):.0f} s); every process's thread "
                  "stacks are in its stderr log (tfyarn logs).")
        return self._count_failure(task, reason, now, f"stalled at step {step}",
                                   Verdict.STALLED)

    def _failed(self, task: Task, reason: str, now: float, how: str = "failed",
                heard_at: float | None = None) -> EndJob | None:
        """``heard_at``: when the failure was first heard (the settling counts from then)."""
        if task is self.table.evaluator:
            return self._count_failure(task, reason, now)
        if task.exit_code == registry.PORT_TAKEN_EXIT:
            # Not the task's fault: it starts again on a new port, uncounted.
            self.core.note(now, Mark.REPLACED, f"{task.name} found its port taken: restarted "
                           "on a new one")
            self._restart(task, now, self._replaceable(task), TaskState.REQUESTED)
            return None
        if how == "failed" and self._replaceable(task):
            due = max(now, (heard_at or now) + FAILURE_SETTLE_S)
            self.table.move(task, TaskState.FAILING, due=due, failure=reason)
            log.info("%s failed; judged in %.0f s unless a ps or the chief failed first",
                     task.name, due - now)
            return None
        return self._count_failure(task, reason, now, how)

    def _count_failure(self, task: Task, reason: str, now: float, how: str = "failed",
                       verdict: Verdict = Verdict.FAILED) -> EndJob | None:
        if task is self.table.evaluator:
            task.verdicts[verdict] += 1
            return self._evaluator_failed(task, reason, now)
        role = self.plan.role(task.role)
        task.verdicts[verdict] += 1
        self.failures[task.role] += 1
        failures = self.window.add(task.role, now)
        log.warning("failure %d of %s in its window: %s", failures, task.role, reason)
        if role.failure_policy == FailurePolicy.IGNORE:
            self.table.move(task, TaskState.FAILED)
            self.core.note(now, Mark.DROPPED, f"{task.name} dropped (failure policy ignore)")
            if not self.table.index.live(roles=[Role.WORKER]):
                return EndJob(JobState.FAILED,
                              f"Every worker failed and was dropped. Last: {reason}")
            return None
        if not role.may_restart(failures):
            self.table.move(task, TaskState.FAILED)  # the failure that ends the job
            return EndJob(JobState.FAILED,
                          over_threshold_message(self.plan, task, failures, reason))
        alone = self._replaceable(task) and not self._needs_a_new_generation(verdict)
        self.core.note(now, self._mark_kind(verdict, alone),
                       restart_line(task, how, alone, self.core.generation))
        self._restart(task, now, alone, {Verdict.LOST: TaskState.LOST,
                                         Verdict.STALLED: TaskState.STALLED}.get(
                                             verdict, TaskState.REPLACING))
        return None

    def _needs_a_new_generation(self, verdict: Verdict) -> bool:
        """Where a worker replaced alone would leave the others stuck, the cluster restarts
        now. A worker lost with its host comes back on another, at a new address, and the
        running tasks hold its old one (the published spec): only a new generation tells
        them (see job.py's export rule), and restarting now saves its replacement's whole
        start. A stalled worker of a job without a ps (MultiWorkerMirrored) leaves every
        other in the all-reduce it never joins, which TensorFlow never times out: they would
        stall in turn, and be judged for it."""
        if verdict == Verdict.STALLED and self.plan.role(Role.PS) is None:
            return True
        return verdict == Verdict.LOST and self.core.spec is not None

    def _evaluator_failed(self, task: Task, reason: str, now: float) -> EndJob | None:
        """Beside training: its failure fails the job only under the fatal policy."""
        role = self.plan.role(task.role)
        self.failures[task.role] += 1
        failures = self.window.add(task.role, now)
        log.warning("failure %d of the evaluator in its window: %s", failures, reason)
        if role.failure_policy == FailurePolicy.FATAL:
            self.table.move(task, TaskState.FAILED)
            return EndJob(JobState.FAILED,
                          over_threshold_message(self.plan, task, failures, reason))
        if self.core.state == JobState.EVALUATING:
            self.table.move(task, TaskState.FAILED)
            return EndJob(JobState.SUCCEEDED, self.core.success(
                f"The evaluator failed on the last checkpoint: {reason}"))
        if role.may_restart(failures):
            self.core.note(now, Mark.REPLACED,
                           f"{task.name} replaced (attempt {task.attempt + 1})")
            task.attempt += 1
            task.exit_code = None
            self.core.request(task, now, TaskState.REPLACING)
            return None
        self.table.move(task, TaskState.FAILED)
        self.core.note(now, Mark.DROPPED, f"{task.name} dropped after {failures} failure(s); "
                       "training goes on without it")
        return None

    def _restart(self, task: Task, now: float, alone: bool, why: TaskState) -> None:
        """``alone``: the task replaced by itself (a stateless worker, see _replaceable);
        else the whole cluster restarted with it (a ps, the chief, a worker that moved).
        ``why``: the state it waits in for its new container."""
        task.attempt += 1
        task.failed_at = now
        task.exit_code = None
        if alone:
            log.info("replacing %s with a new container (attempt %d)", task.name, task.attempt)
            self.core.request(task, now, why)
        else:
            self.restart_generation(task, now, why)

    def _replaceable(self, task: Task) -> bool:
        """A plain worker of TensorFlow: not the chief (worker 0 in a job without a
        chiefworker). A PyTorch or JAX group cannot go on with a rank missing: none is."""
        return (frameworks.of(self.plan.framework).replaces_workers_alone
                and task.role == Role.WORKER and task.key != self.plan.chief)

    def restart_generation(self, failed: Task | None, now: float,
                           why: TaskState = TaskState.REQUESTED) -> None:
        """End every old container first, then a fresh rendezvous for every task. ``failed``:
        the task whose failure restarts it, which waits in ``why``; None: a flex
        (jobflex.py)."""
        core = self.core
        core.generation += 1
        core.spec, core.state = None, JobState.RESTARTING
        for task in self.table.index.in_judgement(TaskState.FAILING):
            log.info("%s failed with it: not counted", task.name)  # it fell with the cluster
        for task in self.table.tasks.values():
            if task.container in self.table.by_container:  # its end is the job's doing
                ending = self.ending(task)
                core.drop(task.container, now, f"stopped: generation {core.generation} began")
                core.actions.append(ending)
            if task is not failed:
                task.attempt += 1
            self.table.move(task, why if task is failed else TaskState.REQUESTED)
            task.failed_at = now if failed is None else failed.failed_at
        log.info("restarting every task as generation %d after %s", core.generation,
                 "a flex" if failed is None else f"{failed.name} failed")
        core.request_all(now)

    def ending(self, task: Task) -> Stop | Kill:
        """How tfyarn ends a task it no longer needs: a running script is asked to stop
        (the chief's work dir then goes up in full); any other container is killed."""
        if task.state != TaskState.RUNNING:
            return Kill(task.container)
        chief = task.key == self.plan.chief
        return Stop(task.container, CHIEF_STOP_GRACE_S if chief else STOP_GRACE_S, chief)

    def cluster_verdict_due(self) -> float | None:
        """When YARN's verdict on a killed ps or chief is due at the latest, if one is
        awaited: a worker's failure may be its doing, so it is judged after."""
        dues = [t.due for t in self.table.index.in_judgement(TaskState.KILLED)
                if not self._replaceable(t)]
        return max(dues) if dues else None

    def judge_settled_failures(self, now: float) -> EndJob | None:
        """Workers whose failure had no cause elsewhere: now counted, and replaced."""
        if self.cluster_verdict_due() is not None:
            return None  # a ps or the chief was killed: its verdict may restart everyone
        for task in self.table.index.in_judgement(TaskState.FAILING):
            if now < task.due:
                continue
            if self.core.state == JobState.EVALUATING:  # training over: nothing to replace
                self.table.move(task, TaskState.STOPPED)
                continue
            end = self._count_failure(task, task.failure, now)
            if end is not None:
                return end
        return None

    @staticmethod
    def _mark_kind(verdict: Verdict, alone: bool) -> str:
        if verdict == Verdict.MEMORY:
            return Mark.MEMORY
        if verdict == Verdict.LOST:
            return Mark.LOST
        if verdict == Verdict.STALLED:
            return Mark.STALLED
        return Mark.REPLACED if alone else Mark.RESTART
