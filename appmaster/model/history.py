"""The job's history, bounded: training's curves, the evaluator's metrics, faults on the time
axis, and every container's life (the timeline).

The agents report progress every few seconds; the job page, the report and `tfyarn report`
draw it over time. A job may run for a week, so nothing here grows without limit:

- a curve keeps at most ``MAX_POINTS``; when full, its older half is thinned to every other
  point, so the recent past stays at full resolution and the distant past gets coarser;
- fault marks keep the newest ``MAX_MARKS``;
- container spans keep the newest ``MAX_SPANS`` (a 1,000-task job restarting as a whole adds
  1,000 per restart), dropping the oldest ended ones first.

Times are the job's monotonic clock; :meth:`History.to_dict` turns them into wall-clock
seconds for the view, with the offset the master measured once (so a time reads the same in
every view). Only the standard library: this module runs inside YARN containers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_POINTS = 720
MAX_MARKS = 400
MAX_SPANS = 4000
MAX_TAGS = 4  # scalar tags drawn per curve chart: the first ones seen, losses first
# Steps/s is a curve of its own (the step's rate), not one of the scalars drawn.
RATE_TAGS = ("global_step/sec", "steps_per_sec")


class Mark:
    """Kinds of fault marks, one colour each on the page."""

    REPLACED = "replaced"  # a worker got a new container
    RESTART = "restart"  # the whole cluster restarted as a new generation
    LOST = "lost"  # a task's host went silent, or YARN lost its node
    PREEMPTED = "preempted"  # YARN took a container back
    MEMORY = "memory"  # YARN killed a container for memory
    DROPPED = "dropped"  # a task left for good (failure policy ignore, evaluator)
    PLACEMENT = "placement"  # the cluster cannot place a role as its policy asks
    STALLED = "stalled"  # no training progress for the stall timeout: restarted
    QUEUE = "queue"  # part of the job could not come: what it held went back to the queue


@dataclass
class Curve:
    """Points in time order, bounded by thinning the older half when full."""

    max_points: int = MAX_POINTS
    points: list[list] = field(default_factory=list)

    def add(self, point: list) -> None:
        self.points.append(point)
        if len(self.points) > self.max_points:
            half = self.max_points // 2
            self.points = self.points[:half][::2] + self.points[half:]


@dataclass
class Span:
    """One container's life for one task: asked for, started, running, ended (and how)."""

    task: str
    generation: int
    container: str
    asked: float
    node: str | None = None
    started: float | None = None  # its agent ran
    running: float | None = None  # its script ran
    ended: float | None = None
    outcome: str | None = None  # finished, failed, preempted, lost, stopped...

    def to_dict(self, wall: Callable[[float | None], float | None]) -> dict:
        return {"task": self.task, "generation": self.generation, "container": self.container,
                "node": self.node, "asked": wall(self.asked), "started": wall(self.started),
                "running": wall(self.running), "ended": wall(self.ended),
                "outcome": self.outcome}


def chosen_tags(chosen: list[str], scalars: dict[str, float]) -> list[str]:
    """The tags a chart draws: those chosen so far, then new ones (losses first) up to
    MAX_TAGS. A tag once chosen stays, so a curve never changes meaning midway."""
    fresh = [tag for tag in scalars if tag not in chosen and not tag.endswith(RATE_TAGS)]
    fresh.sort(key=lambda tag: ("loss" not in tag.lower(), tag))
    return chosen + fresh[:max(0, MAX_TAGS - len(chosen))]


class History:
    def __init__(self) -> None:
        self.wall_offset = 0.0  # wall-clock minus monotonic seconds, set by the master
        self.training = Curve()  # [t, step, steps/s, {tag: value}]
        self.evaluations = Curve()  # [checkpoint step, {tag: value}, t]
        self.training_tags: list[str] = []
        self.evaluation_tags: list[str] = []
        self.marks: deque[tuple[float, str, str]] = deque(maxlen=MAX_MARKS)
        self.spans: dict[str, Span] = {}  # by container, oldest first
        self.dropped_spans = 0
        self.dropped_marks = 0

    # ------------------------------------------------------------ curves

    def on_training(self, now: float, progress: dict) -> None:
        """The chief's newest figures (appmaster/agent/tfevents.py's summary)."""
        scalars = progress.get("scalars") or {}
        self.training_tags = chosen_tags(self.training_tags, scalars)
        values = {tag: scalars[tag] for tag in self.training_tags if tag in scalars}
        point = [now, progress.get("step"), progress.get("steps_per_s"), values]
        last = self.training.points[-1] if self.training.points else None
        if last is None or last[1:] != point[1:]:
            self.training.add(point)

    def on_evaluation(self, now: float, progress: dict) -> None:
        """The evaluator's figures: a point per checkpoint it evaluated."""
        step = progress.get("evaluated_step")
        last = self.evaluations.points[-1] if self.evaluations.points else None
        if step is None or (last is not None and last[0] == step):
            return
        scalars = progress.get("scalars") or {}
        self.evaluation_tags = chosen_tags(self.evaluation_tags, scalars)
        values = {tag: scalars[tag] for tag in self.evaluation_tags if tag in scalars}
        self.evaluations.add([step, values, now])

    # ------------------------------------------------------------ faults

    def mark(self, now: float, kind: str, text: str) -> None:
        if len(self.marks) == self.marks.maxlen:
            self.dropped_marks += 1
        self.marks.append((now, kind, text))

    # ------------------------------------------------------------ containers

    def asked(self, container: str, task: str, generation: int, now: float) -> None:
        self.spans[container] = Span(task, generation, container, now)
        if len(self.spans) > MAX_SPANS:
            self._drop_oldest_ended()

    def started(self, container: str, node: str | None, now: float) -> None:
        if span := self.spans.get(container):
            span.started, span.node = now, node

    def running(self, container: str, now: float) -> None:
        if (span := self.spans.get(container)) and span.running is None:
            span.running = now

    def ended(self, container: str, outcome: str, now: float) -> None:
        """The job stopped counting on the container; the first word on how it ended stays."""
        if (span := self.spans.get(container)) and span.ended is None:
            span.ended, span.outcome = now, outcome

    def end_open(self, outcome: str, now: float) -> None:
        """Every container still open ends now (the application ends)."""
        for container in [c for c, span in self.spans.items() if span.ended is None]:
            self.ended(container, outcome, now)

    def _drop_oldest_ended(self) -> None:
        excess = len(self.spans) - MAX_SPANS
        for container in [c for c, s in self.spans.items() if s.ended is not None][:excess]:
            del self.spans[container]
            self.dropped_spans += 1

    # ------------------------------------------------------------ the view's part

    def to_dict(self) -> dict:
        """For the view: times as wall-clock seconds."""
        def wall(t: float | None) -> float | None:
            return None if t is None else round(t + self.wall_offset, 2)

        return {
            "training": [[wall(t), step, rate, values]
                         for t, step, rate, values in self.training.points],
            "training_tags": list(self.training_tags),
            "evaluations": [[step, values, wall(t)]
                            for step, values, t in self.evaluations.points],
            "evaluation_tags": list(self.evaluation_tags),
            "marks": [[wall(t), kind, text] for t, kind, text in self.marks],
            "spans": [span.to_dict(wall) for span in self.spans.values()],
            "dropped": {"spans": self.dropped_spans, "marks": self.dropped_marks},
        }
