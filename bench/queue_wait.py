"""Gang jobs that wait their turn: N jobs submitted together to a queue that holds one at a
time, how long the lot takes against the sum of their run times, and how long each waited
for the queue.

Each job is the light gang job of the tests (tests/jobtools.py's gang_job: a chief and two
workers of 4 GB, 12.5 GB of fifo's or fair's 16 with the AppMaster, no TensorFlow, "training"
--sleep seconds), on the local cluster with the suite's env already localized on every node.
All N are planned first, then handed to YARN at the same moment. Per job:

- waited for the queue: its AppMaster's wait for a container (YARN's launchTime minus its
  startedTime) plus its tasks' (the AppMaster's "all given" phase: from the containers'
  requests to the last one given, given-back rounds included);
- ran: from its first task running its script to the application's end;
- rounds: how many times it gave back part of its containers.

    TFYARN_CLUSTER_DIR=... python -m bench.queue_wait --jobs 3 --queue fair [--sleep 8]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from barenodes import client_environ, ship_env_to_every_node  # noqa: E402
from jobtools import GANG_SLEEP_S, gang_job, submit_together  # noqa: E402

from appmaster.page.view import JobView  # noqa: E402
from bench.common import FINAL_STATES, RESULTS, SCRATCH, log  # noqa: E402
from tfyarn.hadoop import rmrest  # noqa: E402
from tfyarn.localyarn import cluster  # noqa: E402
from tfyarn.localyarn.layout import Layout, default_state_dir  # noqa: E402
from tfyarn.watch import jobreport  # noqa: E402

WAIT_S = 1800


def job_view(app_id: str) -> JobView:
    """The job's last view, as `tfyarn status` reads it once the job ended."""
    reader = rmrest.reports_reader()
    assert reader is not None, "the ResourceManager's REST API does not answer"
    view, _ = jobreport.final_view(reader.application_report(app_id))
    assert view is not None, f"no final view of {app_id}"
    return view


def figures(layout: Layout, app_id: str) -> dict:
    app = cluster.rest(layout, f"apps/{app_id}")["app"]
    view = job_view(app_id)
    spans = (view.history or {}).get("spans", [])
    trained = min((s["running"] for s in spans if s["running"]), default=None)  # None: failed
    am_wait = (app["launchTime"] - app["startedTime"]) / 1000
    tasks_wait = view.phases.get("all given", 0.0)
    return {"app_id": app_id, "name": app["name"], "final_status": app["finalStatus"],
            "submitted": app["startedTime"] / 1000, "ended": app["finishedTime"] / 1000,
            "appmaster_waited_s": am_wait, "tasks_waited_s": tasks_wait,
            "waited_s": am_wait + tasks_wait,
            "ran_s": None if trained is None else app["finishedTime"] / 1000 - trained,
            "rounds": sum(1 for mark in (view.history or {}).get("marks", [])
                          if mark[1] == "queue")}


def run(layout: Layout, queue: str, count: int, sleep_s: float) -> dict:
    import skein

    scratch = SCRATCH / f"queue-wait-{queue}-{count}-{int(time.time())}"
    jobs = [gang_job(scratch, f"gang-{queue}-{i}", queue, sleep_s=sleep_s) for i in range(count)]
    load = os.getloadavg()[0]
    with skein.Client() as client:
        app_ids = submit_together(jobs, client)
    log(f"{count} jobs submitted to {queue}: {', '.join(app_ids)}")
    deadline = time.monotonic() + WAIT_S
    while any(cluster.rest(layout, f"apps/{a}")["app"]["state"] not in FINAL_STATES
              for a in app_ids):
        assert time.monotonic() < deadline, f"{app_ids} not ended after {WAIT_S} s"
        time.sleep(2)
    per_job = sorted((figures(layout, a) for a in app_ids), key=lambda f: f["ended"])
    wall = max(f["ended"] for f in per_job) - min(f["submitted"] for f in per_job)
    ran = sum(f["ran_s"] or 0.0 for f in per_job)
    return {"queue": queue, "jobs": count, "sleep_s": sleep_s, "load_at_start": load,
            "wall_s": wall, "sum_ran_s": ran, "per_job": per_job}


def report(result: dict) -> str:
    lines = [f"{result['jobs']} jobs in queue {result['queue']} (load {result['load_at_start']:.1f}"
             f"): all done in {result['wall_s']:.0f} s; their run times add up to "
             f"{result['sum_ran_s']:.0f} s ({result['wall_s'] / result['sum_ran_s']:.2f}x)"]
    lines.append(f"  {'job':<12} {'status':<10} {'waited':>8} {'(AM':>6} {'tasks)':>7} "
                 f"{'ran':>6} {'rounds':>6}")
    for f in result["per_job"]:
        lines.append(f"  {f['name']:<12} {f['final_status']:<10} {f['waited_s']:7.1f}s "
                     f"{f['appmaster_waited_s']:5.1f}s {f['tasks_waited_s']:6.1f}s "
                     + (f"{f['ran_s']:5.1f}s " if f["ran_s"] is not None else "    -  ")
                     + f"{f['rounds']:6d}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[3, 6])
    parser.add_argument("--queue", nargs="+", default=["fifo", "fair"])
    parser.add_argument("--sleep", type=float, default=GANG_SLEEP_S)
    args = parser.parse_args()
    layout = Layout(default_state_dir())
    if not cluster.is_running(layout):
        cluster.up(layout)
    results = []
    with client_environ(cluster.client_environment(layout)):
        ship_env_to_every_node(layout)
        for count in args.jobs:
            for queue in args.queue:
                result = run(layout, queue, count, args.sleep)
                print(report(result), flush=True)
                results.append(result)
    out = RESULTS / "queue_wait.json"
    out.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                               "uptime": Path("/proc/loadavg").read_text().strip(),
                               "runs": results}, indent=2))
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
