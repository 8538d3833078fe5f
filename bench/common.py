"""What every benchmark shares: the cluster, submitting, watching a job, and reading its logs.

Every time here is an absolute wall-clock time (epoch seconds) taken on this machine, where
YARN runs too, so the bench's own clock, YARN's REST times (epoch ms), the ResourceManager's
log and the AppMaster's log (local time, ms) all line up. Phases are differences of those.

Sources, per point of a job's start-up:
- submit: the bench, just before it starts `tfyarn submit` (a fresh process, as a user would);
- RM accepted: YARN's REST `startedTime`;
- AM running, containers allocated/acquired/running: the ResourceManager's own log
  (`RMAppImpl ... ACCEPTED to RUNNING`, `RMContainerImpl ... Transitioned from NEW to
  ALLOCATED`, `... to ACQUIRED`, `... to RUNNING`), read from where it was at submit;
- requested, all started/registered/spec published/all running: the AppMaster's phase
  lines (`phase <name>: X s after the container requests`) in application.driver.log;
- script started: the mtime of the file each example writes once, first thing, in its own
  local work dir on the host that ran it (`<container dir>/work/flags/<job>_<index>.json` for
  mnist1.py, `.../work/light/...` for the light task; the job's work dir is on HDFS, and the
  NodeManagers keep finished containers' dirs for a while);
- training: the first `step N` line of each worker's stdout, polled from the NodeManager's
  log directory (the file's mtime when that line is the newest one, else when it was seen);
- job end: YARN's REST `finishedTime`.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tfyarn.localyarn import cluster as localcluster
from tfyarn.localyarn import layout as layout_module
from tfyarn.localyarn.layout import Layout, NodeManagerSpec, default_state_dir
from tfyarn.localyarn.proctable import Proc, scan_processes
from tfyarn.workdir import default_work_dir

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
LIGHT_APPS = REPO / "tests" / "apps"
RESULTS = REPO / "bench" / "results"
SCRATCH = Path(os.environ.get("TFYARN_BENCH_SCRATCH", "/tmp/tfyarn-bench"))
G = "site.global."
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")
POLL_S = 0.1


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


# ---------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class Cluster:
    """A running local YARN and the client environment that points at it."""

    layout: Layout
    env: dict[str, str]

    @classmethod
    def default(cls) -> Cluster:
        layout = Layout(default_state_dir())
        if not localcluster.is_running(layout):
            raise SystemExit("the local YARN is not running: `tfyarn cluster up` first")
        return cls(layout, localcluster.client_environment(layout))

    def rest(self, path: str) -> dict:
        return localcluster.rest(self.layout, path)

    def app(self, app_id: str) -> dict:
        return self.rest(f"apps/{app_id}")["app"]

    def active_apps(self) -> list[dict]:
        return localcluster.running_apps(self.layout)

    def node_managers(self) -> tuple[NodeManagerSpec, ...]:
        return self.layout.node_managers

    def free_vcores(self) -> dict[str, tuple[int, int]]:
        """Per partition ("" = default): (free vcores, total vcores) of RUNNING nodes."""
        out: dict[str, tuple[int, int]] = {}
        for node in localcluster.nodes(self.layout):
            if node.get("state") != "RUNNING":
                continue
            label = ",".join(node.get("nodeLabels") or [])
            free, total = out.get(label, (0, 0))
            avail = int(node.get("availableVirtualCores", 0))
            out[label] = (free + avail, total + avail + int(node.get("usedVirtualCores", 0)))
        return out

    def app_log_dirs(self, app_id: str) -> list[Path]:
        """The NodeManagers' live log directory of each of the app's containers."""
        dirs: list[Path] = []
        for nm in self.node_managers():
            base = self.layout.node_dir(nm) / "containers" / app_id
            with contextlib.suppress(OSError):
                dirs += [p for p in base.iterdir() if p.name.startswith("container_")]
        return dirs

    def task_files(self, app_id: str, pattern: str) -> list[Path]:
        """Files matching ``pattern`` in the local work dir (`<container dir>/work`) of each
        of the app's containers, on whichever host ran it (the NodeManagers keep finished
        containers' dirs for yarn.nodemanager.delete.debug-delay-sec)."""
        found: list[Path] = []
        for nm in self.node_managers():
            appcache = self.layout.node_dir(nm) / "local" / "usercache"
            found += appcache.glob(f"*/appcache/{app_id}/container_*/work/{pattern}")
        return sorted(found)

    def job_dir(self, app_id: str) -> str:
        """The job's work dir on HDFS (tfyarn's default, which bench jobs keep)."""
        return default_work_dir(self.env).replace("${APP_ID}", app_id)

    def remove_job_dir(self, app_id: str) -> None:
        """The job's work dir on HDFS, checkpoints and all, goes (if it is there)."""
        from hdfs_native import Client

        url = urlsplit(self.job_dir(app_id))
        with contextlib.suppress(FileNotFoundError):
            Client(f"{url.scheme}://{url.netloc}").delete(url.path, recursive=True)

    @property
    def rm_log(self) -> Path:
        return self.layout.daemon_log("rm")


