"""Unit tests for the pure parts of the job view: log framing, progress counts, exports."""

from __future__ import annotations

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.page.view import JobView
from appmaster.page.webpage import render_page, slider_exports
from tfyarn.watch import jobview
from tfyarn.watch.jobview import format_progress, format_table, parse_log_dump, role_counts

DUMP = """Container: container_1_0001_01_000005 on 127.0.0.2:8144
LogAggregationType: LOCAL
====================================================================
LogType:worker-1.stdout
LogLastModifiedTime:Sat Nov 21 01:23:06 +0000 2026
LogLength:817
LogContents:
step 1 loss 2.9424
step 138 loss 1.1041
End of LogType:worker-1.stdout.This log file belongs to a running container.
***********************************************************************
"""


def task(role: str, index: int, state: str, address: str | None = None) -> dict:
    return {"role": role, "index": index, "state": state, "address": address,
            "container": f"{role}_{index}", "yarn_container_id": f"container_{role}{index}",
            "node": "127.0.0.2:8144", "restarts": 0, "exit_code": None, "log_url": None}


VIEW = {
    "app_id": "application_1_0001", "name": "demo", "state": "RUNNING", "generation": 1,
    "updated": 1000, "tensorboard_url": None, "restarts": ["worker 0 replaced (attempt 1)"],
    "phases": {"all started": 1.5}, "cluster_spec": {"ps": ["h:1"]},
    "tasks": [task("ps", 0, "running", "h:1"), task("chiefworker", 0, "registered", "h:2"),
              task("worker", 0, "started"), task("worker", 1, "requested")],
}


def test_parse_log_dump_keeps_only_the_contents() -> None:
    chunk = parse_log_dump(DUMP)
    assert chunk.length == 817
    assert chunk.text == "step 1 loss 2.9424\nstep 138 loss 1.1041"


def test_parse_log_dump_of_something_else() -> None:
    assert parse_log_dump("<html>not found</html>").length == 0


def typed(view: dict) -> JobView:
    """A view as the CLI reads it back from the AppMaster's JSON."""
    return JobView.from_dict({"app_id": "application_1_0001", "name": "demo",
                              "state": "RUNNING", **view})


def test_role_counts_are_cumulative_stages() -> None:
    counts = role_counts(typed(VIEW))
    assert counts["ps"] == {"requested": 1, "allocated": 1, "registered": 1, "running": 1,
                            "finished": 0}
    assert counts["chiefworker"]["registered"] == 1 and counts["chiefworker"]["running"] == 0
    assert counts["worker"] == {"requested": 2, "allocated": 1, "registered": 0, "running": 0,
                                "finished": 0}
    assert format_progress(typed(VIEW)).startswith("RUNNING gen 1: ps 1/1/1/1/0")


def test_tasks_stopped_at_the_end_are_counted_and_shown() -> None:
    """The master marks tasks it ended itself "stopped": every reader knows the state."""
    view = typed({**VIEW, "state": "SUCCEEDED", "tasks": [
        {**task("ps", 0, "stopped", "h:1"), "stopped_in": "running"},
        task("chiefworker", 0, "finished", "h:2")]})
    assert role_counts(view)["ps"] == {"requested": 1, "allocated": 1, "registered": 1,
                                       "running": 1, "finished": 0}
    assert format_table(view).splitlines()[1].split()[:3] == ["ps", "0", "stopped"]


def test_table_has_a_row_per_task() -> None:
    lines = format_table(typed(VIEW)).splitlines()
    assert lines[0].split()[:4] == ["ROLE", "IDX", "STATE", "HOST:PORT"]
    assert len(lines) == 5 and lines[2].split()[:4] == ["chiefworker", "0", "registered", "h:2"]


