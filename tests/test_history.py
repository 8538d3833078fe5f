"""The job's history (appmaster/model/history.py), its charts and timeline on the page, and the
report written from it, driven by the job's rules without YARN (tests/test_job.py's
Cluster). tests/test_page_yarn.py shows the same on a real job in Chromium."""

from __future__ import annotations

import html
import json
import re
import time
from pathlib import Path

from test_job import Cluster, evaluator_plan, nodes, plan, start_evaluator

from appmaster.common.clusterview import QueueStanding, Resources
from appmaster.model import history as history_module
from appmaster.model.history import MAX_POINTS, Curve, History, Mark, chosen_tags
from appmaster.page.jobpage import TIMELINE_ROWS, render_page, render_parts
from appmaster.page.report import HTML_FILE, JSON_FILE, ReportWriter, render_report
from appmaster.page.view import JobView, queue_line
from tfyarn.cli.jobs import LiveProgress


def progress(step: int, loss: float) -> dict:
    return {"step": step, "steps_per_s": 20.0, "scalars": {"loss": loss, "global_step/sec": 20.0}}


def train(cluster: Cluster, steps: int, start: int = 0) -> None:
    for n in range(steps):
        cluster.tick(5)
        cluster.job.on_status(cluster.container("chiefworker", 0),
                              progress=progress(start + 100 * (n + 1), 1 / (n + 1)),
                              now=cluster.now)


def view_of(cluster: Cluster) -> dict:
    # as the master sets it: the cluster's clock read as wall-clock time, now being now
    cluster.job.history.wall_offset = time.time() - cluster.now
    return JobView.of(cluster.job, "application_1_0001", "hdfs:///w", cluster.now).to_dict()


def test_a_curve_stays_bounded_and_keeps_the_recent_past_whole() -> None:
    curve = Curve(max_points=100)
    for n in range(10_000):
        curve.add([n])
    assert len(curve.points) <= 100
    assert curve.points[0] == [0]  # the start stays
    assert [p[0] for p in curve.points[-50:]] == list(range(9950, 10_000))
    gaps = [b[0] - a[0] for a, b in zip(curve.points, curve.points[1:], strict=False)]
    assert gaps == sorted(gaps, reverse=True)  # coarser the further back


def test_a_week_of_progress_keeps_the_history_small() -> None:
    history = History()
    for n in range(7 * 24 * 720):  # a report every 5 s for a week
        history.on_training(n * 5.0, progress(n, 1.0 / (n + 1)))
    assert len(history.training.points) <= MAX_POINTS
    assert len(json.dumps(history.to_dict())) < 100_000


def test_tags_chosen_losses_first_and_kept() -> None:
    assert chosen_tags([], {"accuracy": 1, "loss": 2, "global_step/sec": 3}) == ["loss",
                                                                               "accuracy"]
    many = {f"t{n}": n for n in range(9)}
    assert chosen_tags(["accuracy"], many) == ["accuracy", "t0", "t1", "t2"]


def test_only_the_chiefs_progress_makes_the_curve() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    train(cluster, 3)
    cluster.job.on_status(cluster.container("worker", 0), progress=progress(999, 9.0),
                          now=cluster.now)
    history = view_of(cluster)["history"]
    assert [p[1] for p in history["training"]] == [100, 200, 300]
    assert history["training_tags"] == ["loss"]
    assert abs(history["training"][-1][0] - time.time()) < 1  # wall-clock seconds


def test_a_replaced_worker_has_two_bars_and_a_mark() -> None:
    cluster = Cluster(plan(threshold=3))
    cluster.everyone_running()
    cluster.tick(10)
    cluster.exit("worker", 1, 1)
    cluster.settle()
    cluster.everyone_running()
    history = view_of(cluster)["history"]
    bars = [s for s in history["spans"] if s["task"] == "worker 1"]
    assert [(b["outcome"], b["ended"] is None) for b in bars] == [("failed", False),
                                                                   (None, True)]
    assert bars[0]["running"] < bars[0]["ended"] <= bars[1]["asked"]
    assert bars[1]["node"] == "nm1:8042"
    (mark,) = history["marks"]
    assert mark[1:] == [Mark.REPLACED, "worker 1 replaced (attempt 1)"]


