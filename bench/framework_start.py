"""Submit -> every rank started: a 4-rank PyTorch (or JAX) job against the same job as
TensorFlow.

Both jobs: 4 `worker` tasks of 1024 MB, they and the AppMaster on the local cluster's gpu
partition (one node: a 5.7 GB PyTorch env is localized once, the nodes sharing one disk),
each shipping its client's env: examples/pytorch_ddp.py (`site.global.framework: pytorch`,
one epoch) or examples/jax_data_parallel.py (`jax`, 50 steps) from a venv with the
framework, examples/mwms.py (TensorFlow, MultiWorkerMirroredStrategy, worker 0 the chief,
10 steps) from this checkout's .venv. Each run times `tfyarn submit --detach` and
then polls `tfyarn status --json` every 0.2 s until all 4 tasks run (their scripts started:
the agents said so); the AppMaster's own phases (container requests -> all running) come
from the same JSON. Run 1 of each may localize its env; the table shows every run.

    TFYARN_CLUSTER_DIR=... python -m bench.framework_start --framework pytorch \
        --python VENV/bin/python
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import EXAMPLES, REPO, G, write_job_files

RANKS = 4
SCRIPTS = {"pytorch": ("pytorch_ddp.py", ["--epochs", "1"]),
           "jax": ("jax_data_parallel.py", ["--steps", "50"]),
           "tensorflow": ("mwms.py", ["--train_steps", "10", "--save_every", "10"])}


def job_files(work: Path, framework: str) -> tuple[Path, Path]:
    entry, args = SCRIPTS[framework]
    one_node = {"yarn.label.expression": "gpu"}
    resources = {"components": {"slider-appmaster": one_node, "worker": {
        "yarn.role.priority": "1", "yarn.component.instances": str(RANKS),
        "yarn.memory": "1024", "yarn.vcores": "1", **one_node}}}
    app = {"global": {G + "user.scripts.dir": str(EXAMPLES), G + "user.scripts.entry": entry,
                      G + "user.scripts.args": args, G + "framework": framework,
                      G + "app.name": f"bench-start-{framework}"}}
    return write_job_files(work, resources, app)


def tfyarn(python: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "tfyarn.cli.main", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=900)


def one_run(python: str, framework: str, work: Path) -> dict:
    res, cfg = job_files(work, framework)
    started = time.monotonic()
    done = tfyarn(python, "submit", "--resources", str(res), "--app-config", str(cfg),
                  "--detach", "--json")
    submitted = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    app_id = json.loads(done.stdout.strip().splitlines()[-1])["application_id"]
    view: dict = {}
    while True:
        status = tfyarn(sys.executable, "status", app_id, "--json")
        if status.returncode == 0:
            view = json.loads(status.stdout).get("job") or {}
            states = [t["state"] for t in view.get("tasks", [])]
            if len(states) == RANKS and all(s in ("running", "finished") for s in states):
                break
        if time.monotonic() - started > 600:
            raise SystemExit(f"{app_id}: not every rank started in 600 s: {view}")
        time.sleep(0.2)
    every_rank = time.monotonic() - started
    final = None
    while final in (None, "UNDEFINED") and time.monotonic() - started < 900:
        time.sleep(1)  # one job at a time: the next starts on a quiet node
        status = tfyarn(sys.executable, "status", app_id, "--json")
        if status.returncode == 0:
            final = json.loads(status.stdout).get("application", {}).get("final_status")
    return {"framework": framework, "app_id": app_id, "submit_s": round(submitted, 2),
            "every_rank_started_s": round(every_rank, 2), "phases": view.get("phases"),
            "final": final}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("pytorch", "jax"), default="pytorch")
    parser.add_argument("--python", required=True, help="a venv's python with the framework")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    clients = {"tensorflow": sys.executable, args.framework: args.python}
    runs = []
    for number in range(1, args.runs + 1):
        for framework, python in clients.items():
            run = one_run(python, framework, Path("/tmp/bench-framework-start") / framework)
            run["run"] = number
            runs.append(run)
            print(json.dumps(run), flush=True)
    for framework in clients:
        later = [r["every_rank_started_s"] for r in runs
                 if r["framework"] == framework and r["run"] > 1]
        if later:
            print(f"{framework}: submit -> every rank started, median of runs 2..: "
                  f"{statistics.median(later):.1f} s")
    out = args.out or REPO / f"bench/results/framework-start-{args.framework}.json"
    out.write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
