"""When each start-up phase of a generation ended: requested, all started, all registered,
spec published, all running. The AppMaster logs them and puts them in YARN's diagnostics;
the benchmarks read them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger("tfyarn.master")


@dataclass
class PhaseClock:
    """When each start-up phase of a generation ended, for the log (and the benchmarks)."""

    requested_at: float = 0.0
    marks: dict[str, float] = field(default_factory=dict)

    def restart(self, now: float) -> None:
        self.requested_at, self.marks = now, {}

    def mark_once(self, phase: str, now: float) -> None:
        if phase not in self.marks:
            self.marks[phase] = now
            log.info("phase %s: %.3f s after the container requests", phase,
                     now - self.requested_at)

    def seconds(self) -> dict[str, float]:
        return {name: at - self.requested_at for name, at in self.marks.items()}

    def summary(self) -> str:
        order = ["all given", "all started", "all registered", "spec published",
                 "all running"]
        points = [("requested", self.requested_at)] + [
            (name, self.marks[name]) for name in order if name in self.marks
        ]
        pairs = zip(points, points[1:], strict=False)
        return "; ".join(f"{a} -> {b}: {tb - ta:.3f} s" for (a, ta), (b, tb) in pairs)
