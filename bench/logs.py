"""Times from the logs: the ResourceManager's (containers' transitions, the app's states)
and the AppMaster's (its phase lines, failures, restarts). Log lines carry local time, ms.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime

from bench.cluster import Cluster

LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def log_time(line: str) -> float | None:
    """Epoch seconds of a log4j/Python logging line (``2026-11-21 01:29:51,856 ...``)."""
    match = LOG_TIME.match(line)
    if not match:
        return None
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


@dataclass
class RmEvents:
    """What the ResourceManager logged about one application."""

    accepted: float | None = None
    am_running: list[float] = field(default_factory=list)  # one per AppMaster attempt
    finished: float | None = None
    # container id -> {state: first time it entered it}
    containers: dict[str, dict[str, float]] = field(default_factory=dict)

    def task_containers(self, after: float = 0.0) -> dict[str, dict[str, float]]:
        """Containers other than the AppMasters', allocated at or after ``after``."""
        return {cid: states for cid, states in self.containers.items()
                if not cid.endswith("_000001") and states.get("ALLOCATED", 0.0) >= after}

    def last(self, state: str, after: float = 0.0) -> float | None:
        times = [s[state] for s in self.task_containers(after).values() if state in s]
        return max(times) if times else None


CONTAINER_TRANSITION = re.compile(
    r"rmcontainer\.RMContainerImpl: (container_\S+) Container Transitioned from \w+ to (\w+)")


class RmLog:
    """Reads the ResourceManager's log from where it was when the bench started a job."""

    def __init__(self, cluster: Cluster) -> None:
        self.path = cluster.rm_log
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def events(self, app_id: str) -> RmEvents:
        key = app_id.split("_", 1)[1]  # 1795223572505_0042: in app, attempt and container ids
        events = RmEvents()
        with open(self.path, errors="replace") as f:
            f.seek(self.offset)
            for line in f:
                if key not in line:
                    continue
                at = log_time(line)
                if at is None:
                    continue
                match = CONTAINER_TRANSITION.search(line)
                if match:
                    events.containers.setdefault(match.group(1), {}).setdefault(
                        match.group(2), at)
                elif f"{app_id} State change from SUBMITTED to ACCEPTED" in line:
                    events.accepted = events.accepted or at
                elif f"{app_id} State change from ACCEPTED to RUNNING" in line:
                    events.am_running.append(at)
                elif f"{app_id} State change from FINISHING to FINISHED" in line or (
                        f"{app_id} State change from" in line and "to KILLED" in line):
                    events.finished = at
        return events


PHASE = re.compile(r"phase (.+?): ([\d.]+) s after the container requests")
REGISTERED = re.compile(r"INFO (\w+ \d+) registered at (\S+)")
FAILURE = re.compile(r"WARNING failure (\d+) of (\w+): (.*)")
TRAINING_AGAIN = re.compile(r"INFO (\w+ \d+) training again ([\d.]+) s after its failure")
GENERATION = re.compile(r"restarting every task as generation (\d+)")
USAGE = re.compile(r"resource usage: cpu ([\d.]+) s, peak rss (\d+) kB")
FINAL_VIEW = "tfyarn-final-view "


@dataclass
class DriverLog:
    """The AppMaster's (tfyarn master.py's) log, parsed."""

    text: str
    first_line: float | None = None
    # generation -> phase -> absolute time; "requested" is derived from each phase line
    phases: dict[int, dict[str, float]] = field(default_factory=dict)
    registered: list[tuple[float, str]] = field(default_factory=list)
    failures: list[tuple[float, str]] = field(default_factory=list)
    training_again: list[tuple[float, str, float]] = field(default_factory=list)
    chief_finished: float | None = None
    ending: float | None = None
    usage: tuple[float, int] | None = None  # (cpu s, peak rss kB) if master.py logs it
    final_view: dict | None = None

    @classmethod
    def parse(cls, text: str) -> DriverLog:
        out = cls(text)
        generation = 0
        for line in text.splitlines():
            if line.startswith(FINAL_VIEW):
                with contextlib.suppress(ValueError):
                    out.final_view = json.loads(line[len(FINAL_VIEW):])
                continue
            at = log_time(line)
            if at is None:
                continue
            out.first_line = out.first_line or at
            if match := GENERATION.search(line):
                generation = int(match.group(1))
            elif match := PHASE.search(line):
                marks = out.phases.setdefault(generation, {})
                marks.setdefault("requested", at - float(match.group(2)))
                marks[match.group(1)] = at
            elif match := REGISTERED.search(line):
                out.registered.append((at, match.group(1)))
            elif match := FAILURE.search(line):
                out.failures.append((at, match.group(2)))
            elif match := TRAINING_AGAIN.search(line):
                out.training_again.append((at, match.group(1), float(match.group(2))))
            elif "chiefworker 0 finished" in line:
                out.chief_finished = at
            elif "ending the application" in line:
                out.ending = at
            if match := USAGE.search(line):
                out.usage = (float(match.group(1)), int(match.group(2)))
        return out


def aggregated_driver_log(cluster: Cluster, app_id: str, timeout_s: float = 60) -> str:
    """application.driver.log from `yarn logs` once YARN aggregated it ("" if it never did)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = subprocess.run(
            ["yarn", "logs", "-applicationId", app_id, "-log_files", "application.driver.log"],
            capture_output=True, text=True, env=cluster.env)
        if result.returncode == 0 and "tfyarn.master" in result.stdout:
            return result.stdout
        time.sleep(2)
    return ""
