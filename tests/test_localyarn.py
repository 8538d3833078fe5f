"""Integration tests of the local YARN (tfyarn.localyarn) on the real daemons, no mocks.

Placement is proved from YARN's own records, not from what skein says: the ResourceManager's
container reports (REST, taken while the containers run) and the NodeManagers' aggregated logs
(`yarn logs`, whose "Container: <id> on <host>_<port>" headers say which node ran what), cross-
checked against what each container printed about itself ($CONTAINER_ID, $NM_PORT).

The CLI tests start a second, throwaway cluster (own state dir, every port shifted by 1000), so
the shared cluster at the default state dir is never stopped or changed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import skein
from conftest import LocalCluster, wait_for_final_state

from tfyarn.localyarn import cluster
from tfyarn.localyarn.layout import GPU_LABEL, NODE_MANAGERS, RM_PORTS, Layout

pytestmark = [
    pytest.mark.yarn,
    # skein 0.8.2 compares versions with distutils' LooseVersion.
    pytest.mark.filterwarnings("ignore:distutils Version classes:DeprecationWarning"),
]

GPU_NM = next(nm for nm in NODE_MANAGERS if nm.partition == GPU_LABEL)
DEFAULT_NM = next(nm for nm in NODE_MANAGERS if nm.partition is None)
MARKER = "TFYARN-TEST-MARKER"
MARKER_LINE = re.compile(
    rf"^{MARKER} token=(?P<token>\S+) service=(?P<service>\S+) "
    r"container=(?P<container>\S+) nm_port=(?P<nm_port>\d*)$",
    re.M,
)

# service name -> (node label, GPUs)
SERVICES = {
    "labelled": (GPU_LABEL, 0),  # in the gpu partition, no GPU asked
    "gpu": (GPU_LABEL, 1),  # in the gpu partition with one yarn.io/gpu
    "plain": ("", 0),  # default partition
}
RELEASE_WAIT_S = 120  # a service container exits 1 if the test never releases it


# ---------------------------------------------------------------- helpers: YARN's own records

def rm_get(layout: Layout, path: str) -> dict:
    response = requests.get(f"{layout.webapp_url}/ws/v1/cluster/{path}", timeout=10,
                            headers={"Accept": "application/json"})
    response.raise_for_status()
    return response.json()


def as_list(value) -> list:
    """The RM's JSON gives one element as an object and several as a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def rm_nodes(layout: Layout) -> dict[int, dict]:
    """The RM's node reports, by NodeManager RPC port (the RM names them localhost:<port>)."""
    nodes = as_list((rm_get(layout, "nodes").get("nodes") or {}).get("node"))
    return {int(node["id"].rsplit(":", 1)[1]): node for node in nodes}


def rm_containers(layout: Layout, app_id: str) -> dict[str, dict]:
    """The RM's reports of the current attempt's live containers, by container id."""
    attempts = as_list(rm_get(layout, f"apps/{app_id}/appattempts")["appAttempts"]["appAttempt"])
    attempt = attempts[-1]["appAttemptId"]
    found = rm_get(layout, f"apps/{app_id}/appattempts/{attempt}/containers")
    return {c["containerId"]: c for c in as_list(found.get("container"))}


def allocated_gpus(container_report: dict) -> int:
    entries = as_list((container_report.get("allocatedResources") or {}).get("entry"))
    return next((int(e["value"]) for e in entries if e["key"] == "yarn.io/gpu"), 0)


@dataclass(frozen=True)
class LogBlock:
    """One file of one container in `yarn logs` output."""

    container_id: str
    node: str  # as YARN's header writes it: localhost_8154
    log_type: str  # file name: gpu.log, launch_container.sh, ...
    contents: str


LOG_BLOCK = re.compile(
    r"^Container: (?P<container>container_\S+) on (?P<node>\S+)\n"
    r".*?^LogType:(?P<type>\S+)\n"
    r".*?^LogContents:\n(?P<contents>.*?)^End of LogType:(?P=type)$",
    re.S | re.M,
)


def parse_yarn_logs(text: str) -> list[LogBlock]:
    return [LogBlock(m["container"], m["node"], m["type"], m["contents"])
            for m in LOG_BLOCK.finditer(text)]


