"""`tfyarn tensorboard APP`: TensorBoard on this machine for any job, running or finished.

TensorFlow cannot read a job's ``hdfs://`` event files, and the job's own TensorBoard
component ends with the job. So this command copies the event files into a local cache
(tfyarn/watch/eventcache.py: only new bytes, while the job runs) and runs TensorBoard there, from
the environment running tfyarn. It keeps syncing until the application ends, then leaves
TensorBoard up until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import click
import requests

from appmaster.common.settings import WORK_DIR
from appmaster.common.storage import REMOTE_SCHEMES, StorageError, is_remote
from tfyarn.errors import TfyarnError
from tfyarn.hadoop import hadoopconf
from tfyarn.hadoop.driver import FINAL_STATES, DriverSettings
from tfyarn.security import kerberos
from tfyarn.watch.applications import APP_ID, application_report, report_source
from tfyarn.watch.eventcache import EventCache, EventSource, HdfsEvents, LocalEvents, SyncResult
from tfyarn.watch.jobrecord import find_work_dir, work_dir_of

DEFAULT_PORT = 6006  # TensorBoard's own
SYNC_INTERVAL_S = 5.0
START_TIMEOUT_S = 120.0  # TensorBoard imports TensorFlow when it has it: slow on a busy machine
STOP_TIMEOUT_S = 10.0
FINAL_LOOKUP_S = 60.0  # a finished job's AppMaster log: YARN aggregates it after the end
WILDCARDS = ("0.0.0.0", "::", "")


class TensorBoardError(TfyarnError):
    """TensorBoard cannot be shown; the message says why and how to fix it."""


# ---------------------------------------------------------------- before anything starts

def check_app_id(app_id: str) -> None:
    """Before YARN is asked anything (the same words as `tfyarn status`)."""
    if not APP_ID.fullmatch(app_id):
        raise TensorBoardError(
            f"{app_id!r} is not a YARN application id (like application_1700000000000_0001); "
            "`tfyarn list --all` shows yours.")


def default_cache(app_id: str) -> Path:
    """~/.cache/tfyarn/tensorboard/<app id> ($XDG_CACHE_HOME where set)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "tfyarn" / "tensorboard" / app_id


def require_tensorboard() -> None:
    """TensorBoard runs from this environment: refuse at once when it lacks it."""
    if importlib.util.find_spec("tensorboard") is None:
        raise TensorBoardError(
            f"TensorBoard is not installed in the environment running tfyarn ({sys.executable}).",
            f"pip install tensorboard (into it: `{sys.executable} -m pip install tensorboard`); "
            "or `tfyarn tensorboard APP --once` copies the event files for a TensorBoard "
            "you run yourself.")


def event_source(work_dir: str) -> EventSource:
    """Where to copy from: HDFS, or a directory this machine has; refused otherwise."""
    if is_remote(work_dir):
        kerberos.check_login(hadoopconf.client_configuration())  # hdfs-native needs a ticket
        return HdfsEvents(work_dir)
    parts = urlsplit(work_dir)
    if parts.scheme in ("", "file"):
        path = Path(parts.path if parts.scheme else work_dir)
        if path.is_dir():
            return LocalEvents(path)
        raise TensorBoardError(
            f"the job's work dir {work_dir} is a path on the nodes' own disks, and this "
            "machine has no such directory.",
            "run `tfyarn tensorboard` on the node that ran the chief, or give jobs a work dir "
            f"on HDFS ({WORK_DIR.key}, the default).")
    raise TensorBoardError(
        f"the job's work dir {work_dir} is neither on HDFS nor local: tfyarn copies event "
        f"files from {' and '.join(s + '://' for s in REMOTE_SCHEMES)} and local directories.",
        "copy the event files yourself and run TensorBoard on them.")


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (as TensorBoard will)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror:
        return False
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do
        try:
            probe.bind(address)
        except OSError:
            return False
    return True


def free_port(host: str) -> int:
    """A port the system says is free on ``host``."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.bind(address)
        return probe.getsockname()[1]


def choose_port(host: str, wanted: int | None) -> int:
    """``wanted`` if free (else an error); without one, 6006 if free, else any free port."""
    if wanted is not None:
        if not port_free(host, wanted):
            raise TensorBoardError(
                f"port {wanted} on {host or 'every interface'} is in use.",
                "give another --port, or none: tfyarn then takes 6006 or a free port.")
        return wanted
    return DEFAULT_PORT if port_free(host, DEFAULT_PORT) else free_port(host)


# ---------------------------------------------------------------- TensorBoard's process

# Run before TensorBoard's own code, in its process: the kernel sends it SIGTERM when tfyarn
# dies, even by SIGKILL, so no TensorBoard outlives the command that started it (Linux's
# PR_SET_PDEATHSIG, kept across exec). Done in the child's own interpreter, not in a
# preexec_fn: a forked child of a process with threads (hdfs-native's) must not run Python.
DIE_WITH_PARENT = """\
import ctypes, os, signal, sys
parent = int(sys.argv.pop(1))
if sys.platform.startswith("linux"):
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before that took effect
        sys.exit(0)
