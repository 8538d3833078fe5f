"""Deadlines and timeouts: the containers YARN must give (site.global.allocation.timeout,
asked again after REASK_S), the tasks that must register (registration.timeout), the
agents that must keep beating (task.heartbeat.timeout), the job's own deadline
(job.deadline) and the evaluator's last word (evaluation.timeout). Time is what the master
passes in: nothing here reads a clock. An object handed the job's core (jobcore.py) and its
failure rules, which judge what a deadline's passing reveals."""

from __future__ import annotations

import logging
import math

from appmaster.common.jobplan import JobPlan
from appmaster.common.settings import (
    ALLOCATION_TIMEOUT,
    DEADLINE,
    EVALUATION_TIMEOUT,
    REGISTRATION_TIMEOUT,
)
from appmaster.common.vocabulary import WAITING, JobState, TaskState
from appmaster.model.jobactions import EndJob, Kill
from appmaster.model.jobcore import JobCore
from appmaster.model.jobfailures import FailureRules
from appmaster.model.jobmessages import describe_request, describe_unregistered
from appmaster.model.jobtasks import Task

log = logging.getLogger("tfyarn.master")

# YARN can lose a container request: skein adds asks one at a time, the ResourceManager may
# give more containers than were asked at that moment, skein releases the extras, and the
# asks they stood for are gone (seen on the local cluster: 3 of 64 tasks never given a
# container though the nodes had room). A task still waiting this long is asked for again
# (its old request withdrawn); the allocation timeout still counts from the first ask.
REASK_S = 30.0