def yarn_logs(env: dict[str, str], app_id: str) -> subprocess.CompletedProcess:
    return subprocess.run(["yarn", "logs", "-applicationId", app_id], env=env,
                          capture_output=True, text=True, timeout=120)


def node_tag(node_id: str) -> str:
    """The RM's node id (localhost:8154) as `yarn logs` headers write it (localhost_8154)."""
    return node_id.replace(":", "_")


# ---------------------------------------------------------------- the shared application

@dataclass(frozen=True)
class AppRun:
    app_id: str
    report: skein.model.ApplicationReport
    token: str
    container_of: dict[str, str]  # service -> YARN container id (from skein, checked below)
    rm_reports: dict[str, dict]  # YARN container id -> RM's report, taken while it ran
    logs: str  # `yarn logs -applicationId` stdout
    blocks: list[LogBlock]
    seconds: float


def service_script(service: str, token: str, release: Path) -> str:
    return (
        f'echo "{MARKER} token={token} service={service} container=$CONTAINER_ID '
        'nm_port=$NM_PORT"\n'
        f"for _ in $(seq {RELEASE_WAIT_S * 5}); do\n"
        f"  [ -e {shlex.quote(str(release))} ] && exit 0\n"
        "  sleep 0.2\n"
        "done\n"
        'echo "not released by the test" >&2\n'
        "exit 1\n"
    )


def wait_until_running(app: skein.ApplicationClient, timeout_s: float) -> dict[str, object]:
    """One RUNNING container per service (skein's view); fails at once if one ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        containers = app.get_containers(states=["WAITING", "REQUESTED", "RUNNING",
                                                "SUCCEEDED", "FAILED", "KILLED"])
        ended = [c for c in containers if str(c.state) in ("SUCCEEDED", "FAILED", "KILLED")]
        assert not ended, f"containers ended before the test released them: {ended}"
        running = {c.service_name: c for c in containers if str(c.state) == "RUNNING"}
        if set(running) == set(SERVICES):
            return running
        if time.monotonic() > deadline:
            raise AssertionError(f"not all services RUNNING after {timeout_s:.0f} s: {containers}")
        time.sleep(0.3)


def aggregated_logs(env: dict[str, str], app_id: str, wanted: dict[str, str],
                    timeout_s: float) -> tuple[str, list[LogBlock]]:
    """`yarn logs` once every wanted (container id -> log file) has been aggregated.

    The NodeManagers upload logs after the application ends, so the first calls can come
    back partial (or fail); poll, bounded.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = yarn_logs(env, app_id)
        blocks = parse_yarn_logs(result.stdout)
        have = {(b.container_id, b.log_type) for b in blocks if MARKER in b.contents}
        if result.returncode == 0 and set(wanted.items()) <= have:
            return result.stdout, blocks
        if time.monotonic() > deadline:
            raise AssertionError(
                f"`yarn logs -applicationId {app_id}` lacks {set(wanted.items()) - have} after "
                f"{timeout_s:.0f} s (rc {result.returncode}):\n{result.stderr[-2000:]}"
            )
        time.sleep(1.0)


@pytest.fixture(scope="module")
def app_run(yarn_cluster: LocalCluster, skein_client: skein.Client, tmp_path_factory) -> AppRun:
    """One skein application, three services: labelled (gpu partition), gpu (gpu partition +
    1 GPU), plain (default partition). Each prints who it is and waits to be released, so the
    RM's reports of the live containers can be taken; then it ends and its logs are read."""
    started = time.monotonic()
    token = uuid.uuid4().hex
    release = tmp_path_factory.mktemp("release") / "go"
    spec = skein.ApplicationSpec(
        name="tfyarn-test-localyarn",
        queue="default",
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
        services={
            name: skein.Service(
                resources=skein.Resources(memory=128, vcores=1, gpus=gpus),
                script=service_script(name, token, release),
                node_label=label,
            )
            for name, (label, gpus) in SERVICES.items()
        },
    )
    app_id = skein_client.submit(spec)
    try:
        running = wait_until_running(skein_client.connect(app_id), timeout_s=120)
        container_of = {name: c.yarn_container_id for name, c in running.items()}
        rm_reports = rm_containers(yarn_cluster.layout, app_id)
        assert set(container_of.values()) <= set(rm_reports), (container_of, rm_reports)
        release.touch()
        report = wait_for_final_state(skein_client, app_id, timeout_s=120)
    except BaseException:
        with contextlib.suppress(Exception):
            skein_client.kill_application(app_id)
        raise
    wanted = {cid: f"{name}.log" for name, cid in container_of.items()}
    logs, blocks = aggregated_logs(yarn_cluster.env, app_id, wanted, timeout_s=90)
    return AppRun(app_id, report, token, container_of, rm_reports, logs, blocks,
                  time.monotonic() - started)


