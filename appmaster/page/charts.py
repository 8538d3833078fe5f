"""Charts as inline SVG, drawn by the AppMaster: line charts over time with fault marks, and
the containers' timeline.

Why SVG written here and not a chart library: the page is served through YARN's proxy and
nodes often have no internet, so nothing may come from a CDN; the same markup goes into the
self-contained report, which must open from a file with no network; and a few hundred points
per chart need no more than a polyline. The page replaces the SVG with its region on refresh.
Only the standard library: this module runs inside YARN containers.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 460, 180
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 22, 30  # room for the y labels, title and x labels
PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#8250df")
MARK_COLOURS = {"replaced": "#bf8700", "restart": "#cf222e", "lost": "#24292f",
                "preempted": "#fb8500", "memory": "#8250df", "dropped": "#6e7781",
                "queue": "#0550ae", "stalled": "#953800"}
# A container's bar by how it ended; "running" while it runs.
OUTCOME_COLOURS = {"running": "#0969da", "finished": "#1a7f37", "failed": "#cf222e",
                   "memory-killed": "#8250df", "preempted": "#fb8500", "yarn-killed": "#fb8500",
                   "stalled": "#953800",
                   "lost": "#24292f"}
STOPPED_COLOUR = "#8c959f"  # stopped or withdrawn by tfyarn itself
WAITING_COLOUR = "#d0d7de"  # asked for, not started yet
STARTING_COLOUR = "#9ecbff"  # its agent runs, its script not yet
ROW_HEIGHT = 16


def esc(value: object) -> str:
    return html.escape(str(value))


def nice_step(span: float, ticks: int = 4) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks."""
    raw = span / max(1, ticks)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400)


def time_step(span: float, ticks: int = 5) -> float:
    return next((s for s in TIME_STEPS if s * ticks >= span), TIME_STEPS[-1])


def elapsed(seconds: float) -> str:
    """``m:ss`` under an hour, ``h:mm`` above: time since the job started."""
    seconds = max(0, int(round(seconds)))
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}"


def number(value: float) -> str:
    return f"{value:.4g}"


@dataclass
class Axis:
    """A value range drawn onto a pixel range."""

    low: float
    high: float
    start: float  # pixels
    end: float

    def at(self, value: float) -> float:
        span = self.high - self.low
        fraction = (value - self.low) / span if span else 0.5
        return round(self.start + fraction * (self.end - self.start), 1)


def value_axis(values: Sequence[float], start: float, end: float) -> Axis:
    low, high = min(values), max(values)
    if low == high:
        low, high = low - (abs(low) or 1) * 0.1, high + (abs(high) or 1) * 0.1
    pad = (high - low) * 0.05
    low = 0.0 if 0 <= low - pad < (high - low) else low - pad  # start at 0 when it is near
    return Axis(low, high + pad, start, end)


@dataclass
class Series:
    label: str
    points: list[tuple[float, float]]  # (x, y)


def line_chart(title: str, series: list[Series], x_range: tuple[float, float],
               marks: Sequence[Sequence] = (), time_axis: bool = True,
               chart_id: str = "") -> str:
    """A small chart: one polyline per series, fault marks as dashed verticals.

    With ``time_axis`` the x values are wall-clock seconds, labelled as time since
    ``x_range[0]``; otherwise plain numbers (a checkpoint's step).
    """
    drawn = [s for s in series if s.points]
    ident = f' id="{esc(chart_id)}"' if chart_id else ""
    head = (f'<svg class="chart"{ident} viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">'
            f'<text class="title" x="{LEFT}" y="14">{esc(title)}</text>')
    if not drawn:
        return (head + f'<text class="empty" x="{WIDTH / 2}" y="{HEIGHT / 2}" '
                'text-anchor="middle">no points yet</text></svg>')
    x = Axis(*x_range, LEFT, WIDTH - RIGHT)
    y = value_axis([v for s in drawn for _, v in s.points], HEIGHT - BOTTOM, TOP)
    parts = [head, _y_ticks(y), _x_ticks(x, time_axis), _marks(x, marks)]
    for colour, s in zip(PALETTE, drawn, strict=False):
        coords = " ".join(f"{x.at(px)},{y.at(py)}" for px, py in s.points)
        last_x, last_y = s.points[-1]
        parts.append(f'<polyline class="line" data-series="{esc(s.label)}" points="{coords}" '
                     f'fill="none" stroke="{colour}" stroke-width="1.6">'
                     f"<title>{esc(s.label)}: {number(last_y)} (last)</title></polyline>")
        if len(s.points) == 1:  # a lone point draws no line
            parts.append(f'<circle cx="{x.at(last_x)}" cy="{y.at(last_y)}" r="2.5" '
                         f'fill="{colour}"/>')
    if len(drawn) > 1 or drawn[0].label != title:
        parts.append(_legend([s.label for s in drawn]))
    return "".join(parts) + "</svg>"


def _y_ticks(y: Axis) -> str:
    step = nice_step(y.high - y.low)
    first = math.ceil(y.low / step) * step
    out = []
    value = first
    while value <= y.high + step * 1e-9:
        py = y.at(value)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py}" y2="{py}"/>'
                   f'<text class="tick" x="{LEFT - 4}" y="{py + 3.5}" text-anchor="end">'
                   f"{number(round(value, 12))}</text>")
        value += step
    return "".join(out)


