"""One process's CPU and memory from /proc, and its children: for sampling processes that
the bench did not start (agents and AppMasters inside YARN's containers)."""

from __future__ import annotations

import os
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    cpu_s: float  # user + system
    rss_kb: int
    hwm_kb: int  # peak RSS so far


def usage(pid: int) -> Usage | None:
    """None once the process is gone (or exiting: its memory already freed)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = f.read().rsplit(")", 1)[1].split()[11:13]
        with open(f"/proc/{pid}/status") as f:
            memory = {k: int(v.split()[0]) for k, v in
                      (line.split(":", 1) for line in f if line.startswith(("VmRSS", "VmHWM")))}
    except (OSError, ValueError):
        return None
    if len(memory) < 2:
        return None
    return Usage(sum(map(int, ticks)) / CLOCK_TICKS, memory["VmRSS"], memory["VmHWM"])


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []
