"""Apache Slider's TensorFlow package as it shipped, on the local YARN (many hosts, HDFS).

The job files are the package's `resources.default.json` and `appConfig.default.json`
(examples/slider/), with only the HDFS URLs pointed at this cluster (`hdfs:///…`, the
default file system, instead of `hdfs://default/…`) and the Docker line removed: ps (2),
worker (5) and tensorboard (1), no chiefworker, so worker 0 is the chief. The script is
examples/slider/mnist.py, in the package's style: it gets exactly the package's six flags,
reads its TFRecords from --data_dir (YARN localized the HDFS data dir) and checkpoints into
--ckp_dir (mirrored to <prefix>/<application name>.<application id> on HDFS).

Run with -s to see what happened; times are printed, never asserted.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import wait_for_final_state
from jobtools import (
    EXAMPLES,
    TFYARN,
    cluster_user,
    refused,
    status_json,
    submit_and_wait,
)

from tfyarn.localyarn.proctable import Proc, scan_processes

pytestmark = pytest.mark.yarn

SLIDER = EXAMPLES / "slider"
G = "site.global."
DATA_KEY, PREFIX_KEY = G + "user.data.dir", G + "user.checkpoint.prefix"
CHECKPOINT_PATH = re.compile(r'^model_checkpoint_path: "(.*ckpt-(\d+))"$', re.MULTILINE)
SIX_FLAGS = ["--ps_hosts", "--worker_hosts", "--job_name", "--task_index", "--data_dir",
             "--ckp_dir"]


def remote(url: str):
    from appmaster.common.storage import RemoteDir

    return RemoteDir(url)


@pytest.fixture(scope="module")
def slider_data(yarn_cluster, tmp_path_factory) -> str:
    """The package's data dir on this cluster's HDFS, holding a small train.tfrecords made by
    the example itself; its URL."""
    local = tmp_path_factory.mktemp("mnist-data")
    subprocess.run([sys.executable, str(SLIDER / "mnist.py"), f"--make_data={local}",
                    "--examples=1000"], check=True, capture_output=True, timeout=300)
    url = f"{yarn_cluster.layout.default_fs}/user/{cluster_user()}/mnist-data"
    data = remote(url)
    data.make()
    with open(local / "train.tfrecords", "rb") as source:
        data.upload(source, "train.tfrecords")
    return url


def checkpoint_dir(yarn_cluster, name: str, app_id: str) -> str:
    prefix = f"{yarn_cluster.layout.default_fs}/user/{cluster_user()}/.slider/checkpoints"
    return f"{prefix}/{name}.{app_id}"


def hdfs_step(url: str) -> int | None:
    """The global step of the newest checkpoint the state file on HDFS names."""
    data = remote(url).read_bytes("checkpoint")
    match = CHECKPOINT_PATH.search(data.decode() if data else "")
    return int(match.group(2)) if match else None


def test_the_package_runs_as_shipped(yarn_cluster, slider_data: str) -> None:
    """2 ps, 5 workers and TensorBoard to SUCCEEDED; worker 0 is the chief; data from HDFS
    through --data_dir; every checkpoint, the last one included, on HDFS under
    <prefix>/<application name>.<application id>."""
    run = submit_and_wait(yarn_cluster, Path(), SLIDER / "resources.json",
                          SLIDER / "appConfig.json")
    print(f"[{run.app_id}] {run.seconds:.0f} s\n{run.output}")
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output, run.output

    url = checkpoint_dir(yarn_cluster, "tfyarn-mnist", run.app_id)
    result = json.loads(remote(url).read_bytes("result.json") or b"null")
    assert result, f"no result.json in {url}"
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in result["argv"])
    # The package's six flags, in its order, and nothing else (its script defines no other).
    assert [arg.split("=", 1)[0] for arg in result["argv"]] == SIX_FLAGS, result["argv"]
    assert (flags["job_name"], flags["task_index"]) == ("worker", "0")  # the chief
    assert len(flags["worker_hosts"].split(",")) == 5, flags  # only the workers
    assert len(flags["ps_hosts"].split(",")) == 2, flags
    assert flags["data_dir"].endswith("/data") and flags["ckp_dir"].endswith("/work"), flags
    assert "train.tfrecords" in result["data_files"], result
    # The other workers may train a few steps before the chief's first one (it initialises
    # the variables, then they go on while it sets up its hooks): no restart, no restore.
    assert result["global_step"] >= 200 and result["attempt"] == 0, result

    names = set(remote(url).list_files())
    step = hdfs_step(url)
    assert step is not None and step >= 200, (step, sorted(names))  # the last step's
    assert {f"model.ckpt-{step}.index", f"model.ckpt-{step}.data-00000-of-00001"} <= names
    assert any(n.startswith("events.out.tfevents") for n in names), names  # TensorBoard's

    shown = status_json(yarn_cluster, run.app_id)
    text, view = json.dumps(shown), shown["job"]
    assert url in text, f"tfyarn status does not say where the checkpoints are: {text[:2000]}"
    tasks = {(t["role"], t["index"]): t for t in view["tasks"]}
    assert set(tasks) == {("ps", 0), ("ps", 1), *(("worker", i) for i in range(5))}, tasks
    chief = tasks[("worker", 0)]
    assert chief["exit_code"] == 0 and chief["state"] == "finished", chief
    assert chief["mirror"] and chief["mirror"].get("last_checkpoint"), chief  # it mirrors
    assert view.get("tensorboard_url"), view  # the tensorboard component ran


def script_of(app_id: str, job_name: str, index: int) -> list[Proc]:
    """The training script of one task (its own forks excluded)."""
    procs = [p for p in scan_processes()
             if any(a.startswith("--ckp_dir=") and f"/{app_id}/" in a for a in p.argv)
             and p.flag("job_name") == job_name and p.flag("task_index") == str(index)]
    pids = {p.pid for p in procs}
    return [p for p in procs if p.ppid not in pids]


def wait_until(what: str, probe, timeout_s: float, poll_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while not (value := probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)
    return value


KILL_STEPS = 400


def test_killed_worker_0_restarts_from_the_hdfs_checkpoint(yarn_cluster, skein_client,
                                                          slider_data: str,
                                                          tmp_path: Path) -> None:
    """kill -9 worker 0 (the chief): a new generation restores from HDFS and goes on.

    The package's files with a smaller cluster (1 ps, 2 workers, no TensorBoard): the test
    above runs the package's whole layout; this one is about the chief's restart, which
    needs only a chief, another worker and a ps."""
    job = tmp_path / "job"
    job.mkdir()
    resources = json.loads((SLIDER / "resources.json").read_text())
    components = resources["components"]
    del components["tensorboard"]
    components["ps"]["yarn.component.instances"] = "1"
    components["worker"].update({"yarn.component.instances": "2",
                                 "yarn.container.failure.threshold": "1"})
    app = json.loads((SLIDER / "appConfig.json").read_text())
    # ~20 global steps a second with two workers: the kill (a checkpoint past step 0 seen on
    # HDFS, step 20 or so) comes well before the end, and generation 1 trains on to it.
    app["global"].update({G + "user.scripts.dir": str(SLIDER), G + "app.name": "slider-kill",
                          G + "checkpoint.mirror.interval": "2",
                          G + "user.scripts.args": [f"--train_steps={KILL_STEPS}",
                                                    "--step_sleep=0.1"]})
    (job / "resources.json").write_text(json.dumps(resources))
    (job / "appConfig.json").write_text(json.dumps(app))
    result = subprocess.run([*TFYARN, "submit", "--resources", str(job / "resources.json"),
                             "--app-config", str(job / "appConfig.json"), "--detach", "--json"],
                            env=yarn_cluster.env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    app_id = json.loads(result.stdout)["application_id"]
    url = checkpoint_dir(yarn_cluster, "slider-kill", app_id)
    try:
        step_at_kill = wait_until("a checkpoint past step 0 on HDFS",
                                  lambda: (hdfs_step(url) or 0) > 0, 240)
        step_at_kill = hdfs_step(url)
        victim = wait_until("worker 0's script", lambda: script_of(app_id, "worker", 0), 30)[0]
        os.kill(victim.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        report = wait_for_final_state(skein_client, app_id, timeout_s=400)
    finally:
        subprocess.run([*TFYARN, "kill", app_id], env=yarn_cluster.env, capture_output=True,
                       timeout=120)
    print(f"[{app_id}] worker 0 killed at HDFS checkpoint {step_at_kill}; the job ended "
          f"{time.monotonic() - killed_at:.1f} s later")
    assert str(report.final_status) == "SUCCEEDED", report.diagnostics
    assert ("worker 0 failed: cluster restarted as generation 1"
            in report.diagnostics), report.diagnostics
    result = json.loads(remote(url).read_bytes("result.json") or b"null")
    assert result and result["attempt"] == 1, result  # the new worker 0 wrote it
    assert result["first_global_step"] >= step_at_kill > 0, (step_at_kill, result)
    assert (hdfs_step(url) or 0) >= KILL_STEPS, hdfs_step(url)


# ---------------------------------------------------------------- bad input


def bad_job(tmp_path: Path, settings: dict | None = None,
            components: dict | None = None) -> tuple[Path, Path]:
    """The package's files in tmp_path, changed as asked (None deletes a key or component)."""
    resources = json.loads((SLIDER / "resources.json").read_text())
    for name, value in (components or {}).items():
        if value is None:
            resources["components"].pop(name)
    app = json.loads((SLIDER / "appConfig.json").read_text())
    app["global"][G + "user.scripts.dir"] = str(SLIDER)
    for key, value in (settings or {}).items():
        app["global"][G + key] = value
    (tmp_path / "resources.json").write_text(json.dumps(resources))
    (tmp_path / "appConfig.json").write_text(json.dumps(app))
    return tmp_path / "resources.json", tmp_path / "appConfig.json"


