"""Helpers shared by the integration tests: job files in tmp_path, YARN's view, processes."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import requests
import yaml

from tfyarn.hadoop.driver import FINAL_STATES
from tfyarn.localyarn import cluster
from tfyarn.localyarn.layout import Layout, NodeManagerSpec
from tfyarn.localyarn.proctable import Proc, scan_processes

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
APPS = Path(__file__).resolve().parent / "apps"
G = "site.global."
PROCESS_TIMEOUT_S = 15
LOGS_TIMEOUT_S = 90  # an app's end -> all its logs aggregated
SUBMIT_TIMEOUT_S = 480  # `tfyarn submit --wait` of a whole job, on a loaded 2-core machine
# The CLI as this interpreter runs it: the venv's bin need not be on PATH (it is not in CI).
TFYARN = (sys.executable, "-m", "tfyarn.cli.main")
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 120.0) -> T:
    """probe()'s first truthy answer, asked every second; fails naming ``what`` after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not (value := probe()):
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f} s waiting for {what}"
        time.sleep(1)
    return value


def wait_for_hdfs(layout, timeout_s: float = 150.0) -> float:
    """Waits for the local cluster's NameNode to be out of safe mode with a DataNode;
    returns when it was seen so (time.time(), asked every 0.1 s)."""
    from tfyarn.localyarn import hdfs

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if hdfs.ready(layout):
                return time.time()
        except Exception:  # noqa: BLE001 (its web server is not up yet)
            pass
        assert time.monotonic() < deadline, f"HDFS not back after {timeout_s:.0f} s"
        time.sleep(0.1)


def write_doc(path: Path, doc: Any) -> Path:
    """Writes a document: text as is, anything else as JSON or YAML by the suffix."""
    if isinstance(doc, str):
        path.write_text(doc)
    elif path.suffix in (".yaml", ".yml"):
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    else:
        path.write_text(json.dumps(doc))
    return path


def prepare_job(tmp_path: Path, *, scripts_dir: Path = EXAMPLES, args: list[str] | None = None,
                entry: str | None = None, settings: dict[str, Any] | None = None,
                components: dict[str, dict[str, str]] | None = None,
                resources: Path = REPO / "resources.json",
                app_config: Path = REPO / "appConfig.json") -> tuple[Path, Path]:
    """Copies of a job's files (the seed job's by default) in tmp_path/job, changed as asked.

    ``settings`` are appConfig keys without the ``site.global.`` prefix; ``components`` are
    resources.json keys per role, merged in. The work dir is tfyarn's default, on HDFS
    (/user/<user>/tfyarn/jobs/<app id>): the cluster's hosts share no disk.
    """
    job = tmp_path / "job"
    job.mkdir()
    res = json.loads(resources.read_text())
    for role, values in (components or {}).items():
        res["components"].setdefault(role, {}).update(values)
    app = json.loads(app_config.read_text())
    app["global"][G + "user.scripts.dir"] = str(scripts_dir)
    app["global"][G + "user.scripts.args"] = args or []
    if entry is not None:
        app["global"][G + "user.scripts.entry"] = entry
    app["global"].update({G + key: value for key, value in (settings or {}).items()})
    res_path, app_path = job / "resources.json", job / "appConfig.json"
    res_path.write_text(json.dumps(res, indent=2))
    app_path.write_text(json.dumps(app, indent=2))
    return res_path, app_path


# The seed job's resources with one worker, for a test of a mechanism a second worker does
# not add to: a TensorFlow process fewer to start (6 CPU-s of imports) and to step, in every
# generation of the job.
ONE_WORKER = {"worker": {"yarn.component.instances": "1"}}


def prepare_light_job(tmp_path: Path, args: list[str],
                      settings: dict[str, Any] | None = None,
                      components: dict[str, dict[str, str]] | None = None) -> tuple[Path, Path]:
    """The seed job's roles running tests/apps/light_task.py (no TensorFlow) in 256 MB each,
    with ``components`` merged in as prepare_job does."""
    light = {role: {"yarn.memory": "256"} for role in ("ps", "chiefworker", "worker")}
    for role, values in (components or {}).items():
        light.setdefault(role, {}).update(values)
    return prepare_job(tmp_path, scripts_dir=APPS, entry="light_task.py", args=args,
                       settings=settings, components=light)


