"""Sampling processes from /proc: CPU time and memory, the AppMaster's, a job's scripts."""

from __future__ import annotations

import os
import time

from tfyarn.localyarn.proctable import Proc, scan_processes

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def proc_usage(pid: int) -> tuple[float, int, int] | None:
    """(CPU seconds user+system, peak RSS kB (VmHWM), RSS kB) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    if "VmHWM" not in status:  # exiting: its memory is already gone
        return None
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return cpu, int(status["VmHWM"].split()[0]), int(status["VmRSS"].split()[0])


def proc_private_pss(pid: int) -> tuple[int, int] | None:
    """(private kB, PSS kB) of a live process (/proc/<pid>/smaps_rollup). RSS also counts
    the shared libraries' pages (libpython, libcrypto, hdfs-native's), which every process
    on the node that maps them shares: private memory is what one more process costs the
    node, and PSS its fair share of the shared pages."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            fields = {k: int(v.split()[0]) for k, v in
                      (line.split(":", 1) for line in f if ":" in line and "kB" in line)}
    except (OSError, ValueError):
        return None
    return fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0), fields.get("Pss", 0)


class AmSampler:
    """The last CPU/RSS reading of the AppMaster's processes before they went away.

    python: tfyarn's master.py (`python -m appmaster.master.main`, in the AM's container dir);
    java: skein's Java ApplicationMaster (its log dir names the app).
    """

    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        self.pids: dict[str, int] = {}
        self.last: dict[str, tuple[float, int, int]] = {}
        self.next_scan = 0.0

    def poll(self) -> None:
        if len(self.pids) < 2 and time.monotonic() >= self.next_scan:
            self.next_scan = time.monotonic() + 0.5
            for p in scan_processes():
                if "appmaster.master.main" in p.argv and self.app_id in p.cwd \
                        and p.cwd.endswith("_000001"):
                    self.pids.setdefault("python", p.pid)
                elif "com.anaconda.skein.ApplicationMaster" in p.argv and any(
                        self.app_id in a for a in p.argv):
                    self.pids.setdefault("java", p.pid)
        for name, pid in self.pids.items():
            usage = proc_usage(pid)
            if usage:
                self.last[name] = usage

    def summary(self) -> dict[str, float]:
        out = {}
        for name, (cpu, hwm, _rss) in self.last.items():
            out[f"{name}_cpu_s"] = round(cpu, 3)
            out[f"{name}_peak_rss_mb"] = round(hwm / 1024, 1)
        return out


def processes_of_app(app_id: str, script: str) -> list[Proc]:
    """The training script processes of one job (each runs in one of its container dirs)."""
    return [p for p in scan_processes()
            if p.mentions(app_id) and len(p.argv) > 1 and p.argv[1].endswith(script)]
