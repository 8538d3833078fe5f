"""The job page without YARN: what it renders from a view, and what its server answers."""

from __future__ import annotations

import json
import socket
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from jobtools import REPO

from appmaster.common.jobplan import PLAN_FILE
from appmaster.page import webpage
from appmaster.page.jobpage import mirror_text, render_page, render_parts, task_columns
from tfyarn.hadoop import skeinui
from tfyarn.jobconfig import load_job
from tfyarn.submission.appspec import application_spec
from tfyarn.submission.plan import AppSpecExtras, build_plan

TASK = {"role": "worker", "index": 1, "state": "running", "address": "h:3",
        "container": "worker_1", "yarn_container_id": "container_w1", "node": "n:8042",
        "restarts": 2, "exit_code": None, "log_url": "http://n:8042/node/containerlogs/c/u"}
VIEW = {
    "app_id": "application_1_0007", "name": "demo", "state": "RUNNING", "generation": 2,
    "updated": 1_700_000_000_000, "tasks": [TASK], "tensorboard": None,
    "tensorboard_url": "http://n:6006", "cluster_spec": {"worker": ["h:3"]},
    "restarts": ["worker 1 failed (exit 3): replaced"], "phases": {"all started": 1.25},
}


def test_known_parts_are_rendered() -> None:
    page = render_page(VIEW)
    assert ('<tr class="task-running" data-task="worker-1"><td class="col-task">worker 1</td>'
            '<td class="col-state">running</td>'
            '<td><a href="http://n:8042/node/containerlogs/c/u">logs</a></td>') in page
    assert 'href="../tensorboard/"' in page and 'href="http://n:6006"' not in page
    assert "worker 1 failed (exit 3): replaced" in page and "1.250 s" in page
    assert 'data-state="RUNNING"' in page and "<dd>2</dd>" in page  # the generation
    assert "http-equiv" not in page  # it refreshes itself in place, never by reloading
    assert "&quot;worker&quot;: [" in page  # the cluster spec
    assert "not published yet" in render_page({**VIEW, "cluster_spec": None})


def test_fields_added_later_are_shown() -> None:
    view = {**VIEW, "work_dir": "hdfs://nn/jobs/a", "global_step": 1200, "steps_per_s": 35.123,
            "metrics": {"loss": 0.2512345, "accuracy": 0.9}, "nothing": None,
            "tasks": [{**TASK, "step": 7}, {**TASK, "index": 2, "exit_code": 0}]}
    page = render_page(view)
    for text in ("<dt>work dir</dt><dd>hdfs://nn/jobs/a</dd>", "<dt>global step</dt><dd>1200</dd>",
                 "<dt>steps per s</dt><dd>35.12</dd>",
                 "<dt>metrics</dt><dd title=\"{&quot;loss&quot;: 0.2512345, &quot;accuracy&quot;: "
                 "0.9}\">loss 0.2512, accuracy 0.9</dd>",
                 "<th>container</th><th>step</th></tr>",
                 '<td class="col-step extra">7</td>', '<td class="col-step extra"></td>'):
        assert text in page, text
    assert "nothing" not in page
    assert task_columns(view["tasks"])[-1] == "step"
    assert task_columns([{**TASK, "mirror": None}]) == task_columns([TASK])  # no empty column


def test_mirror_is_summarised() -> None:
    now = VIEW["updated"] / 1000
    chief = {"remote": "hdfs://nn/jobs/a", "interval_s": 30.0, "last_sync": now - 12.4,
             "last_checkpoint": "hdfs://nn/jobs/a/model.ckpt-1200", "files_up": 14,
             "bytes_up": 3 * 1024 * 1024, "restored": None, "error": None,
             "failing_since": None, "warning": None}
    failing = {**chief, "last_sync": None, "files_up": 0, "error": "connection refused",
               "restored": "hdfs://nn/jobs/a/model.ckpt-900"}
    assert mirror_text(chief, now) == "synced 12 s ago · model.ckpt-1200 · 14 files (3 MB) up"
    assert mirror_text(failing, now) == ("failing: connection refused · model.ckpt-1200 · "
                                         "restored model.ckpt-900")
    assert mirror_text({"remote": "hdfs://nn/jobs/a"}, now) == "nothing mirrored yet"
    assert mirror_text({"files_up": 1, "bytes_up": 729}, now) == "1 file (729 B) up"
    page = render_page({**VIEW, "mirror": chief, "tasks": [{**TASK, "mirror": failing}]})
    assert "<dt>mirror</dt><dd title=" in page and "14 files (3 MB) up</dd>" in page
    assert "<th>mirror</th>" in page and "failing: connection refused" in page


