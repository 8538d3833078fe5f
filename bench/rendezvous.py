"""Experiment 2: rendezvous at scale, N light tasks (tests/apps/light_task.py, no TensorFlow).

For N tasks: N/2 - 1 ps and the chief in the default partition, N/2 workers in the `gpu`
partition (N = 2: the chief and 1 worker), 128 MB and 1 vcore each. Every light task writes
<work_dir>/light/<job>_<index>.json first thing (its mtime is when the task started), then
the chief and workers sleep and exit; the job ends with the chief.

Per N: submit -> every task started, the phases in between, the time from the last export
(the AppMaster's `all registered`) to every task started, and the AppMaster's CPU seconds
and peak RSS (VmHWM), read from /proc just before it exits: tfyarn's master.py (Python) and
skein's Java AppMaster. Floor (b) (the same containers as a plain skein application running
the light task directly) runs in the same repetition.

The shared local cluster has 16 vcores per NodeManager (two in the default partition, one in
`gpu`), so N = 64 cannot fit there (see docs/benchmarks.md); `--cluster private` runs
everything on a bench-owned second local YARN with 64 vcores per NodeManager
(bench/private_cluster.py), `--cluster auto` (the default) does so only when some N does not
fit the shared one.

Each tfyarn run also checks that every task started on the complete cluster spec (its
record's flags and TF_CONFIG: N distinct addresses, the same in all N; `meta.spec_ok`), and
counts the containers YARN allocated and those skein's AppMaster released unused.

    python -m bench.rendezvous --n 2,4,8,16,32,64 --runs 3 [--cluster auto|shared|private]
    python -m bench.rendezvous --n 4,64,200 --runs 3 --cluster private --private-vcores 128 \
        --variants head --name rendezvous-200     # issue 28: 200 tasks (docs/benchmarks.md §2)
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import sys
from pathlib import Path

from bench import floors, tables
from bench.cluster import Cluster, wait_for_room
from bench.common import LIGHT_APPS, REPO, RESULTS, SCRATCH, log
from bench.jobs import job_files, run_to_end
from bench.logs import RmEvents
from bench.private_cluster import private_cluster
from bench.results import kinds_to_run, machine_info, record_run, save
from bench.variants import VARIANTS, Variant, make_variant
from bench.watch import mtimes

TASK_MB, TASK_VCORES = 128, 1  # --task-mb changes TASK_MB


def layout_of(n: int) -> dict[str, int]:
    """ps / chiefworker / worker counts of an N-task job."""
    workers = max(1, n // 2)
    return {"ps": n - 1 - workers, "chiefworker": 1, "worker": workers}


def light_resources(n: int) -> dict:
    res = json.loads((REPO / "resources.json").read_text())
    counts = layout_of(n)
    for role, count in counts.items():
        res["components"][role].update({
            "yarn.component.instances": str(count), "yarn.memory": str(TASK_MB),
            "yarn.vcores": str(TASK_VCORES)})
    return res


def needs(n: int) -> dict[str, int]:
    """Vcores per partition: the AppMaster (1) and the ps and chief in the default one."""
    counts = layout_of(n)
    return {"": 1 + (counts["ps"] + counts["chiefworker"]) * TASK_VCORES,
            "gpu": counts["worker"] * TASK_VCORES}


def fits(cluster: Cluster, n: int) -> str | None:
    """None if N tasks fit the cluster's capacity at all, else why not."""
    capacity = cluster.free_vcores()
    for part, want in needs(n).items():
        total = capacity.get(part, (0, 0))[1]
        if want > total:
            return (f"{n} tasks need {want} vcores in the {part or 'default'} partition, which "
                    f"has {total} (1 vcore is YARN's smallest container)")
    return None


def sleep_for(n: int) -> float:
    """How long the chief and workers live: every task must start before the chief ends."""
    return 5.0 + n / 4


def run_tfyarn_light(cluster: Cluster, run_dir: Path, n: int, var: Variant,
                     timeout_s: float = 600) -> dict:
    res_path, app_path = job_files(
        run_dir, args=["--sleep", str(sleep_for(n))], scripts_dir=LIGHT_APPS,
        entry="light_task.py", resources=light_resources(n),
        settings={"app.name": f"tfyarn-bench-light-{n}"})
    run = run_to_end(cluster, res_path, app_path, var, f" ({n} light tasks)", timeout_s)
    records = cluster.task_files(run.app_id, "light/*.json")
    started = mtimes(records)
    t = {**run.timeline(),
         "tasks_started": max(started.values()) if len(started) >= n else None}
    return {"kind": "tfyarn", "variant": var.name, "app_id": run.app_id, "n": n, "t": t,
            "meta": {**run.meta(), "started": len(started), **spec_check(records, n),
                     **container_counts(run.events),
                     "asked_again": run.follower.driver_text.count("asking YARN again")}}


def container_counts(events: RmEvents) -> dict[str, int]:
    """Task containers the ResourceManager allocated, and those the AppMaster handed back
    unused (ACQUIRED -> RELEASED: skein's AM got more than it had asks for at that moment)."""
    containers = events.task_containers()
    return {"allocated": sum("ALLOCATED" in s for s in containers.values()),
            "released_unused": sum("RELEASED" in s for s in containers.values())}


