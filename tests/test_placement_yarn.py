"""Slider's placement keys on the local YARN, through tfyarn's patched AppMaster: a ps with
``yarn.component.placement.policy`` 1 (STRICT) comes back on the host it ran on when the cluster
restarts; then a worker killed on a host, its role's ``yarn.node.failure.threshold`` 1, comes
back on the other default-partition host (the job blacklists the first), and when that host
was the STRICT ps's, the ps still comes back to it. One light job (no TensorFlow) for all.
And two ps with policy 4 (ANTI_AFFINITY_REQUIRED) on the two default-partition hosts, asked
for with YARN's placement constraints.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from jobtools import prepare_light_job, status_json
from test_faults_yarn import Job, submitting, task_key, task_processes, wait_until

pytestmark = pytest.mark.yarn

RECOVERY_S = 120


@pytest.fixture
def submit(yarn_cluster, skein_client) -> Iterator[Callable[..., Job]]:
    with submitting(yarn_cluster, skein_client) as submit_job:
        yield submit_job


def running(yarn_cluster, job: Job) -> dict[tuple[str, int], tuple[str, str]]:
    """Every task's (container, host), once all run; {} before."""
    tasks = (status_json(yarn_cluster, job.app_id).get("job") or {}).get("tasks") or []
    if not tasks or any(t["state"] != "running" or not t.get("node") for t in tasks):
        return {}
    return {(t["role"], t["index"]): (t["container"], t["node"].rsplit(":", 1)[0])
            for t in tasks}


def kill_script(job: Job, job_name: str, index: int) -> None:
    (script,) = wait_until(f"the script of {job_name} {index}", lambda: [
        p for p in task_processes(job.app_id) if task_key(p) == (job_name, index)], 60)
    os.kill(script.pid, signal.SIGKILL)


def test_strict_restarts_in_place_and_a_failed_node_is_left(
        yarn_cluster, submit, tmp_path: Path) -> None:
    components = {role: {"yarn.container.failure.threshold": "5"}
                  for role in ("ps", "chiefworker", "worker")}
    components["ps"]["yarn.component.placement.policy"] = "1"
    components["worker"]["yarn.node.failure.threshold"] = "1"
    components["worker"]["yarn.label.expression"] = ""  # the two default-partition hosts
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "600"],
                                              components=components)
    job = submit(resources, app_config)
    first = wait_until("every task running", lambda: running(yarn_cluster, job), RECOVERY_S,
                       poll_s=1, fail_fast=job.ended_early)

    kill_script(job, "ps", 0)  # the cluster restarts; the ps is asked for on its host only
    again = wait_until("every task running again", lambda: (
        (now := running(yarn_cluster, job)) and now[("ps", 0)][0] != first[("ps", 0)][0]
        and now), RECOVERY_S, poll_s=1, fail_fast=job.ended_early)
    assert again[("ps", 0)][1] == first[("ps", 0)][1], (first, again)

    # a worker on the ps's host if there is one: the host it leaves must stay open to the
    # STRICT ps (YARN's blacklist is the whole application's)
    ps_host = again[("ps", 0)][1]
    index = next((i for i in (1, 0) if again[("worker", i)][1] == ps_host), 1)
    kill_script(job, "worker", index + 1)  # TensorFlow's worker 0 is the chief
    last = wait_until(f"worker {index} running again", lambda: (
        (now := running(yarn_cluster, job)) and now[("worker", index)][0] !=
        again[("worker", index)][0] and now), RECOVERY_S, poll_s=1, fail_fast=job.ended_early)
    assert last[("worker", index)][1] != again[("worker", index)][1], (again, last)
    print(f"[{job.app_id}] ps on {ps_host} and back there; worker {index} from "
          f"{again[('worker', index)][1]} to {last[('worker', index)][1]}")
    if again[("worker", index)][1] == ps_host:
        kill_script(job, "ps", 0)
        back = wait_until("the ps back on the host the worker left", lambda: (
            (now := running(yarn_cluster, job)) and now[("ps", 0)][0] != last[("ps", 0)][0]
            and now), RECOVERY_S, poll_s=1, fail_fast=job.ended_early)
        assert back[("ps", 0)][1] == ps_host, (last, back)
        print(f"[{job.app_id}] the ps came back to {ps_host}, left by worker {index}")