def test_training_progress_is_a_fact_not_a_column() -> None:
    progress = {"step": 1200, "steps_per_s": 41.5, "scalars": {"checkpoints/loss": 0.25},
                "evaluation": {"step": 1100, "scalars": {"eval/accuracy": 0.9125}}}
    page = render_page({**VIEW, "progress": progress,
                        "tasks": [{**TASK, "progress": {"step": 1200}}]})
    assert ("step 1200 · 41.5 steps/s · loss 0.25 · evaluated step 1100: accuracy 0.9125"
            "</dd>") in page
    assert "<th>progress</th>" not in page  # the chief's figures are the job's


def test_text_is_escaped_everywhere() -> None:
    hostile = "<script>x</script>"
    view = {**VIEW, "name": hostile, "note": hostile, "restarts": [hostile],
            "tasks": [{**TASK, "address": hostile}]}
    page = render_page(view)
    assert page.count("<script>") == 1  # the page's own
    assert "&lt;script&gt;x&lt;/script&gt;" in page


def test_parts_are_the_page_regions() -> None:
    parts = render_parts(VIEW)
    assert parts["state"] == "RUNNING"
    page = render_page(VIEW)
    for name, fragment in parts["regions"].items():
        assert f'<div id="{name}">{fragment}</div>' in page, name


@pytest.fixture
def served() -> Iterator[str]:
    server = webpage.serve(lambda: VIEW)
    try:
        yield server.target
    finally:
        server.shutdown()


def test_server_answers_the_page_and_its_json(served: str) -> None:
    page = requests.get(served + "/", timeout=5)
    assert page.headers["Content-Type"].startswith("text/html") and "demo" in page.text
    parts = requests.get(served + "/parts.json", timeout=5)
    assert parts.headers["Content-Type"] == "application/json"
    assert parts.json() == json.loads(json.dumps(render_parts(VIEW)))
    assert parts.headers["Cache-Control"] == "no-store"
    assert requests.get(served + "/tasks.json", timeout=5).json() == VIEW
    assert requests.get(served + "/nothing", timeout=5).status_code == 404
    # skein's proxy appends to the target as it was given: a doubled slash is the same page.
    assert requests.get(served + "//parts.json", timeout=5).json() == parts.json()


def test_server_answers_only_loopback_and_its_secret_path(served: str) -> None:
    port = served.split(":")[2].split("/")[0]
    assert served.startswith("http://127.0.0.1:")
    assert requests.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 404
    assert requests.get(f"http://127.0.0.1:{port}/tasks.json", timeout=5).status_code == 404
    # Another address of this host is no way in: the server is bound to 127.0.0.1 only.
    with pytest.raises(requests.ConnectionError):
        requests.get(served.replace("127.0.0.1", "127.0.0.2"), timeout=5)
    # A peer from another loopback address (another "host" of the local cluster) is refused.
    with socket.create_connection(("127.0.0.1", int(port)), timeout=5,
                                  source_address=("127.0.0.9", 0)) as conn:
        conn.sendall(f"GET {served.split(port, 1)[1]}/ HTTP/1.0\r\n\r\n".encode())
        assert conn.makefile("rb").read().startswith(b"HTTP/1.0 403")  # read to the end


def test_job_page_url_is_under_the_tracking_url() -> None:
    assert (webpage.job_page_url("http://rm:8088/proxy/application_1_0007/")
            == "http://rm:8088/proxy/application_1_0007/pages/tfyarn/")