def spec_check(records: list[Path], n: int) -> dict:
    """Did every task start on the complete cluster spec? Each light task's record holds the
    flags and TF_CONFIG it was started with: every one must name N distinct addresses (the
    ps, then the chief and the workers, as many as the layout has) and all the same ones."""
    counts = layout_of(n)
    want = {"ps": counts["ps"], "worker": counts["chiefworker"] + counts["worker"]}
    specs, complete, problems = set(), 0, []
    for path in records:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            problems.append(f"{path.name}: unreadable ({exc})")
            continue
        flags = dict(arg.split("=", 1) for arg in record["argv"] if arg.startswith("--")
                     and "=" in arg)
        hosts = {job: [h for h in flags.get(f"--{job}_hosts", "").split(",") if h]
                 for job in want}
        cluster = record.get("tf_config", {}).get("cluster", {})
        tf_hosts = {"ps": cluster.get("ps", []),
                    "worker": cluster.get("chief", []) + cluster.get("worker", [])}
        addresses = hosts["ps"] + hosts["worker"]
        ok = (all(len(hosts[job]) == k for job, k in want.items())
              and len(set(addresses)) == n and all(":" in a for a in addresses)
              and sorted(tf_hosts["ps"] + tf_hosts["worker"]) == sorted(addresses))
        if ok:
            complete += 1
            specs.add((tuple(hosts["ps"]), tuple(hosts["worker"])))
        elif len(problems) < 5:
            problems.append(f"{path.name}: {len(hosts['ps'])} ps, {len(hosts['worker'])} "
                            f"workers in its flags, TF_CONFIG {len(tf_hosts['ps'])} + "
                            f"{len(tf_hosts['worker'])}")
    return {"complete_spec": complete, "distinct_specs": len(specs),
            "spec_ok": complete == n == len(records) and len(specs) == 1,
            **({"spec_problems": problems} if problems else {})}


def run_all(cluster: Cluster, sizes: list[int], runs: int, variants: list[Variant],
            with_floor: bool, data: dict, out: Path) -> None:
    scratch = SCRATCH / "rendezvous"
    shutil.rmtree(scratch, ignore_errors=True)
    for rep in range(runs):
        for n in sizes:
            reason = fits(cluster, n)
            if reason:
                if rep == 0:
                    log(f"N={n}: skipped: {reason}")
                    data["skipped"][str(n)] = reason
                continue
            for kind, var, name in kinds_to_run(variants, ["skein"] if with_floor else []):
                run_dir = scratch / f"{n}-{rep}-{name}"
                conditions = wait_for_room(cluster, needs(n), 600)
                log(f"N={n} run {rep + 1}/{runs} {name} ({conditions})")
                if kind == "tfyarn":
                    run = functools.partial(run_tfyarn_light, cluster, run_dir, n, var)
                else:
                    run = functools.partial(floors.run_skein_light, cluster, run_dir,
                                            light_resources(n), n, sleep_for(n))
                record_run(data, out, run_dir, kind=kind, name=name, rep=rep,
                           conditions=conditions, run=run, show=tables.print_light_run,
                           cluster=cluster, n=n)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="2,4,8,16,32,64", help="task counts, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", default="current",
                        help="comma-separated: " + ", ".join(VARIANTS))
    parser.add_argument("--no-floor", action="store_true", help="skip floor (b)")
    parser.add_argument("--cluster", choices=("auto", "shared", "private"), default="auto")
    parser.add_argument("--private-vcores", type=int, default=64)
    parser.add_argument("--task-mb", type=int, default=128,
                        help="each task's yarn.memory (its container's whole process tree's "
                             "resident memory must fit: memory is enforced)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="rendezvous",
                        help="results file: OUT/NAME.json")
    opts = parser.parse_args(argv)
    global TASK_MB  # noqa: PLW0603 (light_resources and needs read it)
    TASK_MB = opts.task_mb
    sizes = [int(x) for x in opts.n.split(",") if x]
    variants = [make_variant(v) for v in opts.variants.split(",") if v]
    # The shared cluster is read only when it may be used: --cluster private runs with it down.
    shared = None if opts.cluster == "private" else Cluster.default()
    use_private = shared is None or (
        opts.cluster == "auto" and any(fits(shared, n) for n in sizes))
    data = {"experiment": "rendezvous", "machine": machine_info(), "sizes": sizes,
            "runs_per_n": opts.runs, "runs": [], "skipped": {},
            "cluster": (f"bench-owned local YARN, {opts.private_vcores} vcores per NodeManager"
                        if use_private else "the shared local YARN (16 vcores per NodeManager)"),
            "layout": {str(n): layout_of(n) for n in sizes},
            "task_mb": TASK_MB, "task_vcores": TASK_VCORES,
            "variants": {v.name: v.info for v in variants}}
    out = opts.out / f"{opts.name}.json"
    with contextlib.ExitStack() as stack:
        cluster = (stack.enter_context(private_cluster(opts.private_vcores))
                   if use_private else shared)
        run_all(cluster, sizes, opts.runs, variants, not opts.no_floor, data, out)
    data["machine"]["load_at_end"] = os.getloadavg()
    save(out, data)
    print(tables.light_tables(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