def test_slider_exports_shape() -> None:
    exports = slider_exports(VIEW, "ps")
    assert exports["entries"] == {"ps": [{"value": "h:1", "containerId": "container_ps0",
                                          "tag": "0", "level": "component",
                                          "updatedTime": 1000}]}
    assert slider_exports(VIEW, "worker")["entries"] == {"worker": []}  # none exported yet


def test_page_escapes_and_lists_restarts() -> None:
    page = render_page({**VIEW, "name": "<b>demo</b>"})
    assert "&lt;b&gt;demo&lt;/b&gt;" in page and "<b>demo</b>" not in page
    assert "worker 0 replaced (attempt 1)" in page


def test_cluster_spec_flags_and_tf_config() -> None:
    spec = ClusterSpec(ps=("p:1",), chief=("c:2",), workers=("w:3", "w:4"))
    assert spec.flags("worker", 1, "/w") == [
        "--ps_hosts=p:1", "--worker_hosts=c:2,w:3,w:4", "--job_name=worker", "--task_index=2",
        "--work_dir=/w"]
    assert spec.flags("chiefworker", 0)[2:] == ["--job_name=worker", "--task_index=0"]
    assert spec.tf_config("worker", 1) == {
        "cluster": {"chief": ["c:2"], "worker": ["w:3", "w:4"], "ps": ["p:1"]},
        "task": {"type": "worker", "index": 1}}
    assert ClusterSpec.from_json(spec.to_json()) == spec
    no_ps = ClusterSpec(chief=("c:2",), workers=("w:3",))
    assert "ps" not in no_ps.tf_config("chiefworker", 0)["cluster"]


def test_storage_lines_say_where_checkpoints_are_and_how_fresh() -> None:
    mirror = {"interval_s": 10.0, "last_sync": 1000.0, "last_checkpoint": "checkpoints/ckpt-50",
              "restored": None, "error": None, "failing_since": None, "warning": None}
    view = {"work_dir": "hdfs://nn:8020/user/a/tfyarn/jobs/app_1", "tasks": [
        {"role": "chiefworker", "index": 0, "state": "running", "restarts": 1,
         "mirror": {**mirror, "restored": "checkpoints/ckpt-40"}},
        {"role": "ps", "index": 0, "state": "running", "restarts": 0, "mirror": None},
    ]}
    lines = jobview.storage_lines(typed(view), now=1004.0)
    assert lines[0] == "Work dir: hdfs://nn:8020/user/a/tfyarn/jobs/app_1"
    assert "  chiefworker 0 mirrors its local dir every 10 s: synced 4 s ago, newest checkpoint " \
           "on HDFS checkpoints/ckpt-50" in lines
    assert "  chiefworker 0 started from checkpoints/ckpt-40 (restored from HDFS)" in lines
    failing = {**mirror, "error": "NameNode down", "failing_since": 990.0,
               "warning": "split checkpoint"}
    view["tasks"][0]["mirror"] = failing
    lines = jobview.storage_lines(typed(view), now=1004.0)
    assert "  chiefworker 0: mirroring failing for 14 s (retrying): NameNode down" in lines
    assert "  chiefworker 0: WARNING split checkpoint" in lines
    assert jobview.storage_lines(typed({"tasks": []}), now=0) == []


def test_the_task_table_says_when_each_agent_was_last_heard() -> None:
    view = {"tasks": [{"role": "worker", "index": 0, "state": "running", "silent_s": 2.4},
                      {"role": "ps", "index": 0, "state": "requested", "silent_s": None}],
            "lost_nodes": ["127.0.0.2"], "heartbeat_timeout_s": 30}
    view = typed(view)
    table = format_table(view).splitlines()
    assert "HEARD" in table[0] and "2s ago" in table[1] and "2s ago" not in table[2]
    assert jobview.liveness_lines(view) == [
        "Lost hosts (a task there was silent for more than 30 s; replacements go elsewhere): "
        "127.0.0.2"]