class Deadlines:
    """The job's deadlines: when the next is due, what passing it does."""

    def __init__(self, core: JobCore, rules: FailureRules) -> None:
        self.core = core
        self.table = core.table
        self.rules = rules
        self.allocation_deadline = self.registration_deadline = 0.0
        self.evaluation_deadline: float | None = None  # once training is done
        self.next_liveness_check = 0.0

    @property
    def plan(self) -> JobPlan:
        return self.core.plan  # flex gives the job a new one

    def assigned(self, task: Task, now: float) -> None:
        """``task`` was given a container: YARN must give and start the job's anew, unless
        it was only asked for again."""
        if task.asked_again:
            task.asked_again = False
        else:
            timeout = self.plan.allocation_timeout_s  # None: as long as the queue needs
            self.allocation_deadline = now + timeout if timeout else math.inf
            self.registration_deadline = now + self.plan.registration_timeout_s

    def given(self, now: float) -> None:
        """A task waiting for YARN was seen given its container: it must register within the
        timeout from now, however long the queue made it wait."""
        self.registration_deadline = max(self.registration_deadline,
                                         now + self.plan.registration_timeout_s)

    def evaluate_last(self, now: float) -> None:
        """Training is done: the evaluator's last word is due within its timeout."""
        self.evaluation_deadline = now + self.plan.evaluation_timeout_s

    def waiting_for_yarn(self, now: float) -> bool:
        """Whether the allocation deadline passed with containers YARN may not have given:
        the master then asks YARN which it did (``on_allocated``) before ``on_tick``."""
        waiting = self._not_given()
        return bool(waiting) and (now >= self.allocation_deadline or any(
            now >= t.requested_at + REASK_S for t in waiting))

    def next_deadline(self) -> float | None:
        """Asked after every event: it reads the index, never every task."""
        index = self.table.index
        deadlines = []
        oldest = index.oldest_request()
        if oldest is not None:
            deadlines.append(oldest + REASK_S)
        if self.allocation_deadline < math.inf and index.count(*WAITING, TaskState.QUEUED):
            deadlines.append(self.allocation_deadline)
        if self._given_unregistered():
            deadlines.append(self.registration_deadline)
        if self.plan.deadline_s:
            deadlines.append(self.core.started_at + self.plan.deadline_s)
        if self.table.heard:
            deadlines.append(self.next_liveness_check)
        if self.evaluation_deadline is not None:
            deadlines.append(self.evaluation_deadline)
        verdicts = self.rules.cluster_verdict_due()
        for task in index.judged.values():  # a failing worker waits for a killed chief's
            deadlines.append(max(task.due, verdicts or task.due)
                             if task.state == TaskState.FAILING else task.due)
        return min(deadlines) if deadlines else None

    def heartbeats_due(self, now: float) -> bool:
        """Whether the master should read the agents' heartbeats now."""
        return bool(self.table.heard) and now >= self.next_liveness_check

    def _given_unregistered(self) -> int:
        """How many tasks YARN gave a container have not registered: those still waiting
        for theirs (or given back) wait for the queue, which the registration timeout does
        not bound."""
        index = self.table.index
        return len(index.unregistered) - index.count(*WAITING, TaskState.QUEUED)

    def _asks_held(self, now: float, waiting: int) -> bool:
        """Whether the RM said, within REASK_S, that it holds asks for as many containers
        as tasks wait: none was lost, they wait for the queue. Asked again, a request would
        give up what YARN reserved for it on a node, and its place to a younger job."""
        heard = self.core.pending_heard
        return heard is not None and now - heard[0] <= REASK_S and heard[1] >= waiting

    def _not_given(self) -> list[Task]:
        """Tasks whose container YARN has not given yet, as far as the job knows."""
        return self.table.index.waiting()

    def check(self, now: float) -> EndJob | None:
        """A deadline passed: what it ends, asks again or judges."""
        end = self.rules.judge_killed_scripts(now) or self.rules.judge_settled_failures(now)
        if end is not None:
            return end
        plan = self.plan
        if plan.deadline_s and now >= self.core.started_at + plan.deadline_s:
            return EndJob(JobState.FAILED, f"The job ran past its deadline of "
                          f"{plan.deadline_s:.0f} s ({DEADLINE.key}) and was "
                          "stopped.")
        if self.core.state == JobState.EVALUATING:
            if self.evaluation_deadline is not None and now >= self.evaluation_deadline:
                return EndJob(JobState.SUCCEEDED, self.core.success(
                    f"The evaluator did not finish the last checkpoint within "
                    f"{plan.evaluation_timeout_s:.0f} s ({EVALUATION_TIMEOUT.key}) "
                    "and was stopped."))
            return None  # the TensorFlow tasks are gone: nothing else to wait for
        waiting = self._not_given()
        if waiting and now < self.allocation_deadline:
            held = self._asks_held(now, len(waiting))
            due = [task for task in waiting if now >= task.requested_at + REASK_S]
            if held and due:
                log.info("%d task(s) wait their turn: the ResourceManager holds their asks "
                         "(not asked again)", len(due))
            for task in due:
                if held:  # waiting its turn, not lost: asked again, it would lose it
                    self.table.still_asked(task, now)
                else:
                        self.ask_again(task, now, f"no container after "
                                       f"{now - task.requested_at:.0f} s; asking YARN again")
        # given back while the rest could not come: waiting for the queue too
        waiting += self.table.index.in_state(TaskState.QUEUED)
        if waiting and now >= self.allocation_deadline:
            lines = [f"YARN did not allocate {len(waiting)} container(s) within "
                     f"{plan.allocation_timeout_s:.0f} s ({ALLOCATION_TIMEOUT.key}):"]
            lines += [f"  {t.name}: {describe_request(plan, t)}" for t in waiting]
            return EndJob(JobState.FAILED, "\n".join(lines))
        if self._given_unregistered() and now >= self.registration_deadline:
            missing = [t for t in self.table.index.unregistered.values()
                       if not t.state.waiting and t.state != TaskState.QUEUED]
            lines = [f"Tasks did not register within {plan.registration_timeout_s:.0f} s "
                     f"({REGISTRATION_TIMEOUT.key}): {len(missing)} of "
                     f"{self.table.index.live()} missing."]
            lines += [f"  {t.name}: {describe_unregistered(t)}" for t in missing]
            return EndJob(JobState.FAILED, "\n".join(lines))
        return None

    def ask_again(self, task: Task, now: float, why: str) -> None:
        """Withdraw a request YARN has not met (it may have lost it, or its placement was
        relaxed) and make it anew."""
        log.info("%s: %s", task.name, why)
        self.core.drop(task.container, now, "withdrawn: asked again")
        self.core.actions.append(Kill(task.container))  # skein withdraws a pending request
        task.asked_again = True
        self.core.request(task, now)

    def heard(self, now: float, beats: dict[str, bytes]) -> EndJob | None:
        """A task silent past the timeout is lost."""
        self.next_liveness_check = now + self.plan.heartbeat_interval_s
        self.table.hear(beats, now)
        for container, task, silent_s in self.table.silent(now, self.plan.heartbeat_timeout_s):
            self.table.forget(container)
            if self.table.by_container.get(container) is task and not task.state.ended:
                end = self.rules.lost(task, silent_s, now)
                if end is not None:
                    return end
        return None