def printed_by(run: AppRun, service: str) -> list[re.Match]:
    """The marker lines in the service's own log file, across all its containers."""
    return [m for b in run.blocks if b.log_type == f"{service}.log"
            for m in MARKER_LINE.finditer(b.contents)]


# ---------------------------------------------------------------- 1. label placement

def test_labelled_service_runs_on_gpu_node_and_plain_one_does_not(
    yarn_cluster: LocalCluster, app_run: AppRun
) -> None:
    layout = yarn_cluster.layout
    assert (str(app_run.report.state), str(app_run.report.final_status)) == (
        "FINISHED", "SUCCEEDED"), app_run.report.diagnostics

    nodes = rm_nodes(layout)
    gpu_node, default_node = nodes[layout.port(GPU_NM.rpc_port)], nodes[
        layout.port(DEFAULT_NM.rpc_port)]
    assert gpu_node["nodeLabels"] == [GPU_LABEL]
    assert not default_node.get("nodeLabels")

    expected_node = {"labelled": gpu_node, "gpu": gpu_node, "plain": default_node}
    for service, node in expected_node.items():
        container_id = app_run.container_of[service]
        # The RM's own container report, taken while the container ran.
        assert app_run.rm_reports[container_id]["nodeId"] == node["id"], service
        # The NodeManagers' aggregated logs: which node uploaded this container's files.
        headers = {b.node for b in app_run.blocks if b.container_id == container_id}
        assert headers == {node_tag(node["id"])}, service
        # What the container itself saw: YARN's CONTAINER_ID and NM_PORT.
        [line] = printed_by(app_run, service)
        assert line["token"] == app_run.token
        assert line["container"] == container_id
        assert int(line["nm_port"]) == int(node["id"].rsplit(":", 1)[1])
    # And the unlabelled service's container did not go near the gpu partition.
    plain_id = app_run.container_of["plain"]
    assert app_run.rm_reports[plain_id]["nodeId"] != gpu_node["id"]


# ---------------------------------------------------------------- 2. GPUs

def test_gpu_request_is_allocated_one_gpu_on_the_gpu_node(
    yarn_cluster: LocalCluster, app_run: AppRun
) -> None:
    layout = yarn_cluster.layout
    gpu_node = rm_nodes(layout)[layout.port(GPU_NM.rpc_port)]
    assert cluster.node_gpus(gpu_node)[1] == GPU_NM.gpus
    gpus = {service: allocated_gpus(app_run.rm_reports[cid])
            for service, cid in app_run.container_of.items()}
    assert gpus == {"labelled": 0, "gpu": 1, "plain": 0}
    assert app_run.rm_reports[app_run.container_of["gpu"]]["nodeId"] == gpu_node["id"]


def test_asking_more_gpus_than_any_node_has_fails_fast_naming_the_gpu(
    skein_client: skein.Client,
) -> None:
    # What YARN does (observed): submission succeeds; skein's AM asks for the container,
    # the RM rejects the ask (InvalidResourceRequestException: above the maximum allocation,
    # yarn.io/gpu: 2) and the AM ends the application FINISHED/FAILED with that diagnostic.
    too_many = GPU_NM.gpus + 1
    spec = skein.ApplicationSpec(
        name="tfyarn-test-too-many-gpus",
        queue="default",
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
        services={"greedy": skein.Service(
            resources=skein.Resources(memory=128, vcores=1, gpus=too_many),
            script="echo should never run", node_label=GPU_LABEL)},
    )
    started = time.monotonic()
    app_id = skein_client.submit(spec)
    try:
        report = wait_for_final_state(skein_client, app_id, timeout_s=90)
    finally:
        with contextlib.suppress(Exception):
            skein_client.kill_application(app_id)
    assert time.monotonic() - started < 90
    assert str(report.final_status) == "FAILED", report
    assert str(report.state) in ("FINISHED", "FAILED")
    diagnostics = report.diagnostics
    assert "yarn.io/gpu" in diagnostics
    assert f"yarn.io/gpu: {too_many}" in diagnostics  # what was asked
    assert "maximum allowed allocation" in diagnostics


