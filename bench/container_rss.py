"""The resident memory of each YARN container's whole process tree, as the NodeManager's
pmem check sees it (the sum of its processes' RSS), sampled every 2 s beside a running job.

Processes are grouped by the CONTAINER_ID in their environment (the launch scripts, the
agent, the wrapper and the task all inherit it). Prints one JSON line: the task containers'
peak tree RSS (max, median, min), the sum over every container at its peak moment, the
number of container processes, and the machine's lowest MemAvailable; then the biggest
trees, process by process. Used to size the rendezvous benchmark's containers (TASK_MB).

    python bench/container_rss.py SECONDS   # while `python -m bench.rendezvous ...` runs
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time


def sample() -> tuple[dict[str, float], dict[str, list[tuple[float, str]]]]:
    rss: dict[str, float] = collections.defaultdict(float)
    parts: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            container = next((e[13:].decode() for e in env if e.startswith(b"CONTAINER_ID=")),
                             None)
            if not container:
                continue
            with open(f"/proc/{pid}/status") as f:
                mb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, StopIteration):
            continue
        rss[container] += mb
        parts[container].append((round(mb, 1), command[-60:]))
    return rss, parts


def main(seconds: float) -> None:
    peak: dict[str, float] = collections.defaultdict(float)
    shape: dict[str, list[tuple[float, str]]] = {}
    total_peak = processes_peak = 0.0
    available_min = float("inf")
    end = time.time() + seconds
    while time.time() < end:
        rss, parts = sample()
        for container, mb in rss.items():
            if mb > peak[container]:
                peak[container], shape[container] = mb, parts[container]
        total_peak = max(total_peak, sum(rss.values()))
        processes_peak = max(processes_peak, sum(len(p) for p in parts.values()))
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable"):
                    available_min = min(available_min, int(line.split()[1]) / 1024)
        time.sleep(2)
    tasks = sorted(mb for c, mb in peak.items() if not c.endswith("_000001"))
    print(json.dumps({
        "task_containers": len(tasks), "max_mb": round(max(tasks, default=0), 1),
        "median_mb": round(tasks[len(tasks) // 2], 1) if tasks else 0,
        "min_mb": round(min(tasks, default=0), 1),
        "all_containers_rss_sum_peak_mb": round(total_peak),
        "container_processes_peak": processes_peak,
        "mem_available_min_mb": round(available_min)}))
    for container in sorted(peak, key=peak.get)[-3:]:
        print(container, round(peak[container], 1), shape[container])


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300)
