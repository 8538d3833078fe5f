"""GPUs on the local YARN, as a GPU cluster without isolation gives them (no real GPU needed).

The gpu NodeManager runs YARN's GPU plugin, which discovers the node's GPUs by running a
stand-in `nvidia-smi` (tfyarn/localyarn/gpunode.py) replaying a recorded H100 node; its
containers find the same stand-in on their PATH and, as with YARN's DefaultContainerExecutor
on a real node, see every GPU of the node. tfyarn's agent gives each task its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from jobtools import (
    APPS,
    JobFiles,
    ReleaseFile,
    app_report,
    prepare_job,
    rm_node_id,
    run_tfyarn,
    status_json,
    submit_detached,
    task_processes,
)

from tfyarn.localyarn import cluster
from tfyarn.localyarn.layout import GPU_LABEL, GPUS_PER_GPU_NODE, Layout

pytestmark = pytest.mark.yarn

TIMEOUT_S = 240
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


def wait_until(what: str, probe, timeout_s: float = TIMEOUT_S, check=None) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if check is not None and (reason := check()):
            raise AssertionError(f"while waiting for {what}: {reason}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.5)


def gpu_nm(layout: Layout):
    return next(nm for nm in layout.node_managers if nm.partition == GPU_LABEL)


def discovered(layout: Layout) -> list[dict]:
    """The GPUs YARN's plugin discovered on the gpu node (its NodeManager's REST answer)."""
    nm = gpu_nm(layout)
    url = (f"http://{nm.host}:{layout.port(nm.webapp_port)}/ws/v1/node/resources/"
           "yarn.io%2Fgpu")
    answer = requests.get(url, headers={"Accept": "application/json"}, timeout=10).json()
    return answer["gpuDeviceInformation"]["gpu"]


def rm_gpu_total(layout: Layout) -> int:
    nm = gpu_nm(layout)
    node = next(n for n in cluster.nodes(layout) if n["id"] == rm_node_id(layout, nm))
    return cluster.node_gpus(node)[1]


def gpu_job(tmp_path: Path, release: ReleaseFile, worker_gpus: int = 1,
            ps_label: str = GPU_LABEL) -> tuple[Path, Path]:
    """1 ps (no GPU, on the gpu node), the chief (no GPU, default partition) and 2 workers
    with ``worker_gpus`` each on the gpu node, running gpu_task.py; one worker failure is
    replaced."""
    small = {"yarn.memory": "256"}
    return prepare_job(
        tmp_path, scripts_dir=APPS, entry="gpu_task.py",
        args=["--release_file", release.url, "--sleep", "600"],
        components={
            "ps": {**small, "yarn.label.expression": ps_label},
            "chiefworker": dict(small),
            "worker": {**small, "yarn.gpus": str(worker_gpus),
                       "yarn.label.expression": GPU_LABEL,
                       "yarn.container.failure.threshold": "1"},
        })


def ended(yarn_cluster, app_id: str) -> str | None:
    app = app_report(yarn_cluster, app_id)
    if app["state"] in FINAL_STATES:
        return f"{app_id} ended {app['state']}/{app['finalStatus']}: {app.get('diagnostics')}"
    return None


def records(files: JobFiles) -> dict[str, dict]:
    """gpu/<job>_<index>.attempt<N>.json of every task, from each container's own host."""
    found = {}
    for path in files.glob("gpu/*.json"):
        with contextlib.suppress(ValueError, OSError):
            found[path.stem] = json.loads(path.read_text())
    return found


@pytest.fixture
def jobs(yarn_cluster):
    """App ids submitted by a test: killed if still running at its end."""
    submitted: list[str] = []
    yield submitted
    for app_id in submitted:
        if not ended(yarn_cluster, app_id):
            subprocess.run(["yarn", "application", "-kill", app_id], env=yarn_cluster.env,
                           capture_output=True, timeout=60)