# ---------------------------------------------------------------- time in logs

LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def log_time(line: str) -> float | None:
    """Epoch seconds of a log4j/Python logging line (``2026-11-21 01:29:51,856 ...``)."""
    match = LOG_TIME.match(line)
    if not match:
        return None
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


# ---------------------------------------------------------------- the ResourceManager's log


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


# ---------------------------------------------------------------- the AppMaster's log

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


# ---------------------------------------------------------------- watching files


@dataclass
class FileMarks:
    """First time each pattern showed up in one growing text file."""

    path: Path
    offset: int = 0
    partial: str = ""
    first: dict[str, float] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # the first match's group 1, if any


class LogWatch:
    """Polls text files (task stdout) for the first line matching each pattern.

    A match's time is the file's mtime when the matching line is the newest line read (then
    it is the moment the line was written), otherwise the moment it was seen.
    """

    def __init__(self, files: Callable[[], Iterable[Path]], patterns: dict[str, str]) -> None:
        self.files = files
        self.patterns = {name: re.compile(p) for name, p in patterns.items()}
        self.marks: dict[Path, FileMarks] = {}

    def poll(self) -> None:
        for path in self.files():
            marks = self.marks.setdefault(path, FileMarks(path))
            try:
                with open(path, "rb") as f:
                    f.seek(marks.offset)
                    chunk = f.read()
                    mtime = os.fstat(f.fileno()).st_mtime
            except OSError:
                continue
            if not chunk:
                continue
            now = time.time()
            marks.offset += len(chunk)
            text = marks.partial + chunk.decode(errors="replace")
            lines = text.split("\n")
            marks.partial = lines.pop()
            for i, line in enumerate(lines):
                for name, pattern in self.patterns.items():
                    if name in marks.first:
                        continue
                    match = pattern.search(line)
                    if match:
                        newest = i == len(lines) - 1 and not marks.partial
                        marks.first[name] = min(mtime, now) if newest else now
                        if match.groups():
                            marks.values[name] = match.group(1)

    def first(self, name: str, file_name: str | None = None,
              after: float = 0.0) -> list[tuple[Path, float]]:
        return [(m.path, m.first[name]) for m in self.marks.values()
                if name in m.first and m.first[name] >= after
                and (file_name is None or m.path.name == file_name)]


def mtimes(paths: Iterable[Path]) -> dict[str, float]:
    out = {}
    for path in paths:
        with contextlib.suppress(OSError):
            out[path.name] = path.stat().st_mtime
    return out


# ---------------------------------------------------------------- processes


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


