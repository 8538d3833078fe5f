"""The queue tests' measure of a partial hold (tests/jobtools.py partial_holds), on spans as a
job's history records them."""

from __future__ import annotations

from jobtools import partial_holds

BACK = "given back: waiting for the queue"


def span(task: str, started: float | None, ended: float | None = None,
         outcome: str | None = None) -> dict:
    return {"task": task, "started": started, "ended": ended, "outcome": outcome}


def test_a_gang_given_whole_in_one_round_held_part_of_it_only_between_arrivals() -> None:
    spans = [span("chief", 0.0, 50.0, "finished"), span("w0", 3.0, 50.0, "finished"),
             span("w1", 7.0, 50.0, "finished")]
    assert partial_holds(spans, 3) == [(0.0, 3.0), (3.0, 7.0)]


def test_a_give_back_ends_the_stretch_and_the_next_round_starts_anew() -> None:
    spans = [span("chief", 0.0, 12.0, BACK), span("w0", 2.0, 12.0, BACK),
             span("chief", 30.0, 90.0, "finished"), span("w0", 31.0, 90.0, "finished"),
             span("w1", 32.0, 90.0, "finished")]
    assert partial_holds(spans, 3) == [(0.0, 2.0), (2.0, 12.0), (30.0, 31.0),
                                             (31.0, 32.0)]


def test_a_partial_hold_never_given_back_lasts_to_the_records_end() -> None:
    spans = [span("chief", 0.0), span("w0", 1.0), span("w1", None)]
    assert partial_holds(spans, 3)[-1] == (1.0, float("inf"))


def test_a_long_wait_before_the_last_container_is_a_long_stretch() -> None:
    """Kept past the hold, then given the rest: a check of the give-backs alone misses it."""
    spans = [span("chief", 0.0, 99.0, "finished"), span("w0", 1.0, 99.0, "finished"),
             span("w1", 80.0, 99.0, "finished")]
    assert max(b - a for a, b in partial_holds(spans, 3)) == 79.0