def test_a_cluster_restart_stops_every_old_container() -> None:
    cluster = Cluster(plan(threshold=3))
    cluster.everyone_running()
    cluster.exit("ps", 0, 1)
    cluster.everyone_running()
    history = view_of(cluster)["history"]
    first = [s for s in history["spans"] if s["generation"] == 0]
    assert {s["task"]: s["outcome"] for s in first} == {
        "ps 0": "failed", "chiefworker 0": "stopped: generation 1 began",
        "worker 0": "stopped: generation 1 began", "worker 1": "stopped: generation 1 began"}
    assert all(s["ended"] is None for s in history["spans"] if s["generation"] == 1)
    assert [m[1] for m in history["marks"]] == [Mark.RESTART]


def test_memory_kills_and_preemptions_are_marked_as_such() -> None:
    cluster = Cluster(plan(threshold=3))
    cluster.everyone_running()
    cluster.yarn_end(cluster.container("worker", 0), "KILLED",
                     "Container killed on request. Exit code is 137\nContainer "
                     "[pid=1,containerID=c] is running 300MB beyond the 'PHYSICAL' memory "
                     "limit. Current usage: 1.3 GB of 1 GB physical memory used")
    cluster.everyone_running()
    cluster.yarn_end(cluster.container("worker", 1), "KILLED",
                     "Container preempted by scheduler")
    kinds = [m[1] for m in view_of(cluster)["history"]["marks"]]
    assert kinds == [Mark.MEMORY, Mark.PREEMPTED]
    outcomes = [s["outcome"] for s in view_of(cluster)["history"]["spans"] if s["outcome"]]
    assert outcomes == ["memory-killed", "preempted"]


def test_the_page_draws_curves_marks_and_a_timeline() -> None:
    cluster = Cluster(plan(threshold=3))
    cluster.everyone_running()
    train(cluster, 10)
    cluster.exit("worker", 1, 1)
    cluster.settle()
    cluster.everyone_running()
    train(cluster, 10, start=1000)
    regions = render_parts(view_of(cluster))["regions"]
    curves, timeline = regions["curves"], regions["timeline"]
    for chart in ("chart-step", "chart-rate", "chart-tag-0"):
        assert f'id="{chart}"' in curves
    points = re.search(r'id="chart-step".*?<polyline[^>]*points="([^"]+)"', curves).group(1)
    assert len(points.split()) == 20
    assert curves.count('class="mark mark-replaced"') == 3  # on each chart over time
    assert 'data-task="worker 1" data-bars="2"' in timeline
    assert 'data-task="worker 0" data-bars="1"' in timeline
    assert "bar-failed" in timeline and "bar-running" in timeline


def test_a_large_jobs_timeline_shows_the_tasks_where_something_happened() -> None:
    cluster = Cluster(plan(ps=10, workers=100, threshold=5))
    cluster.everyone_running()
    cluster.exit("worker", 77, 1)
    cluster.settle()
    cluster.everyone_running()
    timeline = render_parts(view_of(cluster))["regions"]["timeline"]
    rows = re.findall(r'data-task="([^"]+)"', timeline)
    assert len(rows) == TIMELINE_ROWS and "worker 77" in rows
    assert f"{111 - TIMELINE_ROWS} more tasks, one container each" in timeline


def test_no_empty_facts_and_no_mirror_cell_without_a_mirror() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    cluster.job.on_status(cluster.container("worker", 0), mirror={"remote": "hdfs:///w",
                                                                   "interval_s": 10})
    page = render_page(view_of(cluster))
    assert "lost nodes" not in page
    assert "nothing mirrored yet" not in page
    assert "col-mirror" not in page  # no task has mirrored or restored anything
    cluster.job.on_status(cluster.container("chiefworker", 0), mirror={
        "remote": "hdfs:///w", "interval_s": 10, "last_sync": time.time(), "files_up": 3,
        "bytes_up": 2048})
    assert "3 files (2 KB) up" in render_page(view_of(cluster))


