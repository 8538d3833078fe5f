"""The failure window's count (appmaster/model/failurewindow.py), as Slider reset it: per
window from the job's start, each role's own."""

from __future__ import annotations

from appmaster.model.failurewindow import FailureWindow


def test_counts_start_again_each_window_from_the_start() -> None:
    window = FailureWindow(60.0, start=1000.0)
    assert [window.add("ps", t) for t in (1001.0, 1030.0, 1059.9)] == [1, 2, 3]
    assert window.add("worker", 1059.9) == 1  # each role its own
    assert window.add("ps", 1060.0) == 1 and window.count("worker", 1060.0) == 0
    assert window.add("ps", 1200.0) == 1  # windows skipped without failures count nothing
    assert window.resets_at(1200.0) == 1240.0


def test_a_window_of_zero_never_resets() -> None:
    window = FailureWindow(0.0, start=0.0)
    assert [window.add("ps", t) for t in (1.0, 1e6, 1e9)] == [1, 2, 3]
    assert window.resets_at(1e9) is None