# ---------------------------------------------------------------- 3. yarn logs

def test_yarn_logs_returns_what_each_container_printed(
    yarn_cluster: LocalCluster, app_run: AppRun
) -> None:
    # The `yarn` that `tfyarn cluster env` puts first on PATH is this cluster's launcher.
    assert shutil.which("yarn", path=yarn_cluster.env["PATH"]) == str(
        yarn_cluster.layout.bin_dir / "yarn")
    for service, container_id in app_run.container_of.items():
        [own_log] = [b for b in app_run.blocks
                     if b.container_id == container_id and b.log_type == f"{service}.log"]
        lines = list(MARKER_LINE.finditer(own_log.contents))
        assert [(m["token"], m["service"], m["container"]) for m in lines] == [
            (app_run.token, service, container_id)]
    # Each container's marker is in its own log only: three services, three marker lines.
    assert app_run.logs.count(f"{MARKER} token={app_run.token}") == len(SERVICES)


# ---------------------------------------------------------------- 4-5. the CLI, on a throwaway

OFFSET = 1000


def tfyarn_command() -> list[str]:
    script = Path(sys.executable).with_name("tfyarn")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tfyarn.cli"]


def run_cli(state_dir: Path, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, TFYARN_CLUSTER_DIR=str(state_dir),
               TFYARN_CLUSTER_PORT_OFFSET=str(OFFSET))
    return subprocess.run([*tfyarn_command(), "cluster", *args], env=env, capture_output=True,
                          text=True, timeout=timeout_s)


def daemon_pids(state_dir: Path) -> dict[str, int]:
    return {path.stem: int(path.read_text().split()[0])
            for path in sorted((state_dir / "run").glob("*.pid"))}


