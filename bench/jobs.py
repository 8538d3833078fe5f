"""Running a tfyarn job for a benchmark: its files, submitting it, following it to its end,
and the timeline of its start-up.

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
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cluster import Cluster, kill_app
from bench.common import EXAMPLES, FINAL_STATES, POLL_S, REPO, G, log, write_job_files
from bench.logs import DriverLog, RmEvents, RmLog, aggregated_driver_log
from bench.processes import AmSampler
from bench.variants import Variant
from bench.watch import LogWatch


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
    return write_job_files(run_dir, res, app)


def submit_tfyarn(cluster: Cluster, res_path: Path, app_path: Path,
                  variant: Variant) -> tuple[str, float, float]:
    """`tfyarn submit --detach --json` in a fresh process; (app id, t submit, t it returned)."""
    env = variant.environment(cluster.env)
    t0 = time.time()
    result = subprocess.run(
        [sys.executable, "-m", "tfyarn.cli.main", "submit", "--resources", str(res_path),
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
            "all_given": g0.get("all given"),
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
