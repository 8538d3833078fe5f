"""The rules on a task's training steps: its step rate, whether it stalled, which ranks are
behind, which are stragglers. Pure: steps and the master's times in, answers out.

A task's steps come from its processes (``tfyarn.progress.report_step`` or the file it
writes, appmaster/agent/steps.py) or from the chief's TensorFlow summaries; the master
stamps each change with its own clock, so no host's clock matters.

- **Stalled**: a task whose step has not changed for the stall timeout, once its step
  moved in its current container (a second step after its first). Before that nothing is
  judged: graph building, data loading and compilation (which a step reported as it begins
  spends inside the first step) may take any time, and a script that reports no steps at
  all is never judged.
- **Behind**: of the stalled tasks, those at the lowest step: in a group that waits on one
  rank, the others are stopped in the next collective with a step as high or higher.
- **Straggler**: a task whose step rate over the last :data:`RATE_WINDOW_S` is below
  :data:`STRAGGLER_RATIO` of the median of its job's tasks that report steps (at least
  :data:`STRAGGLER_MIN_TASKS` of them). In a synchronous group every rank moves at the
  slowest one's pace, so only ranks that step on their own (a parameter-server job's
  workers) can show as stragglers; a slow rank of a group shows as the group slowing.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

K = TypeVar("K", bound=Hashable)  # a task's key, or its name

RATE_WINDOW_S = 60.0  # the step rate is over this much of the recent past
STRAGGLER_RATIO = 0.5  # a straggler steps at less than half the median rate
STRAGGLER_MIN_TASKS = 3  # a median of two says nothing about which one is slow


@dataclass
class StepTrack:
    """One task's steps in its current container: the newest and when it changed, and the
    samples of the rate's window (the master's time, the step)."""

    step: int
    changed_at: float
    samples: deque[tuple[float, int]] = field(default_factory=deque)

    @classmethod
    def first(cls, step: int, now: float) -> StepTrack:
        return cls(step, now, deque([(now, step)]))

    def heard(self, step: int, now: float) -> bool:
        """A report of ``step`` at ``now``: whether the step changed."""
        if step == self.step:
            return False
        self.step, self.changed_at = step, now
        self.samples.append((now, step))
        # keep one sample at or before the window's start: the rate's starting point
        while len(self.samples) > 1 and self.samples[1][0] <= now - RATE_WINDOW_S:
            self.samples.popleft()
        return True

    def rate(self, now: float) -> float | None:
        """Steps per second from the window's first sample to now; None until the track is
        a few seconds old (one report says nothing of a rate)."""
        start_at, start_step = self.samples[0]
        if now - start_at < 1.0 or len(self.samples) < 2:
            return None
        return max(0.0, (self.step - start_step) / (now - start_at))

    def still_for(self, now: float) -> float:
        return now - self.changed_at

    @property
    def moved(self) -> bool:
        """Whether its step changed since its first report: its first step is behind it."""
        return len(self.samples) > 1 or self.samples[0][1] != self.step


def stalled(tracks: Mapping[K, StepTrack], now: float, timeout: Callable[[K], float]) -> list[K]:
    """The tasks whose step moved, then stood still past their ``timeout``."""
    return [key for key, track in tracks.items()
            if track.moved and track.still_for(now) > timeout(key)]


def behind(tracks: Mapping[K, StepTrack], keys: list[K]) -> list[K]:
    """Of ``keys``, those at the lowest step."""
    if not keys:
        return []
    lowest = min(tracks[key].step for key in keys)
    return [key for key in keys if tracks[key].step == lowest]


def next_stall_check(tracks: Mapping[K, StepTrack],
                     timeout: Callable[[K], float]) -> float | None:
    """When the first of these tracks would be past its timeout, if none moves before."""
    return min((track.changed_at + timeout(key) for key, track in tracks.items()
                if track.moved), default=None)


def stragglers(rates: Mapping[K, float]) -> list[K]:
    """The tasks whose rate is below :data:`STRAGGLER_RATIO` of the median of ``rates``."""
    if len(rates) < STRAGGLER_MIN_TASKS:
        return []
    median = statistics.median(rates.values())
    if median <= 0:
        return []
    return [name for name, rate in rates.items() if rate < STRAGGLER_RATIO * median]
