"""What reporting training steps costs (tfyarn.progress.report_step) and the agent's reading.

- ``report_step``: ns per call in a fresh interpreter with TFYARN_PROGRESS_FILE set (its
  writer thread running), against the same loop without the call;
- a training-like loop (a NumPy matrix product per step, under 1 ms): blocks of 100 steps
  with and without a call per step, taking turns in one process: the step time's
  difference, in percent;
- the agent's read of its processes' files (appmaster/agent/steps.py), µs per read.

    python -m bench.progress_cost [--calls 2000000] [--steps 3000] [--out bench/results]

Nothing is asserted: the figures go to stdout and ``<out>/progress_cost.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from appmaster.agent.steps import StepReporter
from bench.common import REPO

CALLS = """
import sys, time
from tfyarn import progress
calls = int(sys.argv[1])
started = time.perf_counter()
for step in range(calls):
    pass
bare = time.perf_counter() - started
started = time.perf_counter()
for step in range(calls):
    progress.report_step(step)
reported = time.perf_counter() - started
print((reported - bare) / calls * 1e9)
"""

LOOP = """
import sys, time
import numpy as np
from tfyarn import progress
blocks = int(sys.argv[1]) // 100
a = np.random.default_rng(0).normal(size=(160, 160))
for _ in range(200):  # warm up
    a @ a
spent = {False: [], True: []}
step = 0
for block in range(2 * blocks):  # blocks of 100 steps, with and without, taking turns
    report = block % 2 == 1
    started = time.perf_counter()
    for _ in range(100):
        step += 1
        if report:
            progress.report_step(step)
        a @ a
    spent[report].append((time.perf_counter() - started) / 100 * 1e3)
spent = {k: sorted(v) for k, v in spent.items()}
print(spent[False][len(spent[False]) // 2], spent[True][len(spent[True]) // 2])
"""


def run(script: str, *args: str, progress_file: Path) -> list[float]:
    env = {**os.environ, "TFYARN_PROGRESS_FILE": str(progress_file), "PYTHONPATH": str(REPO),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, check=True,
                         capture_output=True, text=True, timeout=600)
    return [float(word) for word in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000_000)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "0"
        per_call = sorted(run(CALLS, str(args.calls), progress_file=path)[0]
                          for _ in range(args.repeats))
        # one process: blocks with and without the call take turns, the machine's load
        # hitting both alike; each run's median block
        runs = [run(LOOP, str(args.steps), progress_file=path) for _ in range(args.repeats)]
        without, with_call = [r[0] for r in runs], [r[1] for r in runs]
        files = [Path(scratch) / str(i) for i in range(8)]
        for i, file in enumerate(files):
            file.write_text(f"{i}\n")
        reporter = StepReporter(files, lambda steps: None, interval_s=60)
        reads = 2000
        started = time.perf_counter()
        for _ in range(reads):
            reporter.read()
        read_us = (time.perf_counter() - started) / reads * 1e6
    median = sorted(without)[len(runs) // 2], sorted(with_call)[len(runs) // 2]
    figures = {
        "report_step_ns_per_call": {"median": per_call[len(per_call) // 2],
                                    "min": per_call[0], "max": per_call[-1]},
        "loop_ms_per_step": {"without": without, "with": with_call},
        "loop_overhead_percent": (median[1] - median[0]) / median[0] * 100,
        "agent_read_us_8_files": read_us,
        "load_average": os.getloadavg()[0],
    }
    print(f"report_step: {figures['report_step_ns_per_call']['median']:.0f} ns per call "
          f"(min {per_call[0]:.0f}, max {per_call[-1]:.0f}) over {args.calls} calls")
    print(f"a ~1 ms NumPy step: {median[0]:.3f} ms without, {median[1]:.3f} ms with a "
          f"report per step ({figures['loop_overhead_percent']:+.2f} %; blocks of 100 steps "
          f"taking turns in one process, medians of {args.repeats} runs)")
    print(f"the agent's read of 8 processes' files: {read_us:.0f} µs")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "progress_cost.json").write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
