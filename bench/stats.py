"""Summaries of repeated runs, and how figures are printed."""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def spread(values: Iterable[float | None]) -> tuple[float, float] | None:
    vals = [v for v in values if v is not None]
    return (min(vals), max(vals)) if vals else None


def rel(t: dict[str, float | None], a: str, b: str) -> float | None:
    """t[b] - t[a], or None when either is missing."""
    if t.get(a) is None or t.get(b) is None:
        return None
    return round(t[b] - t[a], 3)


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