def test_each_gpu_task_gets_its_own_gpu_and_a_replacement_the_freed_one(
        yarn_cluster, tmp_path: Path, jobs: list[str]) -> None:
    layout = yarn_cluster.layout
    node_gpus = discovered(layout)
    assert len(node_gpus) == gpu_nm(layout).gpus >= 2
    uuids = {gpu["uuid"] for gpu in node_gpus}
    release = ReleaseFile.fresh(layout)
    resources, app_config = gpu_job(tmp_path, release)
    app_id = submit_detached(yarn_cluster, resources, app_config)
    jobs.append(app_id)
    files = JobFiles(layout, app_id)
    try:
        first = ["ps_0.attempt0", "worker_0.attempt0", "worker_1.attempt0", "worker_2.attempt0"]
        seen = wait_until("every task's GPU record",
                          lambda: (r := records(files)) and all(k in r for k in first) and r,
                          check=lambda: ended(yarn_cluster, app_id))
        w1, w2 = seen["worker_1.attempt0"], seen["worker_2.attempt0"]
        ps, chief = seen["ps_0.attempt0"], seen["worker_0.attempt0"]
        print(f"\n[{app_id}] CUDA_VISIBLE_DEVICES: worker 1 {w1['cuda_visible_devices']!r}, "
              f"worker 2 {w2['cuda_visible_devices']!r}, ps {ps['cuda_visible_devices']!r}, "
              f"chief {chief['cuda_visible_devices']!r}")
        # Both workers run on the gpu node, whose nvidia-smi lists every GPU YARN discovered.
        gpu_host = gpu_nm(layout).host
        for record in (w1, w2, ps):
            assert record["host"] == gpu_host
            assert record["nvidia_smi"], record
            assert {uuid for _, uuid in record["listed"]} == uuids
        by_index = {index: uuid for index, uuid in w1["listed"]}
        # Each worker got one GPU of its own, one the node discovered.
        assert w1["cuda_visible_devices"] in by_index and w2["cuda_visible_devices"] in by_index
        assert w1["cuda_visible_devices"] != w2["cuda_visible_devices"]
        assert w1["cuda_device_order"] == w2["cuda_device_order"] == "PCI_BUS_ID"
        # The ps asked for none: it sees none, though its node has some.
        assert ps["cuda_visible_devices"] == ""
        # The chief asked for none, on a node without GPUs (no nvidia-smi there).
        assert chief["cuda_visible_devices"] == "" and chief["nvidia_smi"] is None

        # `tfyarn status` shows each task's GPUs as the task saw them.
        view = wait_until("the task table with the workers' GPUs", lambda: (
            v := status_json(yarn_cluster, app_id)["job"]) and all(
            (t.get("gpus") or {}).get("devices") for t in v["tasks"] if t["role"] == "worker")
            and v)
        for task in view["tasks"]:
            gpus = task["gpus"]
            if task["role"] != "worker":
                assert gpus["devices"] == [] and gpus["visible"] == "", task
                continue
            [device] = gpus["devices"]
            assert str(device["index"]) == seen[f"worker_{task['index'] + 1}.attempt0"][
                "cuda_visible_devices"]
            assert device["uuid"] == by_index[str(device["index"])]
            assert device["name"] == "NVIDIA H100 80GB HBM3" and device["memory_mib"] == 81559
            assert gpus["wanted"] == 1 and gpus["seen"] == len(uuids)
        table = run_tfyarn(yarn_cluster, "status", app_id)
        assert table.returncode == 0, table.stderr
        assert "GPUS" in table.stdout and "NVIDIA H100 80GB HBM3" in table.stdout, table.stdout
        print(table.stdout)

        # kill -9 worker 2's script: its replacement gets the GPU it freed.
        [victim] = [p for p in task_processes(app_id, "gpu_task.py")
                    if p.flag("job_name") == "worker" and p.flag("task_index") == "2"]
        os.kill(victim.pid, signal.SIGKILL)
        again = wait_until("the replacement's GPU record",
                           lambda: records(files).get("worker_2.attempt1"),
                           check=lambda: ended(yarn_cluster, app_id))
        print(f"[{app_id}] replacement of worker 2: CUDA_VISIBLE_DEVICES "
              f"{again['cuda_visible_devices']!r}")
        assert again["cuda_visible_devices"] == w2["cuda_visible_devices"]
        assert records(files)["worker_1.attempt0"] == w1  # worker 1 kept running
    finally:
        release.touch()
    try:
        wait_until("the job's end", lambda: ended(yarn_cluster, app_id))
        app = app_report(yarn_cluster, app_id)
        assert app["finalStatus"] == "SUCCEEDED", app.get("diagnostics")
    finally:
        release.remove()


def test_two_jobs_on_one_gpu_node_get_different_gpus(
        yarn_cluster, tmp_path: Path, jobs: list[str]) -> None:
    """Without isolation YARN would let both jobs' workers use GPU 0; each holds its own."""
    layout = yarn_cluster.layout
    release = ReleaseFile.fresh(layout)
    apps = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            resources, app_config = gpu_job(tmp_path / name, release)
            doc = json.loads(resources.read_text())
            doc["components"]["ps"]["yarn.component.instances"] = "0"
            doc["components"]["worker"]["yarn.component.instances"] = "1"
            resources.write_text(json.dumps(doc))
            apps.append(submit_detached(yarn_cluster, resources, app_config))
            jobs.append(apps[-1])
        held = []
        for app_id in apps:
            record = wait_until(f"{app_id}'s worker's GPU record", lambda a=app_id: records(
                JobFiles(layout, a)).get("worker_1.attempt0"), check=lambda a=app_id: ended(
                yarn_cluster, a))
            held.append(record["cuda_visible_devices"])
        print(f"\nCUDA_VISIBLE_DEVICES of the two jobs' workers: {held}")
        assert sorted(held) == ["0", "1"]
    finally:
        release.touch()
    try:
        for app_id in apps:
            wait_until("the job's end", lambda a=app_id: ended(yarn_cluster, a))
            assert app_report(yarn_cluster, app_id)["finalStatus"] == "SUCCEEDED"
    finally:
        release.remove()


