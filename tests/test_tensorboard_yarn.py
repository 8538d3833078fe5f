"""The optional tensorboard component: served while the job runs, linked, ended with the job.

The job is tests/apps/light_task.py with --summaries: its chief writes real TensorFlow event
files (no TensorFlow to start) into train/ of its work dir, mirrored to the job's work dir on
HDFS, which the tensorboard component follows: TensorBoard's run "train". Its tasks run until
the test, done with the running job, creates the release file on HDFS. TensorBoard answers
only through YARN's proxy (appmaster/common/pageguard.py): a direct request gets 403 and the proxy's
URL."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import requests
from conftest import chromium
from jobtools import (
    TFYARN,
    ReleaseFile,
    app_state,
    prepare_light_job,
    task_processes,
    wait_for,
)

from appmaster.common.pageguard import FLAG_FILE

pytestmark = pytest.mark.yarn


def test_tensorboard_runs_beside_the_job_and_ends_with_it(yarn_cluster, tmp_path: Path):
    tensorboard = {"yarn.role.priority": "4", "yarn.component.instances": "1",
                   "yarn.memory": "1024", "yarn.vcores": "1"}
    release = ReleaseFile.fresh(yarn_cluster.layout)
    res, app = prepare_light_job(
        tmp_path, ["--sleep", "600", "--release_file", release.url, "--summaries"],
        settings={"checkpoint.mirror.interval": "2"}, components={"tensorboard": tensorboard})
    out = subprocess.run([*TFYARN, "submit", "--resources", str(res),
                          "--app-config", str(app), "--detach", "--json"],
                         env=yarn_cluster.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    submitted = json.loads(out.stdout)
    app_id, tracking = submitted["application_id"], submitted["tracking_url"]
    try:
        view = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                view = requests.get(f"{tracking}pages/tfyarn/tasks.json", timeout=5).json()
            except (requests.RequestException, ValueError):
                view = None
            if view and view.get("tensorboard_url"):
                break
            time.sleep(1)
        assert view and view["tensorboard_url"], f"no TensorBoard URL in the job view: {view}"
        # TensorBoard is not part of the TensorFlow cluster.
        assert "tensorboard" not in json.dumps(view["cluster_spec"] or {})

        # Through YARN's tracking URL (the RM proxy, then skein's UI, then the task's guard).
        runs = None
        for _ in range(90):  # TensorBoard takes a few seconds to start serving
            try:
                proxied = requests.get(f"{tracking}pages/tensorboard/data/runs", timeout=5)
                if proxied.ok and proxied.json():
                    runs = proxied.json()
                    break
            except (requests.RequestException, ValueError):
                pass
            time.sleep(1)
        assert runs == ["train"], f"TensorBoard did not find the job's summaries: {runs}"
        # Directly, at its own port, it answers only with where to go (issue 36).
        proxy_url = f"/proxy/{app_id}/pages/tensorboard/"
        for path in ("/", "/data/runs", "/data/plugin/scalars/tags"):
            direct = requests.get(view["tensorboard_url"] + path, timeout=5)
            assert direct.status_code == 403, (path, direct.status_code, direct.text[:300])
            assert proxy_url in direct.text, direct.text
        with chromium() as browser:  # the app itself, in a browser, through the proxy
            from selenium.webdriver.common.by import By

            browser.get(f"{tracking}pages/tensorboard/")
            # its app runs (its scripts came through the proxy) and lists the job's run
            wait_for("TensorBoard's app listing the run", lambda: browser.title == "TensorBoard"
                     and "train" in browser.find_element(By.TAG_NAME, "body").text, 90)

        status = subprocess.run([*TFYARN, "status", app_id],
                                env=yarn_cluster.env, capture_output=True, text=True, timeout=120)
        flags = next(yarn_cluster.layout.state_dir.glob(
            f"nm*/local/usercache/*/appcache/{app_id}/container_*/{FLAG_FILE}"))
        secret = flags.read_text().strip().removeprefix("--path_prefix=/")
        assert f"TensorBoard: {tracking}pages/tensorboard/" in status.stdout, status.stdout
        page = requests.get(f"{tracking}pages/tfyarn/", timeout=5).text
        assert re.search(r'href="\.\./tensorboard/"', page)
        assert view["tensorboard_url"] not in page  # no direct link: it would be refused
        # Its process, in this job's container, is what the end must take away.
        assert task_processes(app_id, "tensorboard.main")
        assert app_state(yarn_cluster, app_id) == "RUNNING"
    finally:
        release.touch()  # the chief and workers exit 0: the job ends
        deadline = time.monotonic() + 300
        while app_state(yarn_cluster, app_id) not in ("FINISHED", "FAILED", "KILLED"):
            assert time.monotonic() < deadline, f"{app_id} did not end"
            time.sleep(2)
    # It ends with the job: no TensorBoard process of this job is left.
    for _ in range(30):
        if not task_processes(app_id, "tensorboard.main"):
            break
        time.sleep(0.5)
    assert task_processes(app_id, "tensorboard.main") == []
    assert app_state(yarn_cluster, app_id) == "FINISHED"
    release.remove()
    # Its secret path is in no log, view or command line (only skein's UI was given it).
    logs = [p for p in (*yarn_cluster.layout.log_dir.rglob("*"), *yarn_cluster.layout.state_dir
                        .glob(f"nm*/containers/{app_id}/**/*")) if p.is_file()]
    assert len(secret) > 20 and logs
    leaks = [str(p) for p in logs if secret.encode() in p.read_bytes()]
    assert not leaks and secret not in status.stdout + json.dumps(view), leaks