class AmSampler:
    """The last CPU/RSS reading of the AppMaster's processes before they went away.

    python: tfyarn's master.py (`python -m appmaster.master`, in the AM's container dir);
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
                if "appmaster.master" in p.argv and self.app_id in p.cwd \
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


# ---------------------------------------------------------------- variants of tfyarn

# The code before the start-up and recovery fixes (skein asks for the first role at AM start,
# the master acts on the agent's exit at once, replacements take their old port, quick JVMs).
BEFORE_REV = os.environ.get("TFYARN_BENCH_BEFORE_REV", "5f049b7^")
VARIANTS = {
    "current": "tfyarn as it is in this checkout (working tree)",
    "before": f"tfyarn at {BEFORE_REV}, before the start-up and recovery fixes",
    "next": "the working tree with bench/patches/next.patch (proposed, not applied)",
}
PATCHES = REPO / "bench" / "patches"


@dataclass(frozen=True)
class Variant:
    """A snapshot of tfyarn/ and appmaster/ that `tfyarn submit` runs (first on PYTHONPATH).

    Every submit imports tfyarn from the snapshot, and ships its appmaster/ to the containers,
    so a variant stays the same code for a whole session even while the checkout changes.
    """

    name: str
    pythonpath: str | None = None
    info: dict = field(default_factory=dict)  # the commit, whether it was dirty, the patches

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath + (
                f":{base['PYTHONPATH']}" if base.get("PYTHONPATH") else "")
        return env


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def make_variant(name: str) -> Variant:
    """current | before | next, snapshotted once per session under SCRATCH/variants.

    With TFYARN_BENCH_REUSE_VARIANTS set (bench/run_all.sh sets it), an existing snapshot is
    reused, so that every experiment of one session runs the same code.
    """
    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r}: " + ", ".join(VARIANTS))
    root = SCRATCH / "variants" / name
    marker = root / ".variant.json"
    if os.environ.get("TFYARN_BENCH_REUSE_VARIANTS") and marker.is_file():
        return Variant(name, str(root), json.loads(marker.read_text()))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    if name == "before":
        commit = _git("rev-parse", BEFORE_REV)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "tfyarn",
                                  "appmaster"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
        info = {"commit": commit, "dirty": False, "patches": []}
    else:
        for package in ("tfyarn", "appmaster"):
            shutil.copytree(REPO / package, root / package,
                            ignore=shutil.ignore_patterns("__pycache__"))
        dirty = bool(_git("status", "--porcelain", "--", "tfyarn", "appmaster"))
        info = {"commit": _git("rev-parse", "HEAD"), "dirty": dirty, "patches": []}
    if name == "next":
        for patch in sorted(PATCHES.glob("*.patch")):
            result = subprocess.run(["patch", "-p1", "--forward", "--batch", "-d", str(root),
                                     "-i", str(patch)], capture_output=True, text=True)
            if result.returncode != 0:
                raise SystemExit(f"{patch} does not apply to this checkout (already applied, "
                                 f"or the code moved on):\n{result.stdout}{result.stderr}")
            info["patches"].append(patch.name)
    info["description"] = VARIANTS[name]
    marker.write_text(json.dumps(info))
    return Variant(name, str(root), info)


# ---------------------------------------------------------------- job files


def job_files(run_dir: Path, *, args: list[str], scripts_dir: Path = EXAMPLES,
              entry: str | None = None, components: dict[str, dict[str, str]] | None = None,
              settings: dict[str, Any] | None = None,
              resources: dict | None = None) -> tuple[Path, Path]:
    """resources.json/appConfig.json in run_dir: the seed job's, changed as asked.

    The work dir is tfyarn's default, on HDFS (Cluster.job_dir): the hosts share no disk.
    What each task writes in its own local work dir is found with Cluster.task_files.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    res = resources or json.loads((REPO / "resources.json").read_text())
    for role, values in (components or {}).items():
        res["components"].setdefault(role, {}).update(values)
    app = json.loads((REPO / "appConfig.json").read_text())
    app["global"][G + "user.scripts.dir"] = str(scripts_dir)
    app["global"][G + "user.scripts.args"] = args
    if entry is not None:
        app["global"][G + "user.scripts.entry"] = entry
    app["global"].update({G + key: value for key, value in (settings or {}).items()})
    res_path, app_path = run_dir / "resources.json", run_dir / "appConfig.json"
    res_path.write_text(json.dumps(res, indent=2))
    app_path.write_text(json.dumps(app, indent=2))
    return res_path, app_path


def submit_tfyarn(cluster: Cluster, res_path: Path, app_path: Path,
                  variant: Variant) -> tuple[str, float, float]:
    """`tfyarn submit --detach --json` in a fresh process; (app id, t submit, t it returned)."""
    env = variant.environment(cluster.env)
    t0 = time.time()
    result = subprocess.run(
        [sys.executable, "-m", "tfyarn.cli", "submit", "--resources", str(res_path),
         "--app-config", str(app_path), "--detach", "--json"],
        # Not from the repo: `-m` puts the working directory first on sys.path, before a
        # variant's PYTHONPATH.
        capture_output=True, text=True, env=env, cwd=res_path.parent, timeout=300)
    t1 = time.time()
    line = next((x for x in result.stdout.splitlines() if x.startswith("{")), None)
    if result.returncode != 0 or not line:
        raise RuntimeError(f"tfyarn submit failed ({result.returncode}):\n{result.stdout}\n"
                           f"{result.stderr[-3000:]}")
    return json.loads(line)["application_id"], t0, t1


