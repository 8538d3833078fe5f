"""The AppMaster's memory with tfyarn's patched skein AppMaster against skein's own.

Alternates the two (``TFYARN_STOCK_SKEIN_AM=1`` submits with skein's own jar): each run submits
the light job (tests/apps/light_task.py: 1 ps, 1 chief, 2 workers), waits until every task
runs plus SETTLE_S, then reads the Java AppMaster's VmRSS and VmHWM and master.py's VmRSS from
/proc (every NodeManager is this machine), and kills the job. Prints a line per run and the
medians.

    eval "$(tfyarn cluster env)"; python -m bench.am_jar [RUNS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cluster import Cluster, kill_app
from bench.common import LIGHT_APPS, REPO, G, log, write_job_files

SETTLE_S = 20.0
TFYARN = [sys.executable, "-m", "tfyarn.cli.main"]


def job_files(into: Path) -> tuple[Path, Path]:
    resources = json.loads((REPO / "resources.json").read_text())
    for component in resources["components"].values():
        component["yarn.memory"] = "256"
    app = json.loads((REPO / "appConfig.json").read_text())
    app["global"].update({G + "user.scripts.dir": str(LIGHT_APPS),
                          G + "user.scripts.entry": "light_task.py",
                          G + "user.scripts.args": ["--sleep", "600"]})
    return write_job_files(into, resources, app)


def status(app_id: str) -> dict:
    out = subprocess.run([*TFYARN, "status", app_id, "--json"], capture_output=True, text=True,
                         timeout=120)
    return (json.loads(out.stdout).get("job") or {}) if out.returncode == 0 else {}


def memory_mb(pid: str) -> dict[str, float]:
    with open(f"/proc/{pid}/status") as f:
        return {line.split(":")[0]: int(line.split()[1]) / 1024 for line in f
                if line.startswith(("VmRSS", "VmHWM"))}


def am_processes(app_id: str) -> dict[str, str]:
    """The Java AppMaster's and master.py's pids, by their command lines."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if app_id not in cwd or not cwd.endswith("_000001"):
            continue
        if b"com.anaconda.skein.ApplicationMaster" in argv:
            found["java"] = pid
        elif b"appmaster.master.main" in argv:
            found["master"] = pid
    return found


def one_run(cluster: Cluster, stock: bool, files: tuple[Path, Path]) -> dict:
    env = dict(os.environ)
    env.pop("TFYARN_STOCK_SKEIN_AM", None)
    if stock:
        env["TFYARN_STOCK_SKEIN_AM"] = "1"
    out = subprocess.run([*TFYARN, "submit", "--resources", str(files[0]), "--app-config",
                          str(files[1]), "--detach", "--json"], capture_output=True, text=True,
                         env=env, timeout=300)
    line = next(x for x in out.stdout.splitlines() if x.startswith("{"))
    app_id = json.loads(line)["application_id"]
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            tasks = status(app_id).get("tasks") or []
            if tasks and all(t["state"] == "running" for t in tasks):
                break
            time.sleep(1)
        time.sleep(SETTLE_S)
        pids = am_processes(app_id)
        java, master = memory_mb(pids["java"]), memory_mb(pids["master"])
        return {"am": "skein's own" if stock else "patched", "app": app_id,
                "java_rss": round(java["VmRSS"], 1), "java_hwm": round(java["VmHWM"], 1),
                "master_rss": round(master["VmRSS"], 1),
                "am_rss": round(java["VmRSS"] + master["VmRSS"], 1)}
    finally:
        kill_app(cluster, app_id)


def main(runs: int) -> None:
    cluster = Cluster.default()
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        files = job_files(Path(scratch))
        for n in range(runs):
            for stock in (n % 2 == 0, n % 2 == 1):  # alternated, the order swapped each round
                result = one_run(cluster, stock, files)
                log(json.dumps(result))
                results.append(result)
    for am in ("patched", "skein's own"):
        mine = [r for r in results if r["am"] == am]
        print(f"{am}: median Java AM RSS {statistics.median(r['java_rss'] for r in mine)} MB "
              f"(peak {statistics.median(r['java_hwm'] for r in mine)}), AppMaster "
              f"(Java + master.py) {statistics.median(r['am_rss'] for r in mine)} MB, "
              f"{len(mine)} runs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