def interruptible() -> None:
    """A child's Ctrl-C as in a terminal: SIGINT back to its default before it starts, since
    a suite started in the background of a shell without job control ignores SIGINT, and its
    children (Python then installing no KeyboardInterrupt) with it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_tfyarn(yarn_cluster, *args: str, timeout_s: float = 120,
               env: dict[str, str] | None = None,
               client: Sequence[str] = TFYARN) -> subprocess.CompletedProcess:
    """A tfyarn command against the test cluster (in ``env``, or the cluster's client
    environment), its output captured; ``client``: tfyarn in another env (which it ships)."""
    return subprocess.run([*client, *args], env=env or yarn_cluster.env, capture_output=True,
                          text=True, timeout=timeout_s, cwd=REPO)


def submit_detached(yarn_cluster, resources: Path, app_config: Path, *extra: str,
                    before: tuple[str, ...] = ()) -> str:
    """`tfyarn submit --detach --json` from the checkout (``before``: tfyarn's options, such
    as --principal and --keytab); the application id."""
    result = run_tfyarn(yarn_cluster, *before, "submit", "--resources", str(resources),
                        "--app-config", str(app_config), "--detach", "--json", *extra,
                        timeout_s=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])["application_id"]


def status_json(yarn_cluster, app_id: str) -> dict:
    """`tfyarn status APP --json` as a user reads it: {"application": ..., "job": ...}."""
    result = run_tfyarn(yarn_cluster, "status", app_id, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


class JobFiles:
    """A job's files where an operator finds them: the job's work dir on HDFS, and each
    container's local work dir on its own host (NodeManagers keep finished containers'
    dirs for a while: yarn.nodemanager.delete.debug-delay-sec)."""

    def __init__(self, layout, app_id: str) -> None:
        self.layout, self.app_id = layout, app_id
        self.url = f"{layout.default_fs}/user/{cluster_user()}/tfyarn/jobs/{app_id}"

    def container_dirs(self) -> dict[str, Path]:
        """Container id -> its local work dir (`<container dir>/work`), on every host."""
        found = {}
        for nm in self.layout.node_managers:
            appcache = self.layout.node_dir(nm) / "local" / "usercache"
            for work in appcache.glob(f"*/appcache/{self.app_id}/container_*/work"):
                found[work.parent.name] = work
        return found

    def glob(self, pattern: str) -> list[Path]:
        """Files matching ``pattern`` in any container's local work dir."""
        return sorted(p for d in self.container_dirs().values() for p in d.glob(pattern))

    def local(self, relative: str) -> Path | None:
        """The one container-local copy of ``relative`` (None if no task wrote it)."""
        copies = [d / relative for d in self.container_dirs().values() if (d / relative).exists()]
        assert len(copies) <= 1, f"{relative} in several containers: {copies}"
        return copies[0] if copies else None

    def remote(self):
        from appmaster.common.storage import RemoteDir

        return RemoteDir(self.url)

    def remote_text(self, relative: str) -> str | None:
        data = self.remote().read_bytes(relative)
        return None if data is None else data.decode()

    def remote_json(self, relative: str) -> Any:
        text = self.remote_text(relative)
        assert text is not None, f"missing {self.url}/{relative}"
        return json.loads(text)

    def remote_names(self) -> set[str]:
        return set(self.remote().list_files())


def cluster_user() -> str:
    from tfyarn.submission.environments import cluster_user as user

    return user()


@dataclass
class Run:
    app_id: str
    returncode: int
    output: str
    files: JobFiles
    seconds: float


