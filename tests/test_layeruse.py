"""Which environment layers `tfyarn env prune` deletes (tfyarn/submission/layeruse.py)."""

from __future__ import annotations

from appmaster.common.storage import RemoteFile
from tfyarn.submission.layeruse import DAY_S, plan, uses_of

NOW = 1_800_000_000.0


def files(*entries: tuple[str, int, float, str]) -> dict[str, RemoteFile]:
    """(path, length, days ago, owner) -> the listing RemoteDir.list_files gives."""
    return {path: RemoteFile(path, length, int((NOW - days * DAY_S) * 1000), 0o644, owner)
            for path, length, days, owner in entries}


def test_a_layer_is_used_when_its_record_or_any_marker_says_so() -> None:
    listing = files(("ann/layer-a.tar", 100, 50, "ann"), ("ann/layer-a.tar.json", 10, 50, "ann"),
                    ("bob/.used/ann/layer-a.tar", 0, 3, "bob"),
                    ("bob/.used/cid/layer-a.tar", 0, 1, "bob"),  # cid's layer, not ann's
                    ("ann/layer-x.tar", 100, 50, "ann"))  # no record: never listed
    uses = uses_of(listing, "ann", "ann/")
    assert list(uses) == ["ann/layer-a.tar"]
    assert sorted((u.user, round((NOW - u.at) / DAY_S)) for u in uses["ann/layer-a.tar"]) == [
        ("ann", 50), ("bob", 3)]


def test_old_layers_go_recent_and_running_ones_stay_with_the_bytes_they_hold() -> None:
    listing = files(("layer-old.tar", 1000, 40, "me"), ("layer-old.tar.json", 20, 40, "me"),
                    ("layer-new.tar", 2000, 1, "me"), ("layer-new.tar.json", 20, 1, "me"),
                    ("layer-job.tar", 4000, 8, "me"), ("layer-job.tar.json", 20, 8, "me"),
                    ("env.tar.gz", 8000, 400, "me"))  # not a layer
    running = {"me": NOW - 8 * DAY_S + 30}  # a job of mine, 30 s after its submit used it
    pruning = plan(listing, "me", "", 7, running, NOW)
    assert pruning.delete == [("layer-old.tar", 1020)]
    assert pruning.bytes_freed == 1020
    assert pruning.kept_recent == ["layer-new.tar"]
    assert pruning.kept_running == ["layer-job.tar"]
    assert [p for p, _ in plan(listing, "me", "", 7, {}, NOW).delete] == [
        "layer-job.tar", "layer-old.tar"]


def test_another_writers_layers_are_never_in_the_plan() -> None:
    listing = files(("me/layer-a.tar", 1, 90, "me"), ("me/layer-a.tar.json", 1, 90, "me"),
                    ("bob/layer-b.tar", 1, 90, "bob"), ("bob/layer-b.tar.json", 1, 90, "bob"))
    assert plan(listing, "me", "me/", 7, {}, NOW).delete == [("me/layer-a.tar", 2)]


def test_a_use_recorded_today_is_not_recorded_again() -> None:
    """A day's later submits make no call: here none could answer (nothing listens)."""
    import time

    from appmaster.common.storage import RemoteDir
    from tfyarn.submission.layeruse import record

    now_ms = int(time.time() * 1000)
    known = {"layer-a.tar.json": RemoteFile("layer-a.tar.json", 10, now_ms - 3_600_000),
             "me/.used/ann/layer-b.tar": RemoteFile("me/.used/ann/layer-b.tar", 0, now_ms)}
    lines: list[str] = []
    started = time.monotonic()
    record(RemoteDir("hdfs://127.0.0.1:1/home"), "me", ["layer-a.tar"], False, known,
           lines.append)
    record(RemoteDir("hdfs://127.0.0.1:1/shared"), "me", ["ann/layer-b.tar"], True, known,
           lines.append)
    assert lines == [] and time.monotonic() - started < 1