@pytest.mark.parametrize("key", ["user.data.dir", "user.checkpoint.prefix"])
def test_slider_hdfs_default_is_refused(yarn_cluster, slider_data: str, tmp_path: Path,
                                        key: str) -> None:
    """The package's hdfs://default/…: this cluster has no such name service."""
    files = bad_job(tmp_path, {key: "hdfs://default/user/${USER_NAME}/mnist-data"})
    message = refused(yarn_cluster, *files, G + key)
    assert "hdfs://default, which this cluster does not have" in message, message
    assert yarn_cluster.layout.default_fs in message, message


@pytest.mark.parametrize("where, problem", [
    ("missing", "no such directory"), ("empty", "the directory holds no files")])
def test_a_data_dir_without_data_is_refused(yarn_cluster, slider_data: str, tmp_path: Path,
                                            where: str, problem: str) -> None:
    home = f"{yarn_cluster.layout.default_fs}/user/{cluster_user()}"
    url = f"{home}/slider-test-{where}-{os.getpid()}"
    if where == "empty":
        remote(url).make()
    message = refused(yarn_cluster, *bad_job(tmp_path, {"user.data.dir": url}), DATA_KEY)
    assert problem in message and "hdfs dfs -put" in message, message


def test_a_checkpoint_prefix_the_user_cannot_write_is_refused(yarn_cluster, slider_data: str,
                                                              tmp_path: Path) -> None:
    env = {**yarn_cluster.env, "HADOOP_USER_NAME": "tfyarn-test-intruder"}
    prefix = f"{yarn_cluster.layout.default_fs}/user/{cluster_user()}/.slider/checkpoints"
    files = bad_job(tmp_path, {"user.checkpoint.prefix": prefix,
                               "user.data.dir": slider_data})
    message = refused(yarn_cluster, *files, PREFIX_KEY, env=env)
    assert "Permission denied: user=tfyarn-test-intruder" in message, message


def test_a_job_without_chiefworker_and_worker_is_refused(yarn_cluster, tmp_path: Path) -> None:
    files = bad_job(tmp_path, components={"worker": None})
    message = refused(yarn_cluster, *files, "components")
    assert "no chiefworker and no worker" in message, message