def submit_and_wait(yarn_cluster, tmp_path: Path, resources: Path, app_config: Path,
                    *options: str) -> Run:
    """`tfyarn submit --wait` as a user runs it; the app is killed if it outlives the timeout."""
    command = [*TFYARN, "submit", "--resources", str(resources),
               "--app-config", str(app_config), "--wait", *options]
    started = time.monotonic()
    proc = subprocess.Popen(command, env=yarn_cluster.env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=SUBMIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        match = re.search(r"Submitted (application_\d+_\d+)", output)
        if match:
            subprocess.run(["yarn", "application", "-kill", match.group(1)],
                           env=yarn_cluster.env, capture_output=True, timeout=60)
        raise AssertionError(
            f"tfyarn submit --wait ran over {SUBMIT_TIMEOUT_S} s:\n{output}"
        ) from None
    seconds = time.monotonic() - started
    match = re.search(r"^Submitted (application_\d+_\d+) ", output, re.MULTILINE)
    assert match, f"no application submitted:\n{output}"
    app_id = match.group(1)
    return Run(app_id, proc.returncode, output, JobFiles(yarn_cluster.layout, app_id), seconds)


def processes_with(text: str) -> list[int]:
    """Pids of the processes whose command line contains ``text``."""
    return [p.pid for p in processes_mentioning(text)]


def processes_mentioning(text: str) -> list[Proc]:
    return [p for p in scan_processes() if any(text in arg for arg in p.argv)]


def assert_no_task_process_left(app_id: str) -> None:
    """No process of the app (in one of its container dirs, or naming it on its command
    line), a few seconds after its end."""
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    while alive := [p for p in scan_processes() if p.mentions(app_id)]:
        if time.monotonic() > deadline:
            raise AssertionError(f"task processes survive the job {PROCESS_TIMEOUT_S} s on: "
                                 f"{[p.short() for p in alive]}")
        time.sleep(0.5)


@dataclass
class ContainerLogs:
    container: str
    node: str  # as `yarn logs` names it, e.g. localhost_8154
    files: dict[str, str]


def parse_yarn_logs(text: str) -> dict[str, ContainerLogs]:
    containers: dict[str, ContainerLogs] = {}
    current: ContainerLogs | None = None
    log_type: str | None = None
    body: list[str] | None = None
    for line in text.splitlines():
        if body is not None:
            if line == f"End of LogType:{log_type}":
                assert current is not None and log_type is not None
                # `yarn logs` ends each file with an empty line before this marker.
                current.files[log_type] = "\n".join(body[:-1] if body and not body[-1] else body)
                body = log_type = None
            else:
                body.append(line)
            continue
        if match := re.match(r"Container: (\S+) on (\S+)$", line):
            current = containers.setdefault(
                match.group(1), ContainerLogs(match.group(1), match.group(2), {})
            )
        elif line.startswith("LogType:"):
            log_type = line.removeprefix("LogType:")
        elif line == "LogContents:" and log_type is not None:
            body = []
    return containers


def yarn_logs(yarn_cluster, app_id: str, expected: set[str],
              copies: int = 1) -> dict[str, ContainerLogs]:
    """The app's aggregated logs, once every expected log file name shows in ``copies``
    containers (aggregation lags the end, one NodeManager after another)."""
    deadline = time.monotonic() + LOGS_TIMEOUT_S
    while True:
        while not aggregation_over(yarn_cluster, app_id) and time.monotonic() < deadline:
            time.sleep(0.5)  # a REST call, where each `yarn logs` starts a JVM (2-3 CPU-s)
        result = subprocess.run(["yarn", "logs", "-applicationId", app_id], env=yarn_cluster.env,
                                capture_output=True, text=True, timeout=120)
        logs = parse_yarn_logs(result.stdout)
        found = Counter(name for c in logs.values() for name in c.files)
        missing = sorted(name for name in expected if found[name] < copies)
        if not missing:
            return logs
        if time.monotonic() > deadline:
            raise AssertionError(
                f"yarn logs of {app_id} still lack {missing} (wanted in {copies} container(s)) "
                f"after {LOGS_TIMEOUT_S} s; present: {dict(found)}\n{result.stderr[-2000:]}"
            )
        time.sleep(1.0)


# An application's log aggregation that is over, or never comes; YARN's others are
# NOT_START, RUNNING and RUNNING_WITH_FAILURE.
AGGREGATION_OVER = ("SUCCEEDED", "FAILED", "TIME_OUT", "DISABLED")


def aggregation_over(yarn_cluster, app_id: str) -> bool:
    """Whether `yarn logs` shows all it will: the app still runs (its logs roll up as it
    goes), or it ended and every NodeManager uploaded its containers' logs. A report that
    cannot be read says yes: `yarn logs` is then asked as it is."""
    try:
        app = app_report(yarn_cluster, app_id)
    except requests.RequestException:  # an RM failing over, say
        return True
    return app["state"] not in FINAL_STATES or app.get(
        "logAggregationStatus", "DISABLED") in AGGREGATION_OVER


def app_report(yarn_cluster, app_id: str) -> dict[str, Any]:
    return cluster.rest(yarn_cluster.layout, f"apps/{app_id}")["app"]


def app_state(yarn_cluster, app_id: str) -> str:
    return app_report(yarn_cluster, app_id)["state"]


def read_json(path: Path) -> Any:
    assert path.is_file(), f"missing {path}"
    return json.loads(path.read_text())


# ---------------------------------------------------------------- added for the HDFS cluster

def rm_node_id(layout: Layout, nm: NodeManagerSpec) -> str:
    """How the ResourceManager names a NodeManager of ``layout`` (host:port, offset applied)."""
    return f"{nm.host}:{layout.port(nm.rpc_port)}"


def logs_node_name(layout: Layout, nm: NodeManagerSpec) -> str:
    """How `yarn logs` headers name that NodeManager (host_port)."""
    return rm_node_id(layout, nm).replace(":", "_")


@dataclass(frozen=True)
class ReleaseFile:
    """A file on the cluster's HDFS whose existence tells light_task.py's tasks to end
    (the test process is a client machine: it shares no disk with the hosts)."""

    layout: Layout
    url: str

    @classmethod
    def fresh(cls, layout: Layout) -> ReleaseFile:
        import uuid

        return cls(layout, f"{layout.default_fs}/tmp/tfyarn-test-release-{uuid.uuid4().hex}")

    @property
    def path(self) -> str:
        return self.url.removeprefix(self.layout.default_fs)

    def touch(self) -> None:
        """Create the file (again, harmlessly: a test may release in its cleanup too)."""
        from hdfs_native import Client, WriteOptions

        Client(self.layout.default_fs).create(self.path, WriteOptions(overwrite=True)).close()

    def remove(self) -> None:
        from hdfs_native import Client

        Client(self.layout.default_fs).delete(self.path)


def task_processes(app_id: str, text: str) -> list[Proc]:
    """The app's processes (cwd in one of its container dirs, or its id in an argument)
    with ``text`` in an argument."""
    return [p for p in scan_processes()
            if p.mentions(app_id) and any(text in arg for arg in p.argv)]


def gpu_nodes(yarn_cluster) -> list[dict]:
    return [n for n in cluster.nodes(yarn_cluster.layout)
            if n.get("nodeLabels") and n["state"] == "RUNNING"]


def gpu_memory_free(yarn_cluster) -> int:
    return sum(n["availableResource"]["memory"] for n in gpu_nodes(yarn_cluster))


@contextlib.contextmanager
def gpu_partition_busy(yarn_cluster, skein_client, seconds: int = 120):
    """Another application holds all but ~1 GB of every gpu node's memory for a while (the
    cluster was fine when a job was checked, then got busy): yields once it does."""
    import skein

    nodes = len(gpu_nodes(yarn_cluster))
    blocker = skein_client.submit(skein.ApplicationSpec(
        name="tfyarn-test-blocker", queue="default", max_attempts=1,
        services={"block": skein.Service(instances=2 * nodes, node_label="gpu", max_restarts=0,
                                         resources=skein.Resources(memory=8000, vcores=1),
                                         script=f"sleep {seconds}")},
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1))))
    try:
        deadline = time.monotonic() + 120
        while gpu_memory_free(yarn_cluster) > 1024 * nodes:  # two 8000 MB containers a node
            assert time.monotonic() < deadline, "the blocker never got its containers"
            time.sleep(0.5)
        yield blocker
    finally:
        if str(skein_client.application_report(blocker).state) not in FINAL_STATES:
            skein_client.kill_application(blocker)