def _x_ticks(x: Axis, time_axis: bool) -> str:
    span = x.high - x.low
    step = time_step(span) if time_axis else nice_step(span)
    value = x.low if time_axis else math.ceil(x.low / step) * step
    out = [f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{HEIGHT - BOTTOM}" '
           f'y2="{HEIGHT - BOTTOM}"/>']
    while value <= x.high + step * 1e-9:
        px = x.at(value)
        label = elapsed(value - x.low) if time_axis else number(value)
        out.append(f'<text class="tick" x="{px}" y="{HEIGHT - BOTTOM + 13}" '
                   f'text-anchor="middle">{label}</text>')
        value += step
    caption = "time since the job started" if time_axis else "checkpoint step"
    out.append(f'<text class="caption" x="{WIDTH - RIGHT}" y="{HEIGHT - 3}" '
               f'text-anchor="end">{caption}</text>')
    return "".join(out)


def _marks(x: Axis, marks: Sequence[Sequence]) -> str:
    out = []
    for at, kind, text in marks:
        if at is None or not x.low <= at <= x.high:
            continue
        px = x.at(at)
        out.append(f'<line class="mark mark-{esc(kind)}" x1="{px}" x2="{px}" y1="{TOP}" '
                   f'y2="{HEIGHT - BOTTOM}" stroke="{MARK_COLOURS.get(kind, "#6e7781")}" '
                   f'stroke-dasharray="3,2"><title>{esc(elapsed(at - x.low))} {esc(text)}'
                   "</title></line>")
    return "".join(out)


def _legend(labels: list[str]) -> str:
    out, px = [], WIDTH - RIGHT
    for colour, label in reversed(list(zip(PALETTE, labels, strict=False))):
        short = label.rsplit("/", 1)[-1][:18]
        px -= 14 + 6.2 * len(short)
        out.append(f'<rect x="{px:.1f}" y="6" width="9" height="9" fill="{colour}"/>'
                   f'<text class="legend" x="{px + 12:.1f}" y="14">{esc(short)}</text>')
    return "".join(out)


def mark_legend(kinds: Sequence[str]) -> str:
    """What each fault mark's colour means, for the kinds on the charts."""
    return "".join(f'<span class="mark-key"><i style="border-color:{MARK_COLOURS.get(k, "")}">'
                   f"</i>{esc(k)}</span>" for k in dict.fromkeys(kinds))


def timeline(rows: list[tuple[str, list[dict]]], x_range: tuple[float, float],
             marks: Sequence[Sequence] = ()) -> str:
    """A bar per container on a time axis, a row per task (a Gantt chart): grey while asked
    for, light blue while starting, then coloured by how it ended (blue: still running)."""
    # As wide as the page usually is, so its text is the size of the charts' text.
    label_w, height, width = 110, TOP + len(rows) * ROW_HEIGHT + BOTTOM, 1260
    x = Axis(*x_range, label_w, width - RIGHT)
    parts = [f'<svg class="timeline" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="containers over time" xmlns="http://www.w3.org/2000/svg">']
    for i, (task, spans) in enumerate(rows):
        top = TOP + i * ROW_HEIGHT
        parts.append(f'<g class="row" data-task="{esc(task)}" data-bars="{len(spans)}">'
                     f'<text class="tick" x="{label_w - 6}" y="{top + 11.5}" '
                     f'text-anchor="end">{esc(task)}</text>')
        parts += [_bar(span, x, top, x_range[1]) for span in spans]
        parts.append("</g>")
    axis_y = height - BOTTOM
    step = time_step(x.high - x.low, ticks=8)
    value = x.low
    parts.append(f'<line class="axis" x1="{label_w}" x2="{width - RIGHT}" y1="{axis_y}" '
                 f'y2="{axis_y}"/>')
    while value <= x.high + 1e-9:
        parts.append(f'<text class="tick" x="{x.at(value)}" y="{axis_y + 13}" '
                     f'text-anchor="middle">{elapsed(value - x.low)}</text>')
        value += step
    for at, kind, text in marks:
        if at is not None and x.low <= at <= x.high:
            px = x.at(at)
            parts.append(f'<line class="mark mark-{esc(kind)}" x1="{px}" x2="{px}" y1="{TOP - 4}"'
                         f' y2="{axis_y}" stroke="{MARK_COLOURS.get(kind, "#6e7781")}" '
                         f'stroke-dasharray="3,2"><title>{esc(text)}</title></line>')
    return "".join(parts) + "</svg>"


def _bar(span: dict, x: Axis, top: float, now: float) -> str:
    end = span["ended"] if span["ended"] is not None else now
    outcome = span["outcome"] or "running"
    colour = OUTCOME_COLOURS.get(outcome, STOPPED_COLOUR)
    pieces = [(span["asked"], span["started"] or end, WAITING_COLOUR)]
    if span["started"] is not None:
        pieces.append((span["started"], span["running"] or end, STARTING_COLOUR))
    if span["running"] is not None:
        pieces.append((span["running"], end, colour))
    rects = "".join(
        f'<rect x="{x.at(a)}" y="{top + 2}" width="{max(1.0, x.at(b) - x.at(a)):.1f}" '
        f'height="{ROW_HEIGHT - 4}" fill="{c}"/>' for a, b, c in pieces if b >= a)
    ended = f"ended {elapsed(end - x.low)}: {outcome}" if span["ended"] is not None else (
        "running")
    where = f" · {span['node']}" if span["node"] else ""
    title = (f"{span['task']} · {span['container']} · generation {span['generation']}{where}"
             f" · asked {elapsed(span['asked'] - x.low)} · {ended}")
    return (f'<g class="bar bar-{esc(outcome.split(":")[0].replace(" ", "-"))}">'
            f"<title>{esc(title)}</title>{rects}</g>")
