"""Issue 45: a lost host -> every task running again, its replacements steered to the hosts
that hold the job's env in YARN's cache (placement policy 0, the default) or not (policy 2,
ANYWHERE).

The local cluster needs 3 default-partition NodeManagers (`tfyarn cluster up --nodes 4`):
A and B hold the job, C is free and cold. Each run:

1. every default-partition NodeManager started again (a NodeManager without recovery empties
   its cache as it starts): no node holds the env;
2. a filler application (plain skein, `sleep`) holds C whole and half of A and B, so the
   light job (1 ps, the chief, 1 worker of 3,500 MB each, `tests/apps/light_task.py`) starts
   on A and B (at most two tasks fit on each) and localizes the env there only;
3. the filler ends: A and B each have room for the whole job again, C is empty and cold;
4. the job's host without its AppMaster is lost (`tfyarn cluster lose-host`: its
   NodeManager and containers killed); the bench follows `tfyarn status` until every task
   runs its script in a new container, then says where the replacements went and what C's
   NodeManager downloaded into its public cache.

    TFYARN_CLUSTER_DIR=... python -m bench.steering --runs 2 [--policies 0 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, log

sys.path.insert(0, str(REPO / "tests"))

from barenodes import client_environ  # noqa: E402
from jobtools import prepare_light_job  # noqa: E402

from bench.host_loss import (  # noqa: E402
    all_running_again,
    dir_mb,
    host_of,
    public_cache,
    tfyarn,
    until,
    view,
)
from tfyarn.localyarn import cluster, hosts  # noqa: E402
from tfyarn.localyarn.layout import Layout, NodeManagerSpec, default_state_dir  # noqa: E402

TASK_MB = 3500  # two fit beside a filler's 8,000 MB; the whole job beside an AppMaster
HEARTBEAT_TIMEOUT_S = 8  # site.global.task.heartbeat.timeout: the loss is heard soon


def default_nodes(layout: Layout) -> list[NodeManagerSpec]:
    nodes = [nm for nm in layout.node_managers if not nm.partition]
    if len(nodes) < 3:
        raise SystemExit("needs 3 default-partition NodeManagers: tfyarn cluster up --nodes 4")
    return nodes[:3]


def running_nodes(layout: Layout) -> int:
    nodes = cluster.rest(layout, "nodes").get("nodes", {}).get("node") or []
    return sum(node["state"] == "RUNNING" for node in nodes)


def empty_caches(layout: Layout, nodes: list[NodeManagerSpec]) -> None:
    """Every node's NodeManager started again, its public cache emptied."""
    for nm in nodes:
        hosts.lose(layout, nm.name)
    time.sleep(2)
    for nm in nodes:
        hosts.regain(layout, nm.name)
    time.sleep(15)  # the RM may list a killed NodeManager as running until it registers
    until("every NodeManager back", lambda: running_nodes(layout) == len(
        layout.node_managers), timeout_s=180, every_s=1)


def start_filler(nodes: list[NodeManagerSpec]) -> str:
    """The filler, tried again where its AppMaster met a NodeManager still starting."""
    for _ in range(3):
        try:
            return try_filler(nodes)
        except Exception as exc:  # noqa: BLE001 - skein's or a timeout: said, tried again
            log(f"the filler failed ({exc!r}); again")
            time.sleep(10)
    raise RuntimeError("the filler failed three times")


def try_filler(nodes: list[NodeManagerSpec]) -> str:
    """A skein application holding C whole and 8,000 MB of A and B: its id once all run."""
    import skein

    from tfyarn.hadoop.driver import skein_client

    def hold(nm: NodeManagerSpec, memory_mb: int, count: int) -> skein.Service:
        return skein.Service(resources=skein.Resources(memory=memory_mb, vcores=1),
                             script="sleep 3600", instances=count, nodes=[nm.host],
                             relax_locality=False, max_restarts=0)

    a, b, c = nodes
    services = {"hold_a": hold(a, 8000, 1), "hold_b": hold(b, 8000, 1), "hold_c": hold(c, 2000, 8)}
    spec = skein.ApplicationSpec(name="bench-steering-filler", queue="default", max_attempts=1,
                                 services=services,
                                 master=skein.Master(resources=skein.Resources(256, 1)))
    with skein_client() as client:
        app_id = client.submit(spec)
        app = client.connect(app_id)
        until("the filler's containers running", lambda: len(
            app.get_containers(states=["RUNNING"])) >= 9, timeout_s=180, every_s=1)
    return app_id