def am_log(yarn_cluster, job: Job) -> str:
    """The patched AppMaster's log, on whichever host it runs."""
    layout = yarn_cluster.layout
    return "".join(log.read_text() for nm in layout.node_managers for log in (
        layout.node_dir(nm) / "containers" / job.app_id).glob("*/application.master.log"))


def test_anti_affinity_puts_two_ps_on_two_hosts(yarn_cluster, submit, tmp_path: Path) -> None:
    # YARN fills a node per heartbeat as far as it has room (the default partition's hosts
    # each hold both ps): only the constraint keeps the two apart
    components = {"ps": {"yarn.component.instances": "2",
                         "yarn.component.placement.policy": "4"}}
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "600"],
                                              components=components)
    job = submit(resources, app_config)
    tasks = wait_until("every task running", lambda: running(yarn_cluster, job), RECOVERY_S,
                       poll_s=1, fail_fast=job.ended_early)
    hosts = {tasks[("ps", 0)][1], tasks[("ps", 1)][1]}
    assert len(hosts) == 2, tasks  # the AppMaster's view: tfyarn status --json
    # asked for with a SchedulingRequest (skein's first requests, from the spec), not by luck
    asked = re.findall(r"REQUESTED: (ps_\d+) \(no two of ps on one node\)",
                       am_log(yarn_cluster, job))
    assert sorted(asked) == ["ps_0", "ps_1"], asked
    print(f"[{job.app_id}] ps on {sorted(hosts)}")



def test_a_replacement_asks_for_the_jobs_hosts_then_any_host(
        yarn_cluster, submit, tmp_path: Path) -> None:
    # Three 8192 MB workers on the two default-partition hosts (16 GB each), the ps and the
    # chief on the gpu node: one host holds two workers, the other one and the AppMaster.
    # Worker 1 fails at once (exit 3): its replacement asks for the job's other hosts only,
    # where no worker fits, then, after yarn.placement.escalate.seconds, for any host.
    components = {role: {"yarn.label.expression": "gpu"} for role in ("ps", "chiefworker")}
    components["worker"] = {"yarn.memory": "8192", "yarn.label.expression": "",
                            "yarn.component.instances": "3",
                            "yarn.placement.escalate.seconds": "3",
                            "yarn.container.failure.threshold": "5"}
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "600", "--fail", "worker:2"],
                                              components=components)
    job = submit(resources, app_config)

    def relaxed_and_running() -> tuple[dict, str] | None:
        status = status_json(yarn_cluster, job.app_id).get("job") or {}
        tasks = status.get("tasks") or []
        said = [line for line in status.get("restarts") or []
                if line.startswith("worker 1: no container on ")]
        return (status, said[0]) if said and all(t["state"] == "running" for t in tasks) \
            else None

    status, said = wait_until("worker 1 relaxed and every task running", relaxed_and_running,
                              RECOVERY_S, poll_s=1, fail_fast=job.ended_early)
    asked = said.removeprefix("worker 1: no container on ").split(" within ")[0].split(", ")
    host = next(t["node"].rsplit(":", 1)[0] for t in status["tasks"]
                if (t["role"], t["index"]) == ("worker", 1))
    assert host not in asked and " within 3 s (yarn.placement.escalate.seconds;" in said, (
        said, host)
    # the AppMaster asked for those hosts alone first (relax-locality off)
    assert f"PLACEMENT for worker: nodes [{', '.join(asked)}], relax false" in am_log(
        yarn_cluster, job), said
    print(f"[{job.app_id}] {said}; placed on {host}")
