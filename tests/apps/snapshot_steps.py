"""A rank of a PyTorch or JAX group that saves its own snapshot, as such scripts do, with no
framework: what tfyarn keeps of it across a restart does not depend on one.

Rank 0 writes ``snapshot.pt`` in the work dir (a temporary name renamed into place) at the
steps of --snapshot_at; every rank starts from the snapshot it finds there (the one tfyarn
restored), says so on stdout, and runs to --steps. Rank 0 writes ``result.json`` at the end:
the generation and the step it started from.
"""

import argparse
import json
import os
import time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--snapshot_at", default="50,100")
parser.add_argument("--step_sleep", type=float, default=0.05)
args = parser.parse_args()

rank = int(os.environ.get("RANK", os.environ.get("JAX_PROCESS_ID", "0")))
generation = int(os.environ["TFYARN_GENERATION"])
work = Path(os.environ["TFYARN_WORK_DIR"])
snapshot = work / "snapshot.pt"
first = json.loads(snapshot.read_text())["step"] if snapshot.exists() else 0
print(f"rank {rank} of generation {generation} starts at step {first}", flush=True)
saves = {int(step) for step in args.snapshot_at.split(",") if step}
for step in range(first + 1, args.steps + 1):
    time.sleep(args.step_sleep)
    if rank == 0 and step in saves:
        partial = work / "snapshot.pt.tmp"  # a name tfyarn never copies
        partial.write_text(json.dumps({"step": step}))
        os.replace(partial, snapshot)
        print(f"rank 0 saved a snapshot at step {step}", flush=True)
if rank == 0:
    (work / "result.json").write_text(json.dumps({"generation": generation, "first_step": first}))