def test_training_progress_and_the_last_evaluation_are_shown() -> None:
    view = typed({**VIEW, "progress": {
        "step": 1200, "steps_per_s": 41.5, "updated": 990.0,
        "scalars": {"checkpoints/loss": 0.25},
        "evaluation": {"step": 1100, "scalars": {"eval/accuracy": 0.9125}, "updated": 980.0}}})
    assert jobview.progress_lines(view, now=1000.0) == [
        "Training: global step 1200 (41.5 steps/s), 10 s ago: checkpoints/loss 0.25",
        "Last evaluation (checkpoint step 1100): eval/accuracy 0.9125"]
    assert format_progress(view).endswith("step 1200 (41.5 steps/s)")
    assert jobview.progress_lines(typed(VIEW), now=0) == []


def big_view(workers: int = 40) -> JobView:
    """A job past SMALL_JOB tasks, training: a few of its tasks need a look."""
    tasks = [task("ps", 0, "running", "h:1"), task("chiefworker", 0, "running", "h:2")]
    tasks += [task("worker", i, "running", f"h:{10 + i}") for i in range(workers)]
    tasks[3] = {**tasks[3], "state": "requested", "restarts": 1,
                "verdicts": {"lost": 1}}  # worker 1: lost, asked for again
    tasks[4] = {**tasks[4], "state": "failed", "restarts": 2, "exit_code": 1,
                "verdicts": {"failed": 2}}  # worker 2: dropped
    tasks[5] = {**tasks[5], "state": "allocated", "address": None}  # worker 3: slow
    tasks[6] = {**tasks[6], "verdicts": {"preempted": 1}, "restarts": 1}  # worker 4: back
    return typed({**VIEW, "tasks": tasks})


def test_a_large_job_shows_counts_then_only_the_tasks_needing_attention() -> None:
    view = big_view()
    text = jobview.format_status(view)
    lines = text.splitlines()
    assert lines[0].split() == ["ROLE", "TASKS", "REQUESTED", "ALLOCATED", "RUNNING", "FAILED"]
    assert lines[1].split() == ["ps", "1", "-", "-", "1", "-"]
    assert lines[3].split() == ["worker", "40", "1", "1", "37", "1"]
    assert "Needing attention (4 of 42 tasks" in text
    listed = lines[lines.index(next(x for x in lines if x.startswith("Needing"))) + 2:]
    rows = {line.split()[1]: line for line in listed}
    assert set(rows) == {"1", "2", "3", "4"}  # the 37 others, all well, are left out
    assert "starting again (attempt 1)" in rows["1"] and "ends: lost 1" in rows["1"]
    assert rows["2"].split()[2] == "failed" and "ends: failed 2" in rows["2"]
    assert "not registered yet (allocated) while others run" in rows["3"]
    assert "ends: preempted 1" in rows["4"]


def test_status_filters_and_all_show_rows() -> None:
    view = big_view()
    assert len(jobview.format_status(view, show_all=True).splitlines()) == 43  # header + 42
    assert jobview.format_status(view, show_all=True) == format_table(view)
    ps = jobview.format_status(view, role="ps").splitlines()
    assert len(ps) == 2 and ps[1].split()[:3] == ["ps", "0", "running"]
    failed = jobview.format_status(view, state="failed").splitlines()
    assert [line.split()[:2] for line in failed[1:]] == [["worker", "2"]]
    assert failed[0].split()[-1] == "WHY"
    assert len(jobview.format_status(view, role="worker", state="running").splitlines()) == 38
    assert jobview.format_status(view, role="evaluator") == "No task matches."


def test_a_small_job_still_shows_every_task_and_a_quiet_large_one_says_so() -> None:
    assert jobview.format_status(typed(VIEW)) == format_table(typed(VIEW))
    quiet = typed({**VIEW, "tasks": [task("worker", i, "running", f"h:{i}") for i in range(30)]})
    text = jobview.format_status(quiet)
    assert "No task needs attention (30 tasks" in text and len(text.splitlines()) == 4