def application_ids(yarn_cluster, name: str | None = None) -> set[str]:
    """Every application the ResourceManager knows (only those called ``name``, if given)."""
    apps = (cluster.rest(yarn_cluster.layout, "apps").get("apps") or {}).get("app") or []
    return {app["id"] for app in apps if name is None or app["name"] == name}


def unique_name() -> str:
    """An application name no other test (in any lane of the suite) gives its job: other
    lanes submit beside this one, so "nothing was submitted" is asked of this name."""
    return f"tfyarn-refused-{uuid.uuid4().hex[:12]}"


def refused(yarn_cluster, resources: Path, app_config: Path, key: str,
            env: dict | None = None, options: tuple[str, ...] = ()) -> str:
    """`tfyarn submit` of these files (and ``options``) fails naming ``key``, with nothing
    submitted (no application of the submit's name) and no Java frames; its message."""
    name = unique_name()
    result = run_tfyarn(yarn_cluster, "submit", "--resources", str(resources), "--app-config",
                        str(app_config), "--detach", "--name", name, *options, timeout_s=120,
                        env=env)
    assert result.returncode != 0, result.stdout
    assert not application_ids(yarn_cluster, name), "something was submitted"
    message = result.stderr
    assert "nothing was submitted" in message and key in message, message
    assert "\tat " not in message and "Exception" not in message, message  # no Java frames
    return message