os.execv(sys.executable, [sys.executable, "-m", "tensorboard.main", *sys.argv[1:]])
"""


class LocalBoard:
    """One TensorBoard process on the cache, in a process group of its own so that its
    helpers (the data server it starts) end with it."""

    def __init__(self, logdir: Path, host: str, port: int, bind_all: bool, title: str) -> None:
        self.logdir, self.host, self.port, self.bind_all = logdir, host, port, bind_all
        self.title = title
        self.log = logdir.parent / f"{logdir.name}.tensorboard.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        if self.bind_all or self.host in WILDCARDS:
            host = socket.getfqdn()  # what others on the network use
        else:
            host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def flags(self) -> list[str]:
        """TensorBoard's command line after ``python -m tensorboard.main``."""
        where = ["--bind_all"] if self.bind_all else ["--host", self.host]
        return ["--logdir", str(self.logdir), *where, "--port", str(self.port),
                "--window_title", self.title]

    def argv(self) -> list[str]:
        """Through DIE_WITH_PARENT, which execs ``python -m tensorboard.main <flags>``."""
        return [sys.executable, "-c", DIE_WITH_PARENT, str(os.getpid()), *self.flags()]

    def start(self) -> None:
        with open(self.log, "wb") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until TensorBoard answers; TensorBoardError (with its log) if it exits or not."""
        host = "localhost" if self.bind_all or self.host in WILDCARDS else self.host
        probe = f"http://{f'[{host}]' if ':' in host else host}:{self.port}/data/logdir"
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.alive():
                raise TensorBoardError(f"TensorBoard ended as it started:\n{self.log_tail()}",
                                       f"its whole log is {self.log}.")
            with contextlib.suppress(requests.RequestException):
                if requests.get(probe, timeout=2).ok:
                    return
            if time.monotonic() > deadline:
                raise TensorBoardError(
                    f"TensorBoard did not answer at {probe} within {timeout_s:.0f} s:\n"
                    f"{self.log_tail()}", f"its whole log is {self.log}.")
            time.sleep(0.5)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM to its group, SIGKILL after STOP_TIMEOUT_S; then any helper left in it."""
        if self.process is None:
            return
        group = self.process.pid  # start_new_session: the group is named after it
        signal_group(group, signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            signal_group(group, signal.SIGKILL)
            self.process.wait()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while group_members(group):  # the data server ends when its stdin closes
            if time.monotonic() > deadline:
                signal_group(group, signal.SIGKILL)
                break
            time.sleep(0.1)


def signal_group(group: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, number)


def group_members(group: int) -> list[int]:
    """The live processes of a process group (zombies, which an init that does not reap
    leaves behind, are not alive)."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [group]
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                # state, ppid, pgrp follow the command name, which may hold ')'
                state, _, pgrp = stat.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(pgrp) == group and state != "Z":
            members.append(int(entry.name))
    return members


@contextlib.contextmanager
def interrupted_by_termination() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) end the command as Ctrl-C does, so that the
    cleanup (TensorBoard stopped) runs for them too."""
    def interrupt(number: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupt)
                for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


# ---------------------------------------------------------------- the job's side

def note(text: str) -> None:
    """Progress for the person watching (stderr: stdout holds the URL or the cache path)."""
    click.echo(f"[tfyarn] {text}", err=True)


def ended(report) -> bool:
    return str(report.state) in FINAL_STATES


def await_work_dir(client, report, wait: bool):
    """(report, work dir): waits while the job has not started or its AppMaster is not
    answering yet (unless not ``wait``), and up to FINAL_LOOKUP_S for a finished job's
    AppMaster log to be aggregated (where no pointer file says the work dir)."""
    said = None
    first_final = time.monotonic() if ended(report) else None
    while True:
        if work_dir := find_work_dir(report.id, report):
            return report, work_dir
        state = str(report.state)
        if ended(report):
            first_final = first_final or time.monotonic()
        if (not wait and not first_final) or (
                first_final and time.monotonic() - first_final > FINAL_LOOKUP_S):
            return report, work_dir_of(report.id, report)  # one last look, or why not
        why = ("waiting for its AppMaster to answer" if state == "RUNNING" else
               "waiting for YARN to aggregate its AppMaster's log" if ended(report) else
               f"it is {state}: waiting for it to start")
        if why != said:
            note(f"{report.id}: {why} (Ctrl-C gives up)")
            said = why
        time.sleep(SYNC_INTERVAL_S)
        report = client.application_report(report.id)


def first_sync(events: EventCache) -> SyncResult:
    try:
        return events.sync()
    except (StorageError, OSError) as exc:
        raise TensorBoardError(f"cannot read the event files in {events.source.where}: {exc}",
                               f"check that HDFS answers (`hdfs dfs -ls "
                               f"{events.source.where}`) and that you may read it.") from None


def no_summaries(report, events: EventCache) -> TensorBoardError:
    return TensorBoardError(
        f"{report.id} ended ({report.state}, {report.final_status}) and wrote no summaries: "
        f"no events.out.tfevents.* file below {events.source.where}.",
        "the chief writes them where the script asks (e.g. tf.summary under --work_dir, "
        "or MonitoredTrainingSession's checkpoint_dir); only files there reach HDFS.")


def await_events(client, report, events: EventCache, interval_s: float):
    """The report once the cache holds an event file; waits (saying so) while the job runs,
    TensorBoardError if it ends with none."""
    said = False
    while not events.files():
        if ended(report):
            raise no_summaries(report, events)
        if not said:
            note(f"no event files in {events.source.where} yet: waiting while {report.id} "
                 "runs (the chief's summaries reach HDFS every mirror interval)")
            said = True
        time.sleep(interval_s)
        report = client.application_report(report.id)
        try_sync(events)
    return report


def try_sync(events: EventCache) -> SyncResult | None:
    """One pass while following; a failure is said and retried next time."""
    try:
        result = events.sync()
    except (StorageError, OSError) as exc:
        note(f"copying from {events.source.where} failed (trying again): {exc}")
        return None
    for relative in result.new:
        note(f"new event file: {relative}")
    return result


def follow(client, report, events: EventCache, board: LocalBoard, interval_s: float) -> None:
    """Sync every ``interval_s`` until the application ends, then once more."""
    while not ended(report):
        time.sleep(interval_s)
        if not board.alive():
            return
        try:
            report = client.application_report(report.id)
        except Exception as exc:  # the RM restarting, say: asked again next time
            note(f"YARN did not answer ({exc}); trying again")
            continue
        try_sync(events)
    try_sync(events)  # the chief's last sync reached HDFS before the end
    note(f"{report.id} ended ({report.state}, {report.final_status}): its last event files "
         "are copied; no more syncing. TensorBoard stays up until Ctrl-C.")


def serve(client, report, events: EventCache, board: LocalBoard, interval_s: float,
          as_json: bool = False) -> None:
    board.start()
    board.wait_ready()
    click.echo(json.dumps({"application_id": report.id, "cache": str(events.local),
                           "url": board.url}) if as_json else f"TensorBoard: {board.url}")
    note(f"showing {events.source.where}, copied to {events.local}; Ctrl-C stops it")
    follow(client, report, events, board, interval_s)
    while board.alive():
        time.sleep(1.0)
    raise TensorBoardError(f"TensorBoard ended by itself:\n{board.log_tail()}",
                           f"its whole log is {board.log}.")


# ---------------------------------------------------------------- the command

def show_tensorboard(driver: DriverSettings | None, app_id: str, once: bool,
                     cache: Path | None, port: int | None, host: str, bind_all: bool,
                     interval: float, as_json: bool) -> None:
    """TensorBoard on this machine for a job, running or finished: its event files are
    copied from HDFS into a local cache (only new bytes, every few seconds while it runs).
    """
    check_app_id(app_id)
    if bind_all and host != "localhost":
        raise TensorBoardError("--bind-all and --host exclude each other.",
                               "give one of them.")
    if not once:
        require_tensorboard()
    cache = (cache or default_cache(app_id)).expanduser().absolute()
    with interrupted_by_termination(), report_source(driver) as client:
        try:
            report = application_report(client, app_id)
            report, work_dir = await_work_dir(client, report, wait=not once)
            events = EventCache(event_source(work_dir), cache)
            result = first_sync(events)
            note(f"{app_id} ({report.state}): {result.files} event file(s) from {work_dir} "
                 f"in {cache}")
            if once:
                return copy_once(report, events, cache, as_json)
            report = await_events(client, report, events, interval)
            board = LocalBoard(cache, host, choose_port("" if bind_all else host, port),
                               bind_all, title=f"{app_id} ({report.name})")
        except KeyboardInterrupt:
            note("interrupted")
            return
        try:
            serve(client, report, events, board, interval, as_json)
        except KeyboardInterrupt:
            note("stopping TensorBoard")
        finally:
            board.stop()


def copy_once(report, events: EventCache, cache: Path, as_json: bool = False) -> None:
    """--once: the cache's path on stdout; a finished job without summaries is an error,
    a running one without any yet is not (a script may try again)."""
    files = events.files()
    if not files:
        if ended(report):
            raise no_summaries(report, events)
        note(f"no event files in {events.source.where} yet ({report.id} is {report.state})")
    click.echo(json.dumps({"application_id": report.id, "cache": str(cache), "url": None,
                           "event_files": len(files)}) if as_json else str(cache))
