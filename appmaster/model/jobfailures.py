"""The failure rules, by YARN's verdict on a container's end (appmaster/model/verdicts.py): a
failed worker is replaced; a failed ps or chief restarts the whole cluster as a new
generation; a task preempted or killed by YARN is asked for again, uncounted; a task killed
for memory or lost counts against its role's threshold, as a failure does; a role's failure
policy (restart, ignore, fatal) and ``yarn.container.failure.threshold`` decide when the job
ends. Each rule that may end the job returns its :class:`EndJob`, and stops there."""

from __future__ import annotations

import logging
from collections import Counter

from appmaster.common import registry
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import FailurePolicy, JobState, Role, TaskState
from appmaster.model.history import History, Mark
from appmaster.model.jobactions import Action, EndJob, Fence, Kill
from appmaster.model.jobtasks import Key, Task, TaskIndex
from appmaster.model.liveness import Liveness
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
    """:class:`~appmaster.model.job.Job`'s rules for a task's end that was not a success."""

    plan: JobPlan
    state: JobState
    generation: int
    spec: ClusterSpec | None
    tasks: dict[Key, Task]
    evaluator: Task | None
    tensorboard: Task | None
    by_container: dict[str, Task]
    failures: Counter[str]
    settling: dict[Key, tuple[str, float]]
    lost_nodes: dict[str, float]
    liveness: Liveness
    history: History
    index: TaskIndex
    _actions: list[Action]

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
        alone = self._replaceable(task)
        self._note(now, kind, self._restart_line(task, what, alone))
        self._restart(task, now, alone)

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

    def _verdicts_awaited(self) -> list[Task]:
        """Tasks whose script was killed by a signal, their container's end not heard yet."""
        return [t for t in self.index.verdict_awaited.values()
                if self.by_container.get(t.container) is t]

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
            self._restart(task, now, self._replaceable(task))
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
        if role.failure_policy == FailurePolicy.IGNORE:
            task.state = TaskState.FAILED
            self._note(now, Mark.DROPPED, f"{task.name} dropped (failure policy ignore)")
            if not self.index.live(roles=[Role.WORKER]):
                return EndJob(JobState.FAILED,
                              f"Every worker failed and was dropped. Last: {reason}")
            return None
        if not role.may_restart(failures):
            task.state = TaskState.FAILED  # the failure that ends the job
            return EndJob(JobState.FAILED, self._over_threshold_message(task, failures, reason))
        alone = self._replaceable(task) and not self._moves_for_sure(task, verdict)
        self._note(now, self._mark_kind(task, verdict, alone), self._restart_line(task, how, alone))
        self._restart(task, now, alone)
        return None

    def _moves_for_sure(self, task: Task, verdict: Verdict) -> bool:
        """A worker lost with its host comes back on another, at a new address, and the
        running tasks hold its old one (the published spec): only a new generation tells
        them (see ``_exported``). Restarted now, not after its replacement has started
        (a whole container's start saved: issue 37)."""
        return verdict == Verdict.LOST and self.spec is not None

    def _evaluator_failed(self, task: Task, reason: str, now: float) -> EndJob | None:
        """Beside training: its failure fails the job only under the fatal policy."""
        role = self.plan.role(task.role)
        self.failures[task.role] += 1
        failures = self.failures[task.role]
        log.warning("failure %d of the evaluator: %s", failures, reason)
        if role.failure_policy == FailurePolicy.FATAL:
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

    def _restart(self, task: Task, now: float, alone: bool) -> None:
        """``alone``: the task replaced by itself (a stateless worker, see _replaceable);
        else the whole cluster restarted with it (a ps, the chief, a worker that moved)."""
        task.attempt += 1
        task.failed_at = now
        task.exit_code = None
        if alone:
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

    def _mark_kind(self, task: Task, verdict: Verdict, alone: bool) -> str:
        if verdict == Verdict.MEMORY:
            return Mark.MEMORY
        if verdict == Verdict.LOST:
            return Mark.LOST
        return Mark.REPLACED if alone else Mark.RESTART
