"""Experiment 1 (with the floors of experiment 4): the seed job, phase by phase.

The seed job is the top-level resources.json/appConfig.json: 1 ps, 1 chief (default
partition) and 2 workers (the `gpu` partition) training examples/mnist1.py. Each repetition
runs, back to back so that they share the machine's conditions:

- tfyarn, each variant asked for (bench/variants.py VARIANTS): `current` is this checkout,
  `before` the code before the start-up and recovery fixes;
- floor (b): the same containers as a plain skein application, no rendezvous;
- floor (a): the same TensorFlow processes started by hand on 127.0.0.1.

    python -m bench.seed_job --runs 5 [--variants before,current] [--out bench/results]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from bench import floors, tables
from bench.cluster import Cluster, wait_for_room
from bench.common import REPO, RESULTS, SCRATCH, log
from bench.jobs import job_files, run_to_end
from bench.results import kinds_to_run, machine_info, record_run, save
from bench.variants import VARIANTS, Variant, make_variant
from bench.watch import LogWatch, mtimes

JOB_TIMEOUT_S = 600


def trainer_files(resources: dict) -> list[str]:
    workers = int(resources["components"]["worker"]["yarn.component.instances"])
    return ["chiefworker-0.stdout", *(f"worker-{i}.stdout" for i in range(workers))]


def trainer_watch(cluster: Cluster, resources: dict) -> Callable[[str], LogWatch]:
    """Watches the trainers' stdout for their first "start" and "step" lines."""
    names = trainer_files(resources)
    return lambda app_id: LogWatch(
        lambda: [d / n for d in cluster.app_log_dirs(app_id) for n in names],
        {"start": floors.START, "step": floors.STEP})


def run_tfyarn_seed(cluster: Cluster, run_dir: Path, args: list[str], var: Variant,
                    timeout_s: float = JOB_TIMEOUT_S) -> dict:
    resources = json.loads((REPO / "resources.json").read_text())
    res_path, app_path = job_files(run_dir, args=args, settings={"app.name": "tfyarn-bench-seed"})
    names = trainer_files(resources)
    n_tasks = len(names) + int(resources["components"]["ps"]["yarn.component.instances"])
    run = run_to_end(cluster, res_path, app_path, var, "", timeout_s,
                     trainer_watch(cluster, resources))
    flags = mtimes(cluster.task_files(run.app_id, "flags/*.json"))
    result = next(iter(cluster.task_files(run.app_id, "result.json")), None)
    trainers = [t for _, t in run.follower.watch.first("step")]
    t = {
        **run.timeline(),
        "am_container_launched": run.final["launchTime"] / 1000,
        "scripts_started": max(flags.values()) if len(flags) == n_tasks else None,
        "training": max(trainers) if len(trainers) == len(names) else None,
        "chief_done": result.stat().st_mtime if result else None,
        "chief_finished_am": run.driver.chief_finished,
    }
    return {"kind": "tfyarn", "variant": var.name, "app_id": run.app_id, "t": t,
            "meta": run.meta()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--variants", default="current",
                        help="comma-separated: " + ", ".join(VARIANTS))
    parser.add_argument("--floors", default="skein,local", help="comma-separated, or none")
    parser.add_argument("--args", default="", help="extra mnist1.py args (default: none)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    opts = parser.parse_args(argv)
    cluster = Cluster.default()
    variants = [make_variant(v) for v in opts.variants.split(",") if v]
    floor_kinds = [f for f in opts.floors.split(",") if f and f != "none"]
    args = opts.args.split()
    resources = json.loads((REPO / "resources.json").read_text())
    data = {"experiment": "seed_job", "machine": machine_info(), "args": args,
            "runs_per_kind": opts.runs, "runs": [],
            "variants": {v.name: v.info for v in variants}}
    out = opts.out / "seed_job.json"
    scratch = SCRATCH / "seed_job"
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        for rep in range(opts.runs):
            for kind, var, name in kinds_to_run(variants, floor_kinds):
                run_dir = scratch / f"{rep}-{name}"
                # The seed job needs 2 vcores in each partition (+1 for the AppMaster).
                conditions = wait_for_room(cluster, {"": 3, "gpu": 2}, 300)
                log(f"run {rep + 1}/{opts.runs} {name} ({conditions})")
                if kind == "tfyarn":
                    run = functools.partial(run_tfyarn_seed, cluster, run_dir, args, var)
                elif kind == "skein":
                    run = functools.partial(floors.run_skein_seed, cluster, run_dir, resources,
                                            args)
                else:
                    run = functools.partial(floors.run_local_seed, run_dir, args)
                record_run(data, out, run_dir, kind=kind, name=name, rep=rep,
                           conditions=conditions, run=run, show=tables.print_run,
                           cluster=cluster)
    finally:
        floors.SkeinClient.close()
    data["machine"]["load_at_end"] = os.getloadavg()
    save(out, data)
    tables.print_seed_summary(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
