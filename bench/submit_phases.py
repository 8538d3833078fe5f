"""Where the seconds of submit -> YARN says RUNNING go, step by step, in one fresh process.

Each run is a fresh interpreter (as `tfyarn submit` is) that times, with the wall clock and
its own CPU: importing tfyarn's submit path; reading, planning and checking the job (the
work dir on HDFS, the pre-flight's REST calls); `yarn classpath --glob` (what skein runs
before its driver); skein's driver (a JVM; started again by skein, classpath included);
the submission (skein uploads the files, the RM accepts); then, from the bench, YARN until
the application is RUNNING (the AppMaster registered). The application is killed then.
The job: 2 light tasks (tests/apps/light_task.py).

    python -m bench.submit_phases --runs 5 [--label before --code /tmp/tfy-before]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.agent_cost import light_job
from bench.common import REPO, log
from tfyarn.localyarn.cluster import client_environment, rest
from tfyarn.localyarn.layout import Layout

CHILD = r"""
import json, os, resource, subprocess, sys, time
marks = {"process": float(sys.argv[3])}
def mark(name):
    marks[name] = time.time()
    marks[name + "_cpu"] = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
mark("python_up")
from tfyarn.submission import api
from tfyarn.hadoop.driver import skein_client
mark("imported")
planned = api.plan_job(sys.argv[1], sys.argv[2])
environment = planned.prepare(lambda line: None)
mark("planned")
subprocess.run(["yarn", "classpath", "--glob"], capture_output=True, check=True)
mark("classpath")
client = skein_client()
mark("driver")
app_id = planned.submit(client, environment)
mark("submitted")
print(json.dumps({"app_id": app_id, **marks}), flush=True)
client.close()
"""


def run_once(layout: Layout, run_dir: Path, code: Path = REPO) -> dict:
    env = {**os.environ, **client_environment(layout), "PYTHONPATH": str(code)}
    res_path, app_path = light_job(run_dir, 2, sleep_s=30)
    t0 = time.time()
    out = subprocess.run([sys.executable, "-c", CHILD, str(res_path), str(app_path), str(t0)],
                         capture_output=True, text=True, env=env, cwd=run_dir, check=True)
    marks = json.loads(out.stdout.strip().splitlines()[-1])
    app_id = marks["app_id"]
    while (state := rest(layout, f"apps/{app_id}")["app"]["state"]) not in (
            "RUNNING", "FINISHED", "FAILED", "KILLED"):
        time.sleep(0.05)
    running = time.time()
    subprocess.run(["yarn", "application", "-kill", app_id], env=env, capture_output=True)
    steps = {"python start": marks["python_up"] - t0,
             "imports": marks["imported"] - marks["python_up"],
             "read, plan, check (HDFS, pre-flight)": marks["planned"] - marks["imported"],
             "yarn classpath --glob": marks["classpath"] - marks["planned"],
             "skein driver (JVM, its own classpath call)": marks["driver"] - marks["classpath"],
             "upload + submit": marks["submitted"] - marks["driver"],
             "YARN: accepted -> RUNNING": running - marks["submitted"],
             # the bench's own classpath call is not part of a real submit
             "submit -> RUNNING": running - t0 - (marks["classpath"] - marks["planned"])}
    return {"state": state, "load": os.getloadavg()[0],
            "seconds": {k: round(v, 3) for k, v in steps.items()},
            "cpu_s": {"imports": round(marks["imported_cpu"], 3),
                      "plan": round(marks["planned_cpu"] - marks["imported_cpu"], 3)}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--label", default="current")
    parser.add_argument("--code", type=Path, default=REPO,
                        help="where tfyarn/ and appmaster/ come from (e.g. a `git archive`)")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/issue14/submit.json")
    opts = parser.parse_args(argv)
    layout = Layout(Path(os.environ["TFYARN_CLUSTER_DIR"]))
    data = json.loads(opts.out.read_text()) if opts.out.exists() else {"runs": []}
    runs = []
    for rep in range(opts.runs):
        run = {"label": opts.label, **run_once(layout, Path(f"/tmp/tfyarn-bench-submit/{rep}"),
                                                     opts.code)}
        log(json.dumps(run))
        runs.append(run)
    data["runs"].extend(runs)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(data, indent=1))
    print(f"| step ({opts.label}, median of {len(runs)}, load "
          f"{min(r['load'] for r in runs):.0f}–{max(r['load'] for r in runs):.0f}) | s |")
    print("|---|---|")
    for step in runs[0]["seconds"]:
        print(f"| {step} | {statistics.median(r['seconds'][step] for r in runs):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
