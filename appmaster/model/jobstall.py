"""The stall watchdog: the job's rule on its tasks' training steps (site.global.stall.timeout).

A running task's steps (appmaster/model/stall.py's :class:`StepTrack`) come from its
processes or the chief's summaries. When some stand still past the timeout, the watchdog
fires: every process of every task of the generation is asked for its threads' stacks
(:class:`DumpStacks`), and :data:`STACKS_GRACE_S` later the tasks behind (the lowest step
among the stalled) that are still stalled are judged: each a failure with the verdict
"stalled" (jobfailures.py), which replaces it, or restarts its group. A step is stamped when
its agent's report comes, and each agent reads its processes' steps on its own beat
(site.global.progress.interval): a rank that stopped first may be heard last. So the tasks
within one report interval (and a second) of the timeout count as stalled with the first
ones, when the watchdog fires and when it judges. An object handed the
job's core and its failure rules, as the deadlines are; time is what the master passes in.
"""

from __future__ import annotations

import logging

from appmaster.common import frameworks
from appmaster.common.settings import STALL_TIMEOUT
from appmaster.common.vocabulary import TaskState
from appmaster.model import stall
from appmaster.model.jobactions import DumpStacks, EndJob
from appmaster.model.jobcore import JobCore
from appmaster.model.jobfailures import FailureRules
from appmaster.model.jobtasks import Key, Task

log = logging.getLogger("tfyarn.master")

# The processes write their stacks within milliseconds of the agent's signal; the agents
# hear the request at once (a long poll): their containers are ended this much later.
STACKS_GRACE_S = 3.0
REPORT_LAG_S = 1.0  # a report's way to the master, beyond the agent's reading beat


class Watchdog:
    def __init__(self, core: JobCore, rules: FailureRules) -> None:
        self.core = core
        self.table = core.table
        self.rules = rules
        self.firing: tuple[float, list[Key]] | None = None  # (judged at, the tasks behind)
        self.last_fired = ""  # what status says of its last firing
        self.heard_any = False
        self.fired_generation = 0  # whether any task ever reported a step

    def timeout_s(self, key: Key) -> float:
        return self.core.plan.stall_timeout_for(key[0])

    def heard_late_timeout_s(self, key: Key) -> float:
        """The timeout less what a report of its step may lag behind the step itself."""
        return self.timeout_s(key) - self.core.plan.progress_interval_s - REPORT_LAG_S

    def heard(self, task: Task, step: int, now: float, summaries: bool = False) -> None:
        """A running task's step. ``summaries``: from the chief's event files, which count
        only while its processes report none of their own."""
        if task.state != TaskState.RUNNING or task.key not in self.table.tasks:
            return
        self.heard_any = True
        if task.steps is None or (task.steps_from_summaries and not summaries):
            task.steps, task.steps_from_summaries = stall.StepTrack.first(step, now), summaries
        elif task.steps_from_summaries == summaries:
            task.steps.heard(step, now)

    def tracks(self) -> dict[Key, stall.StepTrack]:
        """The running training tasks' steps, of those that reported one."""
        return {task.key: task.steps for task in self.table.index.in_state(TaskState.RUNNING)
                if task.steps is not None}

    def rates(self, now: float) -> dict[Key, float]:
        """The running tasks' step rates, of those with one yet."""
        return {key: rate for key, track in self.tracks().items()
                if (rate := track.rate(now)) is not None}

    def summary(self) -> str:
        """What status says of the watchdog: its last firing, or, once every task ran, that
        it has nothing to judge the job by (said after the job's end too)."""
        if self.last_fired:
            return f"last fired in generation {self.fired_generation}: {self.last_fired}"
        if "all running" in self.core.clock.marks and not self.heard_any:
            also = frameworks.of(self.core.plan.framework).steps_also_from
            return ("no progress signal: no task reports a training step "
                    f"(tfyarn.progress.report_step{f', or {also}' if also else ''}), so "
                    f"the stall watchdog ({STALL_TIMEOUT.key}) judges none")
        return ""

    def next_deadline(self) -> float | None:
        if self.firing is not None:
            return self.firing[0]
        return stall.next_stall_check(self.tracks(), self.timeout_s)

    def check(self, now: float) -> EndJob | None:
        """Fire on tasks stalled past the timeout; judge them once their stacks are out."""
        tracks = self.tracks()
        if self.firing is None:
            if stall.stalled(tracks, now, self.timeout_s):
                stopped = stall.stalled(tracks, now, self.heard_late_timeout_s)
                self._fire(stall.behind(tracks, stopped), tracks, now)
            return None
        judged_at, behind = self.firing
        if now < judged_at:
            return None
        self.firing = None
        generation = self.core.generation
        for key in behind:
            task = self.table.tasks.get(key)
            if (task is None or key not in tracks
                    or tracks[key].still_for(now) <= self.heard_late_timeout_s(key)):
                continue  # ended, moved or restarted meanwhile
            end = self.rules.stalled(task, tracks[key].still_for(now), now)
            if end is not None or self.core.generation != generation:
                return end  # the whole group restarts with it: the others with it
        return None

    def _fire(self, behind: list[Key], tracks: dict[Key, stall.StepTrack], now: float) -> None:
        names = ", ".join(f"{self.table.tasks[key].name} at step {tracks[key].step}"
                          for key in behind)
        self.last_fired = (f"stalled (no step for {self.timeout_s(behind[0]):.0f} s, "
                           f"{STALL_TIMEOUT.key}): {names}; every process's stacks "
                           "are in its stderr log")
        self.fired_generation = self.core.generation
        log.warning("generation %d %s", self.core.generation, self.last_fired)
        self.core.actions.append(DumpStacks(self.core.generation, self.last_fired))
        self.firing = (now + STACKS_GRACE_S, behind)
