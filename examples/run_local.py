#!/usr/bin/env python
"""Run a tfyarn example on 127.0.0.1 by hand, without YARN.

    python examples/run_local.py SCRIPT --ps N --workers M --work-dir DIR [-- script args]

Starts N ps, 1 chief and M workers, each with exactly the flags and environment
(TF_CONFIG, TFYARN_ROLE, TFYARN_TASK_INDEX) that tfyarn's agent gives it, waits for the
chief, then SIGTERMs the tasks still running (ps block forever by design). Prints every
task's exit code and the wall time from the first start to the chief's exit, and exits
with the chief's exit code. Task output goes to <work-dir>/logs/<role>_<index>.log.

It is the "no YARN" floor in benchmarks, so it does as little as possible.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

# Make `appmaster` importable however this file is started (from any directory).
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from appmaster.common.cluster_spec import ClusterSpec  # noqa: E402

HOST = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """Ports the kernel says are free; sockets stay open until all are picked (no repeats)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    script_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("script", help="the training script")
    parser.add_argument("--ps", type=int, default=1, help="number of ps tasks")
    parser.add_argument("--workers", type=int, default=1, help="workers besides the chief")
    parser.add_argument("--work-dir", required=True, help="shared work dir of all tasks")
    parser.add_argument("--timeout", type=float, default=None, help="seconds to wait for chief")
    parser.add_argument(
        "--grace",
        type=float,
        default=0.0,
        help="seconds the workers get to finish after the chief before SIGTERM",
    )
    return parser.parse_args(argv), script_args


def main(argv: list[str]) -> int:
    args, script_args = parse_args(argv)
    work_dir = os.path.abspath(args.work_dir)
    log_dir = os.path.join(work_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)

    counts = {"ps": args.ps, "chiefworker": 1, "worker": args.workers}
    ports = iter(free_ports(sum(counts.values())))
    spec = ClusterSpec(
        **{
            field: tuple(f"{HOST}:{next(ports)}" for _ in range(counts[role]))
            for field, role in (("ps", "ps"), ("chief", "chiefworker"), ("workers", "worker"))
        }
    )

    start = time.monotonic()
    tasks: dict[tuple[str, int], subprocess.Popen] = {}
    for role in ("ps", "chiefworker", "worker"):
        for index in range(counts[role]):
            env = dict(
                os.environ,
                TF_CONFIG=json.dumps(spec.tf_config(role, index)),
                TFYARN_ROLE=role,
                TFYARN_TASK_INDEX=str(index),
            )
            command = [sys.executable, args.script, *spec.flags(role, index, work_dir)]
            with open(os.path.join(log_dir, f"{role}_{index}.log"), "wb") as log:
                tasks[role, index] = subprocess.Popen(
                    command + script_args, env=env, stdout=log, stderr=subprocess.STDOUT
                )

    chief = tasks["chiefworker", 0]
    try:
        chief_rc = chief.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"chief still running after {args.timeout} s", file=sys.stderr)
        chief_rc = 124
    wall = time.monotonic() - start

    # Workers may finish by themselves; ps never do.
    deadline = time.monotonic() + args.grace
    workers = [p for (role, _), p in tasks.items() if role == "worker"]
    while time.monotonic() < deadline and any(p.poll() is None for p in workers):
        time.sleep(0.05)
    for p in tasks.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for (role, index), p in tasks.items():
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        note = " (SIGTERM)" if rc == -signal.SIGTERM else ""
        print(f"{role}:{index} exit {rc}{note}")
    print(f"wall {wall:.2f} s (start to chief exit), logs in {log_dir}")
    return chief_rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
