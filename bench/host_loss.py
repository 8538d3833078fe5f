"""Issue 37, item 3: a lost host -> every task of the job running its script again, by phase.

A light job (tests/apps/light_task.py: 1 ps, the chief, 1 worker, no TensorFlow) runs on the
local cluster with the victim's role alone on a default-partition host (the others on the
gpu node, the AppMaster on the other default node), the suite's env already localized on
every node. `tfyarn cluster lose-host` kills the victim's NodeManager and its containers; the
bench follows `tfyarn status` until every task runs its script again in a new container,
then reads the phases from the job's timeline (asked, agent started, script running), the
AppMaster's log (lost, registered, spec published), the ResourceManager's log (allocated)
and the NodeManagers' logs (localized), and lists what each NodeManager downloaded into its
public cache meanwhile (nothing, when the env came from the cache).

``--cold``: the victim is the ps alone on the gpu node, whose NodeManager comes back at once
with an empty cache (a NodeManager without recovery cleans its local dirs as it starts): the
replacement waits for a first localization of the env there.

    TFYARN_CLUSTER_DIR=... python -m bench.host_loss --victim worker --timeout 8 [--cold]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from barenodes import client_environ, ship_env_to_every_node  # noqa: E402
from jobtools import TFYARN, prepare_light_job  # noqa: E402

from bench.logs import log_time  # noqa: E402
from tfyarn.localyarn import cluster, hosts  # noqa: E402
from tfyarn.localyarn.layout import Layout, default_state_dir  # noqa: E402

WAIT_S = 400
NM_STATE = re.compile(r"Container (container_\S+) transitioned from (\w+) to (\w+)")
RM_STATE = re.compile(r"RMContainerImpl: (container_\S+) Container Transitioned from \w+ to (\w+)")


def tfyarn(env: dict, *args: str, timeout_s: float = 180) -> str:
    out = subprocess.run([*TFYARN, *args], env=env, capture_output=True, text=True,
                         timeout=timeout_s, cwd=REPO)
    if out.returncode:
        raise RuntimeError(f"tfyarn {args[0]}: {out.stderr[-2000:]}")
    return out.stdout


def view(env: dict, app_id: str) -> dict:
    return json.loads(tfyarn(env, "status", app_id, "--json"))["job"] or {}


def until(what: str, probe, timeout_s: float = WAIT_S, every_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(every_s)
    raise TimeoutError(what)


def host_of(node: str | None) -> str:
    return (node or "").rsplit(":", 1)[0]


def submit(env: dict, tmp: Path, victim: str, timeout_s: int, cold: bool) -> Path:
    victim_label, others = ("gpu", "") if cold else ("", "gpu")
    comps = {role: {"yarn.label.expression": victim_label if role == victim else others,
                    "yarn.container.failure.threshold": "3"}
             for role in ("ps", "chiefworker", "worker")}
    comps["worker"]["yarn.component.instances"] = "1"
    resources, app_config = prepare_light_job(
        tmp, ["--sleep", "1200"], settings={"task.heartbeat.timeout": str(timeout_s)},
        components=comps)
    return resources, app_config


def start_apart(layout: Layout, env: dict, files, victim: str) -> tuple[str, str, dict]:
    """(app id, the victim's host, the view) with the victim apart from the AppMaster."""
    for _ in range(4):
        out = tfyarn(env, "submit", "--resources", str(files[0]), "--app-config",
                     str(files[1]), "--detach", "--json")
        app_id = json.loads(out.strip().splitlines()[-1])["application_id"]
        running = until(f"{app_id} running", lambda app=app_id: (
            (v := view(env, app)).get("state") == "RUNNING" and v))
        host = host_of(next(t["node"] for t in running["tasks"] if t["role"] == victim))
        am = host_of(cluster.rest(layout, f"apps/{app_id}")["app"]["amHostHttpAddress"])
        if am != host:
            return app_id, host, running
        tfyarn(env, "kill", app_id)
    raise RuntimeError("the AppMaster beside the victim four times in a row")


def all_running_again(env: dict, app_id: str, before: dict[str, str]) -> dict | None:
    """The view once every task runs its script in a container other than before."""
    v = view(env, app_id)
    tasks = [t for t in v.get("tasks", []) if t["role"] in ("ps", "chiefworker", "worker")]
    if tasks and all(t["state"] == "running" and t["yarn_container_id"] not in before.values()
                     for t in tasks):
        return v
    return None


def log_lines(path: Path, after: float, pattern: re.Pattern) -> list[tuple[float, re.Match]]:
    found = []
    with open(path, errors="replace") as f:
        for line in f:
            if (match := pattern.search(line)) and (at := log_time(line)) and at >= after:
                found.append((at, match))
    return found


def public_cache(layout: Layout) -> dict[str, dict[str, float]]:
    """Per NodeManager: each public cache entry -> its mtime (a NodeManager that starts
    again empties its cache, and may localize into the same numbered dirs)."""
    return {nm.name: {str(p): p.stat().st_mtime
                      for p in (layout.node_dir(nm) / "local" / "filecache").glob("*")}
            for nm in layout.node_managers}


def dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def phases(layout: Layout, app_id: str, t0: float, final: dict, done: float,
           cache_before: dict) -> dict:
    """Times after the loss (t0) when the last new task reached each phase."""
    key = app_id.split("_", 1)[1]
    spans = [s for s in final["history"]["spans"] if s["asked"] and s["asked"] >= t0]
    marks = [m for m in final["history"]["marks"] if m[0] >= t0] if final.get(
        "history", {}).get("marks") else []
    driver = next(layout.state_dir.glob(f"*/containers/{app_id}/container_*_000001/"
                                        "application.driver.log"))
    lost = log_lines(driver, t0, re.compile(r"WARNING failure \d+ of (\w+): .*lost"))
    registered = log_lines(driver, t0, re.compile(r"INFO (\w+ \d+) registered at"))
    spec = log_lines(driver, t0, re.compile(r"cluster spec \(generation (\d+)\)"))
    alloc = [(at, m) for at, m in log_lines(layout.log_dir / "rm.log", t0, RM_STATE)
             if key in m.group(1) and m.group(2) == "ALLOCATED"
             and not m.group(1).endswith("_000001")]
    localized, launched = [], []
    for nm in layout.node_managers:
        for at, m in log_lines(layout.log_dir / f"{nm.name}.log", t0, NM_STATE):
            if key in m.group(1) and m.group(2) == "LOCALIZING" and m.group(3) == "SCHEDULED":
                localized.append(at)
            if key in m.group(1) and m.group(3) == "RUNNING":
                launched.append(at)
    after = public_cache(layout)
    downloads = {nm: [f"{Path(p).name}: {dir_mb(Path(p)):.0f} MB"
                      for p, mtime in entries.items() if cache_before.get(nm, {}).get(p) != mtime]
                 for nm, entries in after.items()}

    def rel(times) -> float | None:
        times = [t for t in times if t is not None]
        return round(max(times) - t0, 1) if times else None

    def first(times) -> float | None:
        times = [t for t in times if t is not None]
        return round(min(times) - t0, 1) if times else None

    return {
        "declared lost": first([at for at, _ in lost]) or first([m[0] for m in marks]),
        "first replacement asked": first([s["asked"] for s in spans]),
        "last asked": rel([s["asked"] for s in spans]),
        "last allocated (RM)": rel([at for at, _ in alloc]),
        "last localized (NM: LOCALIZING->SCHEDULED)": rel(localized),
        "last launched (NM: ->RUNNING)": rel(launched),
        "last agent started": rel([s["started"] for s in spans]),
        "last registered (export)": rel([at for at, _ in registered]),
        "spec published": rel([at for at, m in spec]),
        "last script running": rel([s["running"] for s in spans]),
        "seen by status": round(done - t0, 1),
        "containers asked after the loss": len(spans),
        "localization per node (s)": localization_times(layout, t0),
        "public cache downloads": {nm: d for nm, d in downloads.items() if d},
    }


def localization_times(layout: Layout, after: float) -> dict[str, list[float]]:
    """Per NodeManager: LOCALIZING -> SCHEDULED of each container started since ``after``."""
    times: dict[str, list[float]] = {}
    for nm in layout.node_managers:
        began: dict[str, float] = {}
        for at, m in log_lines(layout.log_dir / f"{nm.name}.log", after, NM_STATE):
            if m.group(3) == "LOCALIZING":
                began[m.group(1)] = at
            elif m.group(2) == "LOCALIZING" and m.group(1) in began:
                times.setdefault(nm.name, []).append(round(at - began[m.group(1)], 1))
    return times


def run(layout: Layout, env: dict, victim: str, timeout_s: int, cold: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="hostloss-") as tmp:
        files = submit(env, Path(tmp), victim, timeout_s, cold)
        app_id, host, running = start_apart(layout, env, files, victim)
        before = {f"{t['role']} {t['index']}": t["yarn_container_id"] for t in running["tasks"]}
        time.sleep(max(5.0, timeout_s / 2))  # a few heartbeats heard
        name = next(nm.name for nm in layout.node_managers if nm.host == host)
        cache_before = public_cache(layout)
        t0 = time.time()
        hosts.lose(layout, name)
        try:
            if cold:  # back at once, its cache emptied by the NodeManager's start
                time.sleep(2)
                hosts.regain(layout, name)
            final = until("every task running again",
                          lambda: all_running_again(env, app_id, before))
            done = time.time()
        finally:
            if hosts.lost_marker(layout, hosts.node(layout, host)).exists():
                hosts.regain(layout, name)
        time.sleep(3)  # the logs flushed
        result = {"app": app_id, "victim": victim, "host": host, "timeout_s": timeout_s,
                  "cold": cold, "load": Path("/proc/loadavg").read_text().split()[:3],
                  "restarts": final.get("restarts"),
                  **phases(layout, app_id, t0, final, done, cache_before)}
        tfyarn(env, "kill", app_id)
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--victim", default="worker", choices=["worker", "chiefworker", "ps"])
    parser.add_argument("--timeout", type=int, default=30)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--no-warm", action="store_true", help="skip the env's warm-up")
    args = parser.parse_args()
    layout = Layout(default_state_dir())
    if not cluster.is_running(layout):
        cluster.up(layout)
    env = cluster.client_environment(layout)
    with client_environ(env):
        if not args.no_warm:
            t = time.time()
            ship_env_to_every_node(layout)
            print(f"warm-up (the env localized on every node): {time.time() - t:.1f} s; "
                  f"localization per node: {localization_times(layout, t)}", flush=True)
        victim = "ps" if args.cold else args.victim
        print(json.dumps(run(layout, env, victim, args.timeout, args.cold), indent=1),
              flush=True)


if __name__ == "__main__":
    main()
