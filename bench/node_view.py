"""Issue 36: what the nodes' views (tfyarn/localyarn/hostview.py) cost.

- cluster start: `tfyarn cluster down` then `tfyarn cluster up`, wall seconds (each run);
- a light job: the seed job's 4 roles running tests/apps/light_task.py (no TensorFlow,
  `--sleep 1`), `tfyarn submit --wait` in a fresh process, submit -> exit, wall seconds;
  one run first that is not counted (it ships the env to nodes that lack it), then the
  median of ``--jobs`` runs.

Runs on the cluster TFYARN_CLUSTER_DIR / TFYARN_CLUSTER_PORT_OFFSET name (restarting it).

    python -m bench.node_view [--starts 2] [--jobs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import LIGHT_APPS, log
from bench.jobs import job_files
from tfyarn.localyarn import cluster as localcluster
from tfyarn.localyarn.layout import Layout, default_state_dir

TFYARN = [sys.executable, "-m", "tfyarn.cli.main"]


def timed_run(command: list[str], env: dict[str, str] | None = None) -> float:
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr[-3000:]}")
    return seconds


def cluster_starts(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        subprocess.run([*TFYARN, "cluster", "down"], capture_output=True, check=True)
        out.append(timed_run([*TFYARN, "cluster", "up"]))
        log(f"cluster up: {out[-1]:.1f} s")
    return out


def light_jobs(runs: int) -> list[float]:
    layout = Layout(default_state_dir())
    env = localcluster.client_environment(layout)
    res, app = job_files(Path(tempfile.mkdtemp(prefix="node-view-")), args=["--sleep", "1"],
                         scripts_dir=LIGHT_APPS, entry="light_task.py",
                         components={role: {"yarn.memory": "256"}
                                     for role in ("ps", "chiefworker", "worker")})
    submit = [*TFYARN, "submit", "--resources", str(res), "--app-config", str(app), "--wait"]
    log(f"light job, warm-up: {timed_run(submit, env):.1f} s")
    out = []
    for _ in range(runs):
        out.append(timed_run(submit, env))
        log(f"light job: {out[-1]:.1f} s")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=3)
    args = parser.parse_args()
    starts = cluster_starts(args.starts)
    jobs = light_jobs(args.jobs)
    print(f"cluster up: median {statistics.median(starts):.1f} s "
          f"({', '.join(f'{s:.1f}' for s in starts)})")
    print(f"light job submit --wait: median {statistics.median(jobs):.1f} s "
          f"({', '.join(f'{s:.1f}' for s in jobs)})")


if __name__ == "__main__":
    main()