# ---------------------------------------------------------------- following an application


class AppFollower:
    """Polls one application: YARN's state, its live logs, its AppMaster's processes."""

    def __init__(self, cluster: Cluster, app_id: str, watch: LogWatch | None = None,
                 sample_am: bool = True) -> None:
        self.cluster, self.app_id, self.watch = cluster, app_id, watch
        self.sampler = AmSampler(app_id) if sample_am else None
        self.report: dict = {}
        self.driver_text = ""
        self.next_rest = 0.0

    @property
    def state(self) -> str:
        return str(self.report.get("state", "NEW"))

    @property
    def ended(self) -> bool:
        return self.state in FINAL_STATES

    def poll(self) -> None:
        if time.monotonic() >= self.next_rest:
            self.next_rest = time.monotonic() + 0.5
            with contextlib.suppress(Exception):
                self.report = self.cluster.app(self.app_id)
        if self.watch:
            self.watch.poll()
        if self.sampler:
            self.sampler.poll()
        self._read_driver_log()

    def _read_driver_log(self) -> None:
        for path in self.cluster.app_log_dirs(self.app_id):
            if path.name.endswith("_01_000001"):
                with contextlib.suppress(OSError):
                    text = (path / "application.driver.log").read_text(errors="replace")
                    if len(text) >= len(self.driver_text):
                        self.driver_text = text

    def until(self, what: str, done: Callable[[], Any], timeout_s: float,
              allow_end: bool = False) -> Any:
        """Poll until done() is truthy; RuntimeError on timeout or on the app's early end."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.poll()
            value = done()
            if value:
                return value
            if self.ended and not allow_end:
                raise RuntimeError(f"{self.app_id} ended ({self.state}/"
                                   f"{self.report.get('finalStatus')}) while waiting for {what}: "
                                   f"{self.report.get('diagnostics', '')[:500]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.app_id}: timed out after {timeout_s:.0f} s waiting "
                                   f"for {what}")
            time.sleep(POLL_S)

    def wait_end(self, timeout_s: float) -> dict:
        self.until("the application's end", lambda: self.ended, timeout_s, allow_end=True)
        return self.report

    def driver_log(self) -> DriverLog:
        text = self.driver_text
        if "tfyarn-final-view" not in text:
            text = aggregated_driver_log(self.cluster, self.app_id) or text
        return DriverLog.parse(text)


def kill_app(cluster: Cluster, app_id: str) -> None:
    subprocess.run(["yarn", "application", "-kill", app_id], env=cluster.env,
                   capture_output=True, timeout=120)


@dataclass
class FinishedRun:
    """A tfyarn job followed to its end, and what every experiment reads of it."""

    app_id: str
    submitted: float
    cli_returned: float
    final: dict  # YARN's report at the end
    events: RmEvents
    driver: DriverLog
    follower: AppFollower

    def timeline(self) -> dict[str, float | None]:
        """The phase times every tfyarn run has (epoch s; None where not seen)."""
        g0 = self.driver.phases.get(0, {})
        return {
            "submit": self.submitted, "cli_returned": self.cli_returned,
            "rm_accepted": self.final["startedTime"] / 1000,
            "am_running": self.events.am_running[0] if self.events.am_running else None,
            "master_up": self.driver.first_line, "requested": g0.get("requested"),
            "allocated": self.events.last("ALLOCATED"), "acquired": self.events.last("ACQUIRED"),
            "containers_running": self.events.last("RUNNING"),
            "all_started": g0.get("all started"), "all_registered": g0.get("all registered"),
            "spec_published": g0.get("spec published"), "all_running": g0.get("all running"),
            "job_end": self.final["finishedTime"] / 1000,
        }

    def meta(self) -> dict[str, Any]:
        meta = {"final": f"{self.final['state']}/{self.final['finalStatus']}",
                **self.follower.sampler.summary()}
        if self.driver.usage:
            meta["python_cpu_s_logged"], meta["python_peak_rss_kb_logged"] = self.driver.usage
        return meta


def run_to_end(cluster: Cluster, res_path: Path, app_path: Path, variant: Variant, what: str,
               timeout_s: float, watch: Callable[[str], LogWatch] | None = None) -> FinishedRun:
    """Submit, follow (watching the logs ``watch(app_id)`` names) and read the run's records;
    the app is killed if it does not end in time."""
    rm = RmLog(cluster)
    app_id, t0, t1 = submit_tfyarn(cluster, res_path, app_path, variant)
    log(f"  tfyarn ({variant.name}) {app_id}{what}")
    follower = AppFollower(cluster, app_id, watch(app_id) if watch else None)
    try:
        final = follower.wait_end(timeout_s)
    except Exception:
        kill_app(cluster, app_id)
        raise
    return FinishedRun(app_id, t0, t1, final, rm.events(app_id), follower.driver_log(), follower)


# ---------------------------------------------------------------- conditions, statistics, output


def wait_for_room(cluster: Cluster, need: dict[str, int], timeout_s: float) -> dict[str, Any]:
    """Wait (bounded) until each partition has `need` free vcores; say what the cluster had."""
    deadline = time.monotonic() + timeout_s
    while True:
        free = cluster.free_vcores()
        if all(free.get(part, (0, 0))[0] >= n for part, n in need.items()):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(2)
    return {"free_vcores": {k or "default": v[0] for k, v in free.items()},
            "other_apps": len(cluster.active_apps()), "load1": round(os.getloadavg()[0], 2)}


def median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def spread(values: Iterable[float | None]) -> tuple[float, float] | None:
    vals = [v for v in values if v is not None]
    return (min(vals), max(vals)) if vals else None


def rel(t: dict[str, float | None], a: str, b: str) -> float | None:
    """t[b] - t[a], or None when either is missing."""
    if t.get(a) is None or t.get(b) is None:
        return None
    return round(t[b] - t[a], 3)


def machine_info() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    versions = {}
    for module in ("skein", "tensorflow", "matplotlib"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version
            versions[module] = version(module if module != "tensorflow" else "tensorflow-cpu")
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "os": platform.platform(), "python": platform.python_version(),
        "hadoop": layout_module.HADOOP_VERSION, **versions,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "load_at_start": os.getloadavg(),
    }


def save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str))
    log(f"wrote {path}")


def kinds_to_run(variants: list[Variant],
                 floors: list[str]) -> list[tuple[str, Variant | None, str]]:
    """Each tfyarn variant, then each floor, as (kind, variant, name in the results)."""
    return [("tfyarn", v, v.name) for v in variants] + [(f, None, f) for f in floors]


def record_run(data: dict, out: Path, run_dir: Path, *, kind: str, name: str, rep: int,
               conditions: str, run: Callable[[], dict], show: Callable[[dict], None],
               cluster: Cluster | None = None, **identity: Any) -> None:
    """Runs one measurement and records it in ``data``, saved to ``out`` at once.

    A failed run is recorded with its error, not raised: one bad run must not lose the
    others. ``identity`` (the task count, the victim) goes into a failed run's record.
    A tfyarn run's work dir on HDFS is removed afterwards (with ``cluster``).
    """
    try:
        record = run()
    except Exception as exc:
        log(f"  FAILED: {exc}")
        record = {"kind": kind, **identity, "error": str(exc)[:2000], "t": {}}
    record.update({"rep": rep, "variant": record.get("variant", name),
                   "conditions": conditions, "at": time.time()})
    data["runs"].append(record)
    show(record)
    save(out, data)
    # Checkpoints add up over an hour: a floor's local ones, a tfyarn job's on HDFS.
    shutil.rmtree(run_dir / "work", ignore_errors=True)
    if cluster is not None and kind == "tfyarn" and record.get("app_id"):
        try:
            cluster.remove_job_dir(record["app_id"])
        except Exception as exc:  # a leftover directory must not lose the run's record
            log(f"  could not remove {cluster.job_dir(record['app_id'])}: {exc}")


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
