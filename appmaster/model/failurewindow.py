"""The failure window (Slider's ``yarn.container.failure.window.*``): every role's failure count
starts again at 0 each window, counted from the job's start, so that a long job is not failed
by a few failures spread over days. ``yarn.container.failure.threshold`` is judged against
the count in the current window; the job's totals (page, report) are kept beside it."""

from __future__ import annotations

from collections import Counter


class FailureWindow:
    """Failures per role in the current window; a window of 0 s never resets."""

    def __init__(self, window_s: float, start: float) -> None:
        self.window_s, self.start = window_s, start
        self.window = 0  # which window the counts are of, from the start
        self.counts: Counter[str] = Counter()

    def _index(self, now: float) -> int:
        return 0 if self.window_s <= 0 else max(0, int((now - self.start) // self.window_s))

    def _roll(self, now: float) -> None:
        index = self._index(now)
        if index != self.window:
            self.window, self.counts = index, Counter()

    def add(self, role: str, now: float) -> int:
        """One failure of ``role`` at ``now``: its count in the window ``now`` falls in."""
        self._roll(now)
        self.counts[role] += 1
        return self.counts[role]

    def count(self, role: str, now: float) -> int:
        self._roll(now)
        return self.counts[role]

    def resets_at(self, now: float) -> float | None:
        """When the window ``now`` falls in ends (None: never), for the messages."""
        if self.window_s <= 0:
            return None
        return self.start + (self._index(now) + 1) * self.window_s