def test_skein_overview_gets_a_button_per_service_page(tmp_path: Path) -> None:
    written = skeinui.write_overview(tmp_path / skeinui.UI_DIR) / skeinui.TEMPLATE
    with zipfile.ZipFile(skeinui.SKEIN_JAR) as jar:
        original = jar.read(skeinui.TEMPLATE).decode()
    text = written.read_text()
    assert text.replace(skeinui.BUTTONS, "") == original  # skein's page, plus the buttons
    assert text.index(skeinui.BUTTONS) > text.index("</nav>")  # under the title bar


def test_the_appmaster_gets_the_overview_and_opens_java_util(tmp_path: Path) -> None:
    plan = build_plan(load_job(REPO / "resources.json", REPO / "appConfig.json"))
    spec = application_spec(plan, tmp_path, tmp_path / PLAN_FILE, AppSpecExtras())
    shipped = spec.master.files[skeinui.UI_DIR]
    assert str(shipped.type) == "ARCHIVE"  # unpacked by YARN as skein-ui/, on the class path
    with tarfile.open(shipped.source.replace("file://", "")) as pack:
        template = pack.extractfile(skeinui.TEMPLATE).read().decode()
    assert template.count(skeinui.BUTTONS) == 1
    options = spec.master.env["JAVA_TOOL_OPTIONS"].split()
    assert {"--add-opens=java.base/java.util=ALL-UNNAMED", skeinui.JVM_OPTION} <= set(options)
    assert not any(skeinui.UI_DIR in service.files for service in spec.services.values())


def test_when_each_agent_was_last_heard_sits_under_its_state() -> None:
    from appmaster.page.jobpage import heard_html, task_columns

    task = {"role": "ps", "index": 0, "state": "running", "silent_s": 2.4, "address": "h:1"}
    assert "silent_s" not in task_columns([task])  # no extra column: the table stays narrow
    assert heard_html(task) == '<br><small class="heard">2 s ago</small>'
    assert heard_html({**task, "silent_s": None}) == ""


def big_job(workers: int) -> dict:
    ps = [{**TASK, "role": "ps", "index": i, "container": f"ps_{i}"} for i in range(3)]
    tasks = ps + [{**TASK, "index": i, "container": f"worker_{i}"} for i in range(workers)]
    tasks[4] = {**tasks[4], "state": "failed"}
    return {**VIEW, "tasks": tasks}


def test_a_large_job_gets_counts_and_a_folding_table_per_role() -> None:
    from appmaster.page.jobpage import GROUP_OPEN_MAX, tasks_html

    region = tasks_html(big_job(GROUP_OPEN_MAX + 10))
    counts, _, table = region.partition('<div id="task-table">')
    assert counts.startswith('<table id="task-counts">')
    assert ('<tr data-role="worker"><td>worker</td><td class="num">60</td>'
            '<td class="num count-running">59</td><td class="num count-failed">1</td>') in counts
    # Every task keeps its row, its data-task and its columns, under #task-table.
    assert table.count("<tr class=\"task-") == 63 and 'data-task="worker-59"' in table
    assert '<tr class="task-failed" data-task="worker-1">' in table
    assert '<details class="task-group" id="tasks-ps" open><summary>ps: 3 tasks (3 running)' \
        in table
    # Past GROUP_OPEN_MAX a role's rows are folded away until the reader opens them.
    assert ('<details class="task-group" id="tasks-worker"><summary>worker: 60 tasks '
            "(59 running, 1 failed)</summary>") in table
    assert table.count('<td class="col-restarts">2</td>') == 63


def test_a_small_job_keeps_its_one_table() -> None:
    from appmaster.page.jobpage import SMALL_JOB, tasks_html

    region = tasks_html(big_job(SMALL_JOB - 3))
    assert region.startswith('<table id="task-table">') and "<details" not in region
    # The first <details> of the page stays the cluster spec's (the browser tests open it).
    page = render_page(big_job(SMALL_JOB - 3))
    assert page.index("<details>") < page.index("Cluster spec")
    assert "<details" not in page.split("<details>", 1)[0]