def alive(pid: int) -> bool:
    """Running (a zombie counts as gone: PID 1 of some containers never reaps)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def throwaway_ports() -> list[int]:
    ports = [*RM_PORTS.values()]
    for nm in NODE_MANAGERS:
        ports += [nm.rpc_port, nm.localizer_port, nm.webapp_port, nm.collector_port]
    return [port + OFFSET for port in ports]


@pytest.fixture
def throwaway_dir(tmp_path_factory):
    """A fresh state dir; whatever runs there is stopped afterwards, pass or fail."""
    taken = [port for port in throwaway_ports() if listening(port)]
    assert not taken, f"ports {taken} (offset {OFFSET}) are taken: another cluster runs there?"
    state_dir = tmp_path_factory.mktemp("cluster")
    try:
        yield state_dir
    finally:
        cluster.down(Layout(state_dir, port_offset=OFFSET))


def test_cluster_cli_lifecycle_on_a_throwaway_cluster(throwaway_dir: Path) -> None:
    state = throwaway_dir
    web = f"http://127.0.0.1:{RM_PORTS['webapp.address'] + OFFSET}"
    nm_ids = {nm.name: f"localhost:{nm.rpc_port + OFFSET}" for nm in NODE_MANAGERS}

    down_status = run_cli(state, "status")
    assert down_status.returncode == 3, down_status
    assert "not running" in down_status.stdout

    started = time.monotonic()
    up = run_cli(state, "up")
    up_wall = time.monotonic() - started
    assert up.returncode == 0, up.stderr
    match = re.search(r"up in (\d+\.\d) s\. Web UI: (\S+)", up.stdout)
    assert match, up.stdout
    assert match[2] == web
    assert 0 < float(match[1]) <= up_wall
    pids = daemon_pids(state)
    assert set(pids) == {"rm", *nm_ids}
    for pid in pids.values():
        assert alive(pid)
        assert str(state) in Path(f"/proc/{pid}/cmdline").read_text()  # ours, not a reused pid

    again = run_cli(state, "up")
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stdout and web in again.stdout
    assert daemon_pids(state) == pids

    status = run_cli(state, "status")
    assert status.returncode == 0, status.stderr
    node_lines = {name: next((line for line in status.stdout.splitlines() if node_id in line), "")
                  for name, node_id in nm_ids.items()}
    assert "RUNNING" in node_lines[GPU_NM.name] and "label=gpu" in node_lines[GPU_NM.name]
    assert "RUNNING" in node_lines[DEFAULT_NM.name]
    assert "label=gpu" not in node_lines[DEFAULT_NM.name]
    assert "Node labels: gpu(exclusive=true)" in status.stdout

    env = run_cli(state, "env")
    assert env.returncode == 0, env.stderr
    lines = env.stdout.splitlines()
    assert f"export HADOOP_CONF_DIR={shlex.quote(str(state / 'conf'))}" in lines
    assert f'export PATH={shlex.quote(str(state / "bin"))}:"$PATH"' in lines
    [java_home] = [line.split("=", 1)[1] for line in lines if line.startswith("export JAVA_HOME=")]
    assert (Path(shlex.split(java_home)[0]) / "bin" / "java").exists()
    # Evaluated, it points `yarn` at the throwaway cluster (not the shared one).
    # (os.environ may point at the shared cluster already: the eval'd lines must win.)
    nodes = subprocess.run(["bash", "-c", 'eval "$ENV_LINES" && yarn node -list -all'],
                           env=dict(os.environ, ENV_LINES=env.stdout),
                           capture_output=True, text=True, timeout=120)
    assert nodes.returncode == 0, nodes.stderr
    assert all(node_id in nodes.stdout for node_id in nm_ids.values()), nodes.stdout

    # `up` proved it schedules: its probe application ran one container on each NodeManager.
    probe = re.search(r"Probe application (application_\d+_\d+) ran a container in each "
                      r"partition", up.stderr)
    assert probe, up.stderr
    report = requests.get(f"{web}/ws/v1/cluster/apps/{probe[1]}", timeout=10).json()["app"]
    assert (report["name"], report["finalStatus"]) == ("tfyarn-cluster-probe", "SUCCEEDED")
    wanted = {node_id.replace(":", "_") for node_id in nm_ids.values()}
    deadline = time.monotonic() + 60
    while True:  # aggregation lags the application's end a little
        logs = subprocess.run(["bash", "-c", f'eval "$ENV_LINES" && yarn logs -applicationId '
                               f'{probe[1]}'], env=dict(os.environ, ENV_LINES=env.stdout),
                              capture_output=True, text=True, timeout=120)
        ran_on = set(re.findall(r"^Container: container_\S+ on (\S+)$", logs.stdout, re.M))
        if wanted <= ran_on or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert wanted <= ran_on, (ran_on, logs.stdout[-2000:], logs.stderr[-2000:])

    down = run_cli(state, "down")
    assert down.returncode == 0, down.stderr
    assert "Stopped" in down.stdout
    assert not [name for name, pid in pids.items() if alive(pid)]
    assert not daemon_pids(state)
    for name in pids:
        assert (state / "logs" / f"{name}.log").stat().st_size > 0

    down_again = run_cli(state, "down")
    assert down_again.returncode == 0, down_again.stderr
    assert "not running" in down_again.stdout


def test_up_fails_clearly_when_a_port_is_taken(throwaway_dir: Path) -> None:
    port = RM_PORTS["webapp.address"] + OFFSET
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        up = run_cli(throwaway_dir, "up")
        assert up.returncode != 0, up.stdout
        assert str(port) in up.stderr, up.stderr
        assert "in use" in up.stderr
        # Nothing left running: no live daemon, none of the other ports listening.
        run_dir = throwaway_dir / "run"
        live = [p for p in run_dir.glob("*.pid") if alive(int(p.read_text().split()[0]))]
        assert not live
        assert not [p for p in throwaway_ports() if p != port and listening(p)]
