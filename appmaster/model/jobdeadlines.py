"""Deadlines and timeouts: the containers YARN must give (site.global.allocation.timeout,
asked again after REASK_S), the tasks that must register (registration.timeout), the
agents that must keep beating (task.heartbeat.timeout), the job's own deadline
(job.deadline) and the evaluator's last word (evaluation.timeout). Time is what the master
passes in: nothing here reads a clock."""

from __future__ import annotations

import logging

from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import JobState, TaskState
from appmaster.model.jobactions import Action, EndJob, Kill
from appmaster.model.jobtasks import Key, Task, TaskIndex
from appmaster.model.liveness import Liveness

log = logging.getLogger("tfyarn.master")

# YARN can lose a container request: skein adds asks one at a time, the ResourceManager may
# give more containers than were asked at that moment, skein releases the extras, and the
# asks they stood for are gone (seen on the local cluster: 3 of 64 tasks never given a
# container though the nodes had room). A task still waiting this long is asked for again
# (its old request withdrawn); the allocation timeout still counts from the first ask.
REASK_S = 30.0


class Deadlines:
    """:class:`~appmaster.model.job.Job`'s deadlines: when the next is due, what passing it does."""

    plan: JobPlan
    state: JobState
    started_at: float
    allocation_deadline: float
    registration_deadline: float
    evaluation_deadline: float | None
    next_liveness_check: float
    by_container: dict[str, Task]
    settling: dict[Key, tuple[str, float]]
    asked_again: set[Key]
    liveness: Liveness
    index: TaskIndex
    _actions: list[Action]

    def waiting_for_yarn(self, now: float) -> bool:
        """Whether the allocation deadline passed with containers YARN may not have given:
        the master then asks YARN which it did (``on_allocated``) before ``on_tick``."""
        waiting = self._not_given()
        return bool(waiting) and (now >= self.allocation_deadline or any(
            now >= t.requested_at + REASK_S for t in waiting))

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

    def _not_given(self) -> list[Task]:
        """Tasks whose container YARN has not given yet, as far as the job knows."""
        return self.index.in_state(TaskState.REQUESTED)

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

    def _ask_again(self, task: Task, now: float) -> None:
        """Withdraw a request YARN has not met (it may have lost it) and make it anew."""
        log.info("%s: no container after %.0f s; asking YARN again", task.name,
                 now - task.requested_at)
        self._drop(task.container, now, "withdrawn: asked again")
        self._actions.append(Kill(task.container))  # skein withdraws a pending request
        self.asked_again.add(task.key)
        self._request(task, now)

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