# ---------------------------------------------------------------- gang jobs in busy queues

GANG_TASK_MB = 4096  # 3 tasks and the AppMaster: 12.5 GB of fifo's or fair's 16, no two at once
GANG_HOLD_S = 10  # site.global.allocation.hold: short, for tests and benchmarks
GANG_SLEEP_S = 8  # each gang job's "training"


def partial_holds(spans: list[dict], gang: int) -> list[tuple[float, float]]:
    """Each stretch in which a job held part of its gang, from a history's spans: (the last
    container's coming, the next event), where the next event is another container, a give-back
    or the end of the record. The rule bounds these: none longer than the hold (plus slack).
    The record ends at the gang's first whole hold (the job ran; what follows is its end)."""
    events = sorted([(s["started"], 1) for s in spans if s["started"] is not None]
                    + [(s["ended"], -1) for s in spans if s["started"] is not None
                       and s["ended"] is not None])  # given back, or lost in any other way
    held, last_came, stretches = 0, None, []
    for at, change in events:
        if 0 < held < gang and last_came is not None and (last_came, at) not in stretches:
            stretches.append((last_came, at))  # once: a give-back ends each container at once
        held += change
        last_came = at if change > 0 else last_came
        if held >= gang:
            return stretches
    if 0 < held < gang and last_came is not None:
        stretches.append((last_came, float("inf")))  # held part of it to the record's end
    return stretches


def gang_job(tmp_path: Path, name: str, queue: str, priority: int | None = None,
             sleep_s: float = GANG_SLEEP_S,
             release: ReleaseFile | None = None) -> tuple[Path, Path]:
    """A light gang job in ``tmp_path/name``: a chief and two workers of GANG_TASK_MB in the
    default partition, no ps, "training" ``sleep_s`` (with ``release``: until it exists)."""
    settings: dict = {"queue": queue, "allocation.hold": str(GANG_HOLD_S), "app.name": name}
    if priority is not None:
        settings["application.priority"] = priority
    (tmp_path / name).mkdir(parents=True)
    args = ["--sleep", "600", "--release_file", release.url] if release else \
        ["--sleep", str(sleep_s)]
    return prepare_light_job(
        tmp_path / name, args, settings=settings,
        components={"ps": {"yarn.component.instances": "0"},
                    "chiefworker": {"yarn.memory": str(GANG_TASK_MB)},
                    "worker": {"yarn.memory": str(GANG_TASK_MB),
                               "yarn.component.instances": "2",
                               "yarn.label.expression": ""}})


def submit_together(jobs: list[tuple[Path, Path]], skein_client) -> list[str]:
    """Each job planned and its env ready first, then every one handed to YARN at the same
    moment (threads released together): their application ids, in the order given."""
    from tfyarn.submission.api import SubmitOptions, plan_job

    planned = [plan_job(resources, app_config, SubmitOptions())
               for resources, app_config in jobs]
    environments = [p.prepare(print) for p in planned]
    ids: list[str | None] = [None] * len(planned)
    go = threading.Barrier(len(planned))

    def submit(i: int) -> None:
        go.wait()
        ids[i] = planned[i].submit(skein_client, environments[i], echo=print)

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(len(planned))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert all(ids), f"not every job was submitted: {ids}"
    return [str(app_id) for app_id in ids]
