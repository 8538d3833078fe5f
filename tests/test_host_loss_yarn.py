"""Whole hosts lost on the local cluster (`tfyarn cluster lose-host` / `regain-host`).

YARN notices a silent NodeManager only after 10 minutes; tfyarn notices a silent task after
its heartbeat timeout (set short here), replaces it elsewhere, and fences the old one off.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from jobtools import JobFiles, prepare_job, prepare_light_job, run_tfyarn, wait_for

from tfyarn.localyarn import cluster, daemons, hosts
from tfyarn.localyarn.proctable import scan_processes

pytestmark = pytest.mark.yarn
WAIT_S = 240  # each step of a host's loss, on a loaded 2-core machine

TIMEOUT_S = 8  # site.global.task.heartbeat.timeout in these tests
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


def submit(yarn_cluster, resources: Path, app_config: Path) -> str:
    out = run_tfyarn(yarn_cluster, "submit", "--resources", str(resources), "--app-config",
                     str(app_config), "--detach", "--json", timeout_s=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])["application_id"]


def job_view(yarn_cluster, app_id: str) -> dict:
    out = run_tfyarn(yarn_cluster, "status", app_id, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["job"] or {"tasks": [], "restarts": []}


def task(view: dict, role: str, index: int = 0) -> dict:
    return next(t for t in view["tasks"] if (t["role"], t["index"]) == (role, index))


def running_on(yarn_cluster, app_id: str, role: str) -> str:
    """The host of the task once every task of the job runs."""
    view = wait_for(f"{app_id} running", lambda: (
        (v := job_view(yarn_cluster, app_id)).get("state") == "RUNNING" and v), WAIT_S)
    return task(view, role)["node"].rsplit(":", 1)[0]


def submit_apart(yarn_cluster, skein_client, resources: Path, app_config: Path,
                 role: str) -> tuple[str, str]:
    """(app id, host of ``role``'s task 0) for a run where that host does not also hold the
    AppMaster: YARN places both where it likes, and losing the AppMaster's host is another
    story (its own attempt expiry). Resubmits (a few times at most) until they are apart."""
    for _ in range(4):
        app_id = submit(yarn_cluster, resources, app_config)
        host = running_on(yarn_cluster, app_id, role)
        am_host = cluster.rest(yarn_cluster.layout, f"apps/{app_id}")["app"]["amHostHttpAddress"]
        if am_host.rsplit(":", 1)[0] != host:
            return app_id, host
        skein_client.kill_application(app_id)
    raise AssertionError(f"YARN put the AppMaster beside the {role} four times in a row")


def final_report(skein_client, app_id: str, timeout_s: float = 300):
    return wait_for(f"{app_id} to end", lambda: (
        (r := skein_client.application_report(app_id)) and str(r.state) in FINAL_STATES and r),
        timeout_s)


@contextmanager
def lost(yarn_cluster, host: str, freeze: bool = False) -> Iterator[list[int]]:
    """The host lost for the block; back afterwards, whatever happens."""
    pids = hosts.lose(yarn_cluster.layout, host, freeze=freeze)
    try:
        yield pids
    finally:
        if hosts.lost_marker(yarn_cluster.layout, hosts.node(yarn_cluster.layout, host)).exists():
            hosts.regain(yarn_cluster.layout, host)


def components(ps: str, chief: str, worker: str, memory: str) -> dict[str, dict[str, str]]:
    """Each role's node label ("" = the default partition: nm1 and nm2; "gpu" = nm3)."""
    return {role: {"yarn.label.expression": label, "yarn.memory": memory,
                   "yarn.container.failure.threshold": "1"}
            for role, label in (("ps", ps), ("chiefworker", chief), ("worker", worker))}


# A lost worker's host is the same mechanism (a worker back at a new address restarts the
# cluster): where YARN places a lone worker beside the AppMaster again and again, as it
# tends to here, that run would only test the AppMaster's own loss. A lost ps's host takes
# the very path a lost chief's does (a generation restart from the checkpoint on HDFS) and
# 2.5 minutes: it runs on demand (TFYARN_LONG=1), the chief's, which also loses the
# chief's local work dir, in every run.
@pytest.mark.long
@pytest.mark.parametrize("victim", ["chiefworker", pytest.param("ps", marks=pytest.mark.skipif(
    not os.environ.get("TFYARN_LONG"), reason="the ps's variant: TFYARN_LONG=1 runs it"))])
def test_losing_a_tasks_host(yarn_cluster, skein_client, tmp_path: Path, victim: str) -> None:
    """The victim's host dies (the others run on the gpu node): within the timeout tfyarn
    declares it lost and it runs again on the other default node. A worker back at a new
    address, a ps or the chief: the cluster restarts from the checkpoint on HDFS, and the
    global step goes on from there."""
    labels = {role: ("" if role == victim else "gpu") for role in ("ps", "chiefworker", "worker")}
    comps = components(**{"chief" if r == "chiefworker" else r: label
                          for r, label in labels.items()}, memory="1024")
    comps["worker"]["yarn.component.instances"] = "1"
    # The victim comes last in priority (its replacement is asked for after any other's);
    # every container is asked for at once at submit, and submit_apart resubmits while YARN
    # puts the victim beside the AppMaster.
    order = [r for r in ("ps", "chiefworker", "worker") if r != victim] + [victim]
    for priority, role in enumerate(order, start=1):
        comps[role]["yarn.role.priority"] = str(priority)
    resources, app_config = prepare_job(
        tmp_path, args=["--train_steps", "700", "--step_sleep", "0.1"], components=comps,
        settings={"task.heartbeat.timeout": str(TIMEOUT_S), "checkpoint.mirror.interval": "2"})
    app_id, host = submit_apart(yarn_cluster, skein_client, resources, app_config, victim)
    files = JobFiles(yarn_cluster.layout, app_id)
    step = wait_for("a checkpoint on HDFS",
                    lambda: hdfs_step(files) >= 50 and hdfs_step(files), WAIT_S)
    with lost(yarn_cluster, host):
        lost_at = time.monotonic()
        moved = wait_for(f"the {victim} running on another host", lambda: (
            (t := task(job_view(yarn_cluster, app_id), victim))["restarts"] >= 1
            and t["state"] == "running" and t), WAIT_S)
        print(f"\n[{app_id}] {host} lost at HDFS step {step}: {victim} training again on "
              f"{moved['node']} {time.monotonic() - lost_at:.1f} s later")
        assert moved["node"].rsplit(":", 1)[0] != host
        report = final_report(skein_client, app_id)
    assert str(report.final_status) == "SUCCEEDED", report.diagnostics
    name = {"chiefworker": "chiefworker 0", "ps": "ps 0", "worker": "worker 0"}[victim]
    assert f"{name} lost on {host}:" in report.diagnostics, report.diagnostics
    result = files.remote_json("result.json")
    assert result["first_global_step"] >= step, (step, result)  # the step went on
    assert result["global_step"] >= 700


def test_a_host_back_from_a_cut_finds_its_tasks_replaced(yarn_cluster, skein_client,
                                                         tmp_path: Path) -> None:
    """The ps's host (the gpu node) is cut off (frozen) past the timeout: the ps is declared
    lost and a new generation asked for. Then the host comes back with its old ps still
    there: the old agent finds its task given away and ends itself; nothing of it reaches
    the job, and the new ps (which only that node's partition can hold) takes over."""
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "600"], settings={"task.heartbeat.timeout": str(TIMEOUT_S)})
    patch_components(resources, components(ps="gpu", chief="", worker="", memory="256"))
    app_id = submit(yarn_cluster, resources, app_config)
    host = running_on(yarn_cluster, app_id, "ps")
    old = task(job_view(yarn_cluster, app_id), "ps")
    with lost(yarn_cluster, host, freeze=True) as frozen:
        old_agent = [p for p in frozen if container_of(p) == old["yarn_container_id"]]
        assert old_agent, "the old ps's processes were not among the frozen ones"
        wait_for("the ps declared lost", lambda: any(
            line.startswith(f"ps 0 lost on {host}")
            for line in job_view(yarn_cluster, app_id)["restarts"]), WAIT_S)
    # Thawed: the old ps's processes end by themselves (its agent finds its task gone).
    wait_for("the old ps's processes to end", lambda: not [
        p for p in scan_processes() if p.pid in old_agent], 60)
    new = wait_for("the new ps running", lambda: (
        (t := task(job_view(yarn_cluster, app_id), "ps"))["state"] == "running"
        and t["yarn_container_id"] != old["yarn_container_id"] and t), WAIT_S)
    view = job_view(yarn_cluster, app_id)
    assert [line.split(", restored")[0] for line in view["restarts"] if "lost" in line] == [
        f"ps 0 lost on {host}: cluster restarted as generation 1"]
    assert old["yarn_container_id"] not in {t["yarn_container_id"] for t in view["tasks"]}
    assert host in view["lost_nodes"] and new["restarts"] >= 1
    skein_client.kill_application(app_id)