def test_a_failing_nvidia_smi_fails_the_gpu_task_saying_why(
        yarn_cluster, tmp_path: Path, jobs: list[str]) -> None:
    """nvidia-smi failing in the container: the task does not guess its GPUs; it fails, and
    its log, YARN's diagnostics and `tfyarn status` say why."""
    layout = yarn_cluster.layout
    # In containers only: YARN's NodeManager runs it too (every 3 s), and after 10 failures
    # in a row it stops discovering until restarted.
    fail = layout.node_dir(gpu_nm(layout)) / "gpu" / "fail-in-containers"
    release = ReleaseFile.fresh(layout)
    resources, app_config = gpu_job(tmp_path, release, ps_label="")
    fail.touch()
    try:
        app_id = submit_detached(yarn_cluster, resources, app_config)
        jobs.append(app_id)
        wait_until("the job's end", lambda: ended(yarn_cluster, app_id))
    finally:
        fail.unlink(missing_ok=True)
        release.remove()
    app = app_report(yarn_cluster, app_id)
    assert app["finalStatus"] == "FAILED"
    diagnostics = app["diagnostics"]
    print(f"\n[{app_id}] diagnostics: {diagnostics}")
    assert "nvidia-smi failed (exit code 9)" in diagnostics
    assert "couldn't communicate with the NVIDIA driver" in diagnostics
    assert "exit code 73" in diagnostics
    view = wait_until("the final task table", lambda: status_json(yarn_cluster, app_id)["job"],
                      timeout_s=120)
    errors = [t["gpus"]["error"] for t in view["tasks"] if (t.get("gpus") or {}).get("error")]
    assert errors and all("nvidia-smi failed" in e for e in errors), view["tasks"]
    # The task's own log says it too (`tfyarn logs`, from YARN's aggregated logs).
    wait_until("the worker's log saying why", lambda: "its GPUs: nvidia-smi failed (exit code 9)"
               in run_tfyarn(yarn_cluster, "logs", app_id, "--role", "worker").stdout,
               timeout_s=120)
    # The ps and the chief asked for no GPU: they never ran nvidia-smi, nor were told any.
    assert not files_with_gpus(JobFiles(layout, app_id))


def files_with_gpus(files: JobFiles) -> list[str]:
    return [name for name, r in records(files).items() if r["cuda_visible_devices"]]


# ---------------------------------------------------------------- discovery decides the total

def assert_gpu_total_discovered(started: Layout, gpus: int, status: str) -> None:
    """A cluster started with `up --gpus N` (N not the default): the RM's yarn.io/gpu for
    the gpu node is what YARN's plugin discovered from the stand-in, not a configured count;
    ``status`` is `tfyarn cluster status`'s output. Checked on the throwaway cluster of
    tests/test_localyarn.py's lifecycle test (one cluster start for both)."""
    assert gpus != GPUS_PER_GPU_NODE
    assert started.gpus_file.read_text().strip() == str(gpus)
    layout = Layout(started.state_dir, port_offset=started.port_offset)
    assert layout.gpu_count == gpus  # as started, for `status`
    assert rm_gpu_total(layout) == gpus
    found = discovered(layout)
    assert len(found) == gpus and len({gpu["uuid"] for gpu in found}) == gpus
    assert sorted(gpu["minor_number"] for gpu in found) == list(range(gpus))
    nm = gpu_nm(layout)
    site = (layout.node_conf_dir(nm) / "yarn-site.xml").read_text()
    assert "yarn.nodemanager.resource-plugins</name><value>yarn.io/gpu" in site
    assert not (layout.node_conf_dir(nm) / "node-resources.xml").exists()
    log = layout.daemon_log(nm.name).read_text()
    assert "Discovered GPU information" in log
    assert f"Nodemanager resources is set to: <memory:16384, vCores:16, yarn.io/gpu: {gpus}>" in log
    assert f"gpus 0/{gpus}" in status, status


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-s"]))