def stop_filler(app_id: str) -> None:
    from tfyarn.hadoop.driver import skein_client

    with skein_client() as client:
        client.kill_application(app_id)


def submit_job(env: dict, tmp: Path, policy: str) -> str:
    comps = {role: {"yarn.label.expression": "", "yarn.memory": str(TASK_MB),
                    "yarn.component.placement.policy": policy,
                    "yarn.container.failure.threshold": "5"}
             for role in ("ps", "chiefworker", "worker")}
    comps["worker"]["yarn.component.instances"] = "1"
    resources, app_config = prepare_light_job(
        tmp, ["--sleep", "1200"], settings={"task.heartbeat.timeout": str(HEARTBEAT_TIMEOUT_S)},
        components=comps)
    out = tfyarn(env, "submit", "--resources", str(resources), "--app-config", str(app_config),
                 "--detach", "--json")
    return json.loads(out.strip().splitlines()[-1])["application_id"]


def one_run(layout: Layout, env: dict, policy: str) -> dict:
    nodes = default_nodes(layout)
    empty_caches(layout, nodes)
    filler = start_filler(nodes)
    with tempfile.TemporaryDirectory(prefix="steering-") as tmp:
        app_id = submit_job(env, Path(tmp), policy)
    try:
        running = until(f"{app_id} running", lambda: (
            (v := view(env, app_id)).get("state") == "RUNNING" and v))
        stop_filler(filler)
        task_hosts = {f"{t['role']} {t['index']}": host_of(t["node"]) for t in running["tasks"]}
        am = host_of(cluster.rest(layout, f"apps/{app_id}")["app"]["amHostHttpAddress"])
        victim = next(h for h in sorted(set(task_hosts.values())) if h != am)
        cold = nodes[2]
        before = {f"{t['role']} {t['index']}": t["yarn_container_id"] for t in running["tasks"]}
        time.sleep(HEARTBEAT_TIMEOUT_S)  # a few heartbeats heard; the filler gone
        cache_before = public_cache(layout)
        load = os.getloadavg()[0]
        t0 = time.time()
        hosts.lose(layout, hosts.node(layout, victim).name)
        try:
            final = until("every task running again",
                          lambda: all_running_again(env, app_id, before))
            done = time.time()
        finally:
            hosts.regain(layout, hosts.node(layout, victim).name)
        after = public_cache(layout)
        downloaded = sum(dir_mb(Path(p)) for p, mtime in after[cold.name].items()
                         if cache_before[cold.name].get(p) != mtime)
        placed = {f"{t['role']} {t['index']}": host_of(t["node"]) for t in final["tasks"]}
        return {"policy": policy, "app": app_id, "load": round(load, 1),
                "before": task_hosts, "am": am, "lost": victim, "after": placed,
                "on the cold host": sum(h == cold.host for h in placed.values()),
                "cold host downloaded MB": round(downloaded),
                "lost -> all running s": round(done - t0, 1),
                "relaxed": [r for r in final.get("restarts") or [] if "escalate" in r]}
    finally:
        tfyarn(env, "kill", app_id)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--policies", nargs="+", default=["0", "2"])
    args = parser.parse_args()
    layout = Layout(default_state_dir())
    env = cluster.client_environment(layout)
    results: dict[str, list[float]] = {}
    with client_environ(env):
        for n in range(args.runs):
            for policy in args.policies:
                result = one_run(layout, env, policy)
                print(json.dumps(result), flush=True)
                results.setdefault(policy, []).append(result["lost -> all running s"])
                log(f"run {n + 1}, policy {policy}: {result['lost -> all running s']} s")
    for policy, times in results.items():
        log(f"policy {policy}: lost -> every task running again {times} s "
            f"(median {statistics.median(times):.1f})")


if __name__ == "__main__":
    main()