def test_a_slow_agent_is_not_lost(yarn_cluster, skein_client, tmp_path: Path) -> None:
    """An agent paused for less than the timeout (a long GC pause, say) stays in the job."""
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "25"], settings={"task.heartbeat.timeout": str(TIMEOUT_S)})
    app_id = submit(yarn_cluster, resources, app_config)
    running_on(yarn_cluster, app_id, "worker")
    worker = task(job_view(yarn_cluster, app_id), "worker", 1)
    agent = next(p for p in scan_processes() if "appmaster.agent.main" in " ".join(p.argv)
                 and worker["yarn_container_id"] in p.cwd)
    os.kill(agent.pid, signal.SIGSTOP)
    time.sleep(TIMEOUT_S / 2)
    os.kill(agent.pid, signal.SIGCONT)
    report = final_report(skein_client, app_id)
    assert str(report.final_status) == "SUCCEEDED", report.diagnostics
    assert "lost" not in report.diagnostics and "Restarts" not in report.diagnostics


# ---------------------------------------------------------------- helpers


def patch_components(resources: Path, changes: dict[str, dict[str, str]]) -> None:
    document = json.loads(resources.read_text())
    for role, values in changes.items():
        document["components"][role].update(values)
    resources.write_text(json.dumps(document))


def container_of(pid: int) -> str | None:
    """The YARN container id whose directory the process works in."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    return next((part for part in cwd.split("/") if part.startswith("container_")), None)


def hdfs_step(files: JobFiles) -> int:
    import re

    state = files.remote_text("checkpoints/checkpoint") or ""
    match = re.search(r'model_checkpoint_path: "(?:.*/)?(?:model\.)?ckpt-(\d+)"', state)
    return int(match.group(1)) if match else 0


def test_lose_host_refuses_what_it_cannot_do(yarn_cluster) -> None:
    with pytest.raises(hosts.ClusterError, match="No NodeManager 'nm99'"):
        hosts.lose(yarn_cluster.layout, "nm99")
    with pytest.raises(hosts.ClusterError, match="is not lost"):
        hosts.regain(yarn_cluster.layout, "nm1")
    assert daemons.running_pid(yarn_cluster.layout, "nm1")