def test_the_report_has_no_script_and_nothing_external() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    train(cluster, 5)
    report = render_report(view_of(cluster))
    assert "<script" not in report and "fetch(" not in report
    assert not re.search(r"<link|<img|<iframe|\bsrc=|url\(", report)  # nothing loaded
    assert 'id="chart-step"' in report and "Report of application_1_0001" in report


def test_the_writer_writes_when_the_view_changed_and_at_the_end(tmp_path: Path) -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()

    def view() -> dict:
        return {**view_of(cluster), "updated": int(time.time() * 1000)}

    writer = ReportWriter(str(tmp_path / "work"), view, "application_1_0001")
    assert writer.write(final=False)
    assert json.loads((tmp_path / "work" / JSON_FILE).read_text())["final"] is False
    train(cluster, 1)
    writer.final()
    record = json.loads((tmp_path / "work" / JSON_FILE).read_text())
    assert record["final"] and record["view"]["history"]["training"][0][1] == 100
    assert "chart-step" in (tmp_path / "work" / HTML_FILE).read_text()
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == [HTML_FILE, JSON_FILE]


def test_spans_stay_bounded(monkeypatch) -> None:
    monkeypatch.setattr(history_module, "MAX_SPANS", 50)
    history = History()
    for n in range(200):
        history.asked(f"c{n}", f"worker {n % 10}", 0, float(n))
        history.ended(f"c{n}", "failed", n + 0.5)
    history.asked("open", "worker 0", 0, 300.0)
    spans = history.to_dict()["spans"]
    assert len(spans) == 50 and spans[-1]["container"] == "open"
    assert history.dropped_spans == 151


def test_the_jobs_end_ends_every_open_container() -> None:
    cluster = Cluster(plan())
    cluster.everyone_running()
    cluster.exit("chiefworker", 0, 0)
    cluster.job.ended(cluster.end.status, cluster.now)
    outcomes = {s["task"]: s["outcome"] for s in view_of(cluster)["history"]["spans"]}
    assert outcomes == {"chiefworker 0": "finished", "ps 0": "stopped: the job succeeded",
                        "worker 0": "stopped: the job succeeded",
                        "worker 1": "stopped: the job succeeded"}


def test_the_evaluators_metrics_are_drawn_against_the_checkpoint_step() -> None:
    cluster = Cluster(evaluator_plan())
    evaluator = start_evaluator(cluster)
    cluster.everyone_running()
    for step in (100, 100, 200, 300):  # the same checkpoint reported twice: one point
        cluster.tick(5)
        cluster.job.on_status(evaluator, now=cluster.now, progress={
            "evaluated_step": step, "scalars": {"eval/accuracy": step / 400, "eval/loss": 1.0}})
    history = view_of(cluster)["history"]
    assert [p[0] for p in history["evaluations"]] == [100, 200, 300]
    assert history["evaluation_tags"] == ["eval/loss", "eval/accuracy"]
    curves = render_parts(view_of(cluster))["regions"]["curves"]
    assert 'id="chart-eval-1"' in curves and "checkpoint step" in curves


def test_the_wait_for_the_queue_is_on_the_page_the_report_and_the_wait_line() -> None:
    """What `submit --wait`, the page and the report say while a job waits: one of four
    containers given, and the queue as the AppMaster asked the RM."""
    cluster = Cluster(plan())
    standing = QueueStanding("root.default", "fifo", Resources(16384, 4), Resources(16384, 16),
                             Resources(16384, 16), ahead=1, others=1, accepted=0)
    cluster.apply(cluster.job.on_cluster(nodes(("nm1:1", "RUNNING", "", 16384)), standing,
                                         cluster.now))
    cluster.start("ps", 0)
    cluster.tick(30)
    view = view_of(cluster)
    wait = queue_line(view["queue"])
    assert wait.startswith("Waiting for the queue for 30 s: 1 of 4 containers given")
    assert wait.endswith(f". {standing.line()}")
    for page in (render_page(view), render_report(view)):
        assert f'<p class="queue">{html.escape(wait)}</p>' in page
    # the AppMaster's own word on the queue: `submit --wait` asks the RM nothing more
    assert LiveProgress(view["app_id"], tty=False).queue_text(view["app_id"],
                                                              view["queue"]) == wait
