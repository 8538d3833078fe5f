"""Integration tests of the local YARN (tfyarn.localyarn) on the real daemons, no mocks.

Placement is proved from YARN's own records, not from what skein says: the ResourceManager's
container reports (REST, taken while the containers run) and the NodeManagers' aggregated logs
(`yarn logs`, whose "Container: <id> on <host>_<port>" headers say which node ran what), cross-
checked against what each container printed about itself ($CONTAINER_ID, $NM_HOST, $NM_PORT).
Each NodeManager is a host of its own: its own address, and its own /tmp, which the containers
of the same application prove by what they see there.

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
from barenodes import node_python
from conftest import LocalCluster, wait_for_final_state
from hdfs_native import Client
from jobtools import logs_node_name, rm_node_id
from test_gpus_yarn import assert_gpu_total_discovered

from tfyarn.localyarn import cluster
from tfyarn.localyarn.layout import (
    GPU_LABEL,
    HDFS_PORTS,
    RM_PORTS,
    Layout,
    NodeManagerSpec,
    node_managers,
)

pytestmark = [
    pytest.mark.yarn,
    # skein 0.8.2 compares versions with distutils' LooseVersion.
    pytest.mark.filterwarnings("ignore:distutils Version classes:DeprecationWarning"),
]

MARKER = "TFYARN-TEST-MARKER"
MARKER_LINE = re.compile(
    rf"^{MARKER} token=(?P<token>\S+) service=(?P<service>\S+) "
    r"container=(?P<container>\S+) nm_host=(?P<nm_host>\S*) nm_port=(?P<nm_port>\d*)$",
    re.M,
)
SEES = "TFYARN-TEST-SEES"
SEES_LINE = re.compile(rf"^{SEES} token=(?P<token>\S+) service=(?P<service>\S+) "
                       r"tmp=(?P<tmp>\S*)$", re.M)

# service name -> (node label, GPUs)
SERVICES = {
    "labelled": (GPU_LABEL, 0),  # in the gpu partition, no GPU asked
    "gpu": (GPU_LABEL, 1),  # in the gpu partition with one yarn.io/gpu
    "plain": ("", 0),  # default partition
}
RELEASE_WAIT_S = 120  # a service container exits 1 if the test never releases it
RELEASE_KEY = "release"
WROTE_KEY = "wrote/"  # wrote/<service>: its file is in its host's /tmp


def gpu_nm(layout: Layout) -> NodeManagerSpec:
    return next(nm for nm in layout.node_managers if nm.partition == GPU_LABEL)


def default_nms(layout: Layout) -> list[NodeManagerSpec]:
    return [nm for nm in layout.node_managers if nm.partition is None]


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


def rm_nodes(layout: Layout) -> dict[str, dict]:
    """The RM's node reports, by node id (host:port, each NodeManager a host of its own)."""
    nodes = as_list((rm_get(layout, "nodes").get("nodes") or {}).get("node"))
    return {node["id"]: node for node in nodes}


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
    node: str  # as YARN's header writes it: 127.0.0.2_8144
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
    """The RM's node id (127.0.0.2:8144) as `yarn logs` headers write it (127.0.0.2_8144)."""
    return node_id.replace(":", "_")


# ---------------------------------------------------------------- the shared application

@dataclass(frozen=True)
class AppRun:
    app_id: str
    report: skein.model.ApplicationReport
    token: str
    container_of: dict[str, str]  # service -> YARN container id (from skein, checked below)
    rm_reports: dict[str, dict]  # YARN container id -> RM's report, taken while it ran
    # service -> the NodeManagers in whose private /tmp (seen from this, the client machine,
    # in <state dir>/<nm>/host/tmp) its file was, taken while it ran
    tmp_copies: dict[str, list[str]]
    client_sees: list[str]  # the services' files this process sees in its own /tmp
    logs: str  # `yarn logs -applicationId` stdout
    blocks: list[LogBlock]
    seconds: float


SERVICE_CODE = f'''
import os, pathlib, sys, time
import skein
token, service = sys.argv[1], sys.argv[2]
# A file in this host's /tmp, which no other host sees.
pathlib.Path("/tmp", f"{{token}}-{{service}}").write_text(os.environ["CONTAINER_ID"])
print(f"{MARKER} token={{token}} service={{service}} container={{os.environ['CONTAINER_ID']}} "
      f"nm_host={{os.environ.get('NM_HOST', '')}} nm_port={{os.environ.get('NM_PORT', '')}}",
      flush=True)
app = skein.ApplicationClient.from_current()
app.kv.put("{WROTE_KEY}" + service, b"")
deadline = time.monotonic() + {RELEASE_WAIT_S}
while app.kv.get("{RELEASE_KEY}") is None:
    if time.monotonic() > deadline:
        sys.exit("not released by the test")
    time.sleep(0.2)
seen = sorted(p.name.rsplit("-", 1)[1] for p in pathlib.Path("/tmp").glob(f"{{token}}-*"))
print(f"{SEES} token={{token}} service={{service}} tmp={{','.join(seen)}}", flush=True)
'''


def service_script(python: Path, service: str, token: str) -> str:
    """The service's Python (one installed on every node, with skein) from a here-document."""
    return (f"{shlex.quote(str(python))} - {token} {service} <<'TFYARN_TEST_EOF'\n"
            f"{SERVICE_CODE}\nTFYARN_TEST_EOF\n")


def wait_until_running(app: skein.ApplicationClient, timeout_s: float) -> dict[str, object]:
    """One RUNNING container per service (skein's view) that wrote its file; fails at once if
    one ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        containers = app.get_containers(states=["WAITING", "REQUESTED", "RUNNING",
                                                "SUCCEEDED", "FAILED", "KILLED"])
        ended = [c for c in containers if str(c.state) in ("SUCCEEDED", "FAILED", "KILLED")]
        assert not ended, f"containers ended before the test released them: {ended}"
        running = {c.service_name: c for c in containers if str(c.state) == "RUNNING"}
        wrote = {key.removeprefix(WROTE_KEY) for key in app.kv.get_prefix(WROTE_KEY)}
        if set(running) == set(SERVICES) and wrote == set(SERVICES):
            return running
        if time.monotonic() > deadline:
            raise AssertionError(f"not all services RUNNING and written after {timeout_s:.0f} "
                                 f"s: {containers}, wrote {sorted(wrote)}")
        time.sleep(0.3)


def tmp_copies(layout: Layout, name: str) -> list[str]:
    """The NodeManagers whose private /tmp holds ``name``."""
    return [nm.name for nm in layout.node_managers
            if (layout.host_view_dir(nm) / "tmp" / name).exists()]


def aggregated_logs(env: dict[str, str], app_id: str, wanted: dict[str, str],
                    timeout_s: float) -> tuple[str, list[LogBlock]]:
    """`yarn logs` once every wanted (container id -> log file) has been aggregated with the
    lines the container printed after its release.

    The NodeManagers upload logs after the application ends, so the first calls can come
    back partial (or fail); poll, bounded.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = yarn_logs(env, app_id)
        blocks = parse_yarn_logs(result.stdout)
        have = {(b.container_id, b.log_type) for b in blocks if SEES in b.contents}
        if result.returncode == 0 and set(wanted.items()) <= have:
            return result.stdout, blocks
        if time.monotonic() > deadline:
            raise AssertionError(
                f"`yarn logs -applicationId {app_id}` lacks {set(wanted.items()) - have} after "
                f"{timeout_s:.0f} s (rc {result.returncode}):\n{result.stderr[-2000:]}"
            )
        time.sleep(1.0)


@pytest.fixture(scope="module")
def app_run(yarn_cluster: LocalCluster, skein_client: skein.Client) -> AppRun:
    """One skein application, three services: labelled (gpu partition), gpu (gpu partition +
    1 GPU), plain (default partition). Each writes a file in its host's /tmp, prints who it
    is and waits to be released (a key in skein's key-value store), so the RM's reports of the
    live containers and each host's /tmp can be taken; then it says which of the services'
    files it sees in its /tmp, ends, and its logs are read."""
    layout = yarn_cluster.layout
    python = node_python(layout)
    started = time.monotonic()
    token = f"tfyarn-test-{uuid.uuid4().hex}"
    spec = skein.ApplicationSpec(
        name="tfyarn-test-localyarn",
        queue="default",
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
        services={
            name: skein.Service(
                resources=skein.Resources(memory=128, vcores=1, gpus=gpus),
                script=service_script(python, name, token),
                node_label=label,
            )
            for name, (label, gpus) in SERVICES.items()
        },
    )
    app_id = skein_client.submit(spec)
    try:
        app = skein_client.connect(app_id)
        running = wait_until_running(app, timeout_s=120)
        container_of = {name: c.yarn_container_id for name, c in running.items()}
        rm_reports = rm_containers(layout, app_id)
        assert set(container_of.values()) <= set(rm_reports), (container_of, rm_reports)
        copies = {name: tmp_copies(layout, f"{token}-{name}") for name in SERVICES}
        client_sees = sorted(name for name in SERVICES if Path("/tmp", f"{token}-{name}").exists())
        app.kv.put(RELEASE_KEY, b"go")
        report = wait_for_final_state(skein_client, app_id, timeout_s=120)
    except BaseException:
        with contextlib.suppress(Exception):
            skein_client.kill_application(app_id)
        raise
    wanted = {cid: f"{name}.log" for name, cid in container_of.items()}
    logs, blocks = aggregated_logs(yarn_cluster.env, app_id, wanted, timeout_s=90)
    return AppRun(app_id, report, token, container_of, rm_reports, copies, client_sees, logs,
                  blocks, time.monotonic() - started)


def printed_by(run: AppRun, service: str, pattern: re.Pattern = MARKER_LINE) -> list[re.Match]:
    """The marker lines in the service's own log file, across all its containers."""
    return [m for b in run.blocks if b.log_type == f"{service}.log"
            for m in pattern.finditer(b.contents)]


def node_of(layout: Layout, run: AppRun, service: str) -> NodeManagerSpec:
    """The NodeManager that the RM placed the service's container on."""
    node_id = run.rm_reports[run.container_of[service]]["nodeId"]
    [nm] = [nm for nm in layout.node_managers if rm_node_id(layout, nm) == node_id]
    return nm


# ---------------------------------------------------------------- 1. label placement

def test_labelled_service_runs_on_gpu_node_and_plain_one_does_not(
    yarn_cluster: LocalCluster, app_run: AppRun
) -> None:
    layout = yarn_cluster.layout
    assert (str(app_run.report.state), str(app_run.report.final_status)) == (
        "FINISHED", "SUCCEEDED"), app_run.report.diagnostics

    nodes = rm_nodes(layout)
    gpu_node = nodes[rm_node_id(layout, gpu_nm(layout))]
    default_nodes = [nodes[rm_node_id(layout, nm)] for nm in default_nms(layout)]
    assert gpu_node["nodeLabels"] == [GPU_LABEL]
    assert default_nodes and not any(node.get("nodeLabels") for node in default_nodes)

    allowed = {"labelled": [gpu_node], "gpu": [gpu_node], "plain": default_nodes}
    for service, candidates in allowed.items():
        container_id = app_run.container_of[service]
        # The RM's own container report, taken while the container ran.
        node_id = app_run.rm_reports[container_id]["nodeId"]
        assert node_id in [node["id"] for node in candidates], service
        # The NodeManagers' aggregated logs: which node uploaded this container's files.
        headers = {b.node for b in app_run.blocks if b.container_id == container_id}
        assert headers == {node_tag(node_id)}, service
        # What the container itself saw: YARN's CONTAINER_ID, NM_HOST and NM_PORT.
        [line] = printed_by(app_run, service)
        assert line["token"] == app_run.token
        assert line["container"] == container_id
        assert f"{line['nm_host']}:{line['nm_port']}" == node_id
    # And the unlabelled service's container did not go near the gpu partition.
    plain_id = app_run.container_of["plain"]
    assert app_run.rm_reports[plain_id]["nodeId"] != gpu_node["id"]


# ---------------------------------------------------------------- 2. GPUs

def test_gpu_request_is_allocated_one_gpu_on_the_gpu_node(
    yarn_cluster: LocalCluster, app_run: AppRun
) -> None:
    layout = yarn_cluster.layout
    gpu_node = rm_nodes(layout)[rm_node_id(layout, gpu_nm(layout))]
    assert cluster.node_gpus(gpu_node)[1] == gpu_nm(layout).gpus
    gpus = {service: allocated_gpus(app_run.rm_reports[cid])
            for service, cid in app_run.container_of.items()}
    assert gpus == {"labelled": 0, "gpu": 1, "plain": 0}
    assert app_run.rm_reports[app_run.container_of["gpu"]]["nodeId"] == gpu_node["id"]


def test_asking_more_gpus_than_any_node_has_fails_fast_naming_the_gpu(
    yarn_cluster: LocalCluster, skein_client: skein.Client,
) -> None:
    # What YARN does (observed): submission succeeds; skein's AM asks for the container,
    # the RM rejects the ask (InvalidResourceRequestException: above the maximum allocation,
    # yarn.io/gpu: 2) and the AM ends the application FINISHED/FAILED with that diagnostic.
    too_many = gpu_nm(yarn_cluster.layout).gpus + 1
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


# ---------------------------------------------------------------- 4. hosts of their own

def test_every_node_manager_is_a_host_of_its_own(yarn_cluster: LocalCluster) -> None:
    """The RM knows each NodeManager by its own address: a host, its RPC and web ports."""
    layout = yarn_cluster.layout
    nodes = rm_nodes(layout)
    assert set(nodes) == {rm_node_id(layout, nm) for nm in layout.node_managers}
    hosts = [nm.host for nm in layout.node_managers]
    assert len(set(hosts)) == len(hosts) == layout.node_count
    for nm in layout.node_managers:
        node = nodes[rm_node_id(layout, nm)]
        assert node["state"] == "RUNNING", node
        assert node["nodeHostName"] == nm.host, node
        assert node["nodeHTTPAddress"] == f"{nm.host}:{layout.port(nm.webapp_port)}", node


def test_hosts_do_not_share_tmp(yarn_cluster: LocalCluster, app_run: AppRun) -> None:
    """A file a container writes to /tmp is on its own host only: containers on the same host
    see it, those on another host and this (client) machine do not."""
    layout = yarn_cluster.layout
    assert not (layout.state_dir / "hosts-share-files").exists(), (
        "this machine refused mount namespaces: the NodeManagers share /tmp")
    placed = {service: node_of(layout, app_run, service) for service in SERVICES}
    # labelled and gpu are both on the one gpu node; plain is on another host.
    assert placed["labelled"] == placed["gpu"] != placed["plain"]
    for service, nm in placed.items():
        # The file is in exactly one host's /tmp: the one of the node that ran the service.
        assert app_run.tmp_copies[service] == [nm.name], (service, app_run.tmp_copies)
    assert app_run.client_sees == []
    sees = {m["service"]: set(filter(None, m["tmp"].split(",")))
            for m in (line for service in SERVICES
                      for line in printed_by(app_run, service, SEES_LINE))
            if m["token"] == app_run.token}
    assert sees == {"labelled": {"labelled", "gpu"}, "gpu": {"labelled", "gpu"},
                    "plain": {"plain"}}, sees


# ---------------------------------------------------------------- 5-6. the CLI, on a throwaway

OFFSET = 1000  # beside the test clusters at offsets 0, 300, 600 and 900
THROWAWAY_NODES = 4  # one more than the default: `up --nodes` is honoured
THROWAWAY_GPUS = 3  # one more than the default: the gpu node's total is what YARN discovers


def tfyarn_command() -> list[str]:
    script = Path(sys.executable).with_name("tfyarn")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tfyarn.cli.main"]


def run_cli(state_dir: Path, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, TFYARN_CLUSTER_DIR=str(state_dir),
               TFYARN_CLUSTER_PORT_OFFSET=str(OFFSET))
    return subprocess.run([*tfyarn_command(), "cluster", *args], env=env, capture_output=True,
                          text=True, timeout=timeout_s)


def run_with_env(env_lines: str, command: str) -> subprocess.CompletedProcess:
    """``command`` in a shell after `eval "$(tfyarn cluster env)"` (whose lines must win over
    an os.environ that may point at the shared cluster already)."""
    return subprocess.run(["bash", "-c", f'eval "$ENV_LINES" && {command}'],
                          env=dict(os.environ, ENV_LINES=env_lines),
                          capture_output=True, text=True, timeout=120)


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


def listening(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def throwaway_addresses() -> list[tuple[str, int]]:
    """Every (host, port) the throwaway cluster listens on, with its most NodeManagers."""
    found = [("127.0.0.1", port + OFFSET) for port in [*RM_PORTS.values(), *HDFS_PORTS.values()]]
    for nm in node_managers(THROWAWAY_NODES):
        found += [(nm.host, port + OFFSET) for port in (nm.rpc_port, nm.localizer_port,
                                                        nm.webapp_port, nm.collector_port)]
    return found


@pytest.fixture
def throwaway_dir(tmp_path_factory):
    """A fresh state dir; whatever runs there is stopped afterwards, pass or fail."""
    taken = [address for address in throwaway_addresses() if listening(*address)]
    assert not taken, f"{taken} (offset {OFFSET}) are taken: another cluster runs there?"
    state_dir = tmp_path_factory.mktemp("cluster")
    try:
        yield state_dir
    finally:
        cluster.down(Layout(state_dir, port_offset=OFFSET))


@pytest.mark.xdist_group("throwaway")  # one lane: the throwaway cluster's ports
def test_cluster_cli_lifecycle_on_a_throwaway_cluster(throwaway_dir: Path) -> None:
    state = throwaway_dir
    layout = Layout(state, port_offset=OFFSET, nodes=THROWAWAY_NODES)
    web = f"http://127.0.0.1:{RM_PORTS['webapp.address'] + OFFSET}"
    default_fs = f"hdfs://127.0.0.1:{HDFS_PORTS['namenode rpc'] + OFFSET}"
    nms = node_managers(THROWAWAY_NODES)
    nm_ids = {nm.name: rm_node_id(layout, nm) for nm in nms}
    throwaway_gpu = nms[-1]
    assert throwaway_gpu.partition == GPU_LABEL

    down_status = run_cli(state, "status")
    assert down_status.returncode == 3, down_status
    assert "not running" in down_status.stdout

    started = time.monotonic()
    up = run_cli(state, "up", "--nodes", str(THROWAWAY_NODES), "--gpus", str(THROWAWAY_GPUS))
    up_wall = time.monotonic() - started
    assert up.returncode == 0, up.stderr
    match = re.search(r"up in (\d+\.\d) s\. Web UI: (\S+)", up.stdout)
    assert match, up.stdout
    assert match[2] == web
    assert 0 < float(match[1]) <= up_wall
    assert f"(Hadoop {layout.hadoop_version})" in up.stdout
    pids = daemon_pids(state)
    assert set(pids) == {"rm", "namenode", "datanode", *nm_ids}
    for pid in pids.values():
        assert alive(pid)
        assert str(state) in Path(f"/proc/{pid}/cmdline").read_text()  # ours, not a reused pid

    again = run_cli(state, "up")
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stdout and web in again.stdout
    assert daemon_pids(state) == pids

    status = run_cli(state, "status")
    assert status.returncode == 0, status.stderr
    # HDFS: the NameNode answers, out of safe mode, with its one DataNode alive.
    [hdfs_line] = [line for line in status.stdout.splitlines() if line.startswith("HDFS: ")]
    assert hdfs_line.startswith(f"HDFS: {default_fs} Operational, 1 live / 0 dead DataNode(s)")
    node_lines = {name: next((line for line in status.stdout.splitlines() if node_id in line), "")
                  for name, node_id in nm_ids.items()}
    for nm in nms:
        assert "RUNNING" in node_lines[nm.name], (nm.name, status.stdout)
        assert ("label=gpu" in node_lines[nm.name]) == (nm is throwaway_gpu), node_lines
    assert "Node labels: gpu(exclusive=true)" in status.stdout
    assert "share /tmp" not in status.stdout  # each NodeManager got a host view of its own
    assert_gpu_total_discovered(layout, THROWAWAY_GPUS, status.stdout)  # --gpus 3

    # --nodes 4: four NodeManagers registered, each under its own host's address.
    rest_nodes = requests.get(f"{web}/ws/v1/cluster/nodes", timeout=10).json()["nodes"]["node"]
    assert sorted(node["id"] for node in rest_nodes) == sorted(nm_ids.values())
    assert sorted(node["nodeHostName"] for node in rest_nodes) == sorted(nm.host for nm in nms)
    assert len({nm.host for nm in nms}) == THROWAWAY_NODES
    assert all(node["state"] == "RUNNING" for node in rest_nodes), rest_nodes
    # The release asked for (TFYARN_HADOOP_VERSION) is the one every daemon runs.
    info = requests.get(f"{web}/ws/v1/cluster/info", timeout=10).json()["clusterInfo"]
    assert info["hadoopVersion"] == layout.hadoop_version, info
    assert {node["version"] for node in rest_nodes} == {layout.hadoop_version}, rest_nodes
    assert f"(Hadoop {layout.hadoop_version}, state dir {state})" in status.stdout

    env = run_cli(state, "env")
    assert env.returncode == 0, env.stderr
    lines = env.stdout.splitlines()
    assert f"export HADOOP_CONF_DIR={shlex.quote(str(state / 'conf'))}" in lines
    assert f'export PATH={shlex.quote(str(state / "bin"))}:"$PATH"' in lines
    [java_home] = [line.split("=", 1)[1] for line in lines if line.startswith("export JAVA_HOME=")]
    assert (Path(shlex.split(java_home)[0]) / "bin" / "java").exists()
    # Evaluated, it points `yarn` at the throwaway cluster (not the shared one) ...
    nodes = run_with_env(env.stdout, "yarn node -list -all")
    assert nodes.returncode == 0, nodes.stderr
    assert all(node_id in nodes.stdout for node_id in nm_ids.values()), nodes.stdout
    # ... and `hdfs` at its HDFS: the directories `up` prepared, as a real cluster has them,
    # and one made here, which the throwaway's NameNode (asked directly) holds.
    made = f"/tfyarn-test-{uuid.uuid4().hex}"
    listing = run_with_env(env.stdout, f"hdfs dfs -mkdir {made} && hdfs dfs -ls /")
    assert listing.returncode == 0, listing.stderr
    listed = {line.split()[-1] for line in listing.stdout.splitlines() if line.startswith("d")}
    assert {"/tmp", "/user", made} <= listed, listing.stdout
    assert Client(default_fs).get_file_info(made).isdir

    # `up` proved it schedules: its probe application ran one container in each partition.
    probe = re.search(r"Probe application (application_\d+_\d+) ran a container in each "
                      r"partition", up.stderr)
    assert probe, up.stderr
    report = requests.get(f"{web}/ws/v1/cluster/apps/{probe[1]}", timeout=10).json()["app"]
    assert (report["name"], report["finalStatus"]) == ("tfyarn-cluster-probe", "SUCCEEDED")
    all_nodes = {logs_node_name(layout, nm) for nm in nms}
    default_nodes = all_nodes - {logs_node_name(layout, throwaway_gpu)}
    deadline = time.monotonic() + 60
    while True:  # aggregation lags the application's end a little
        logs = run_with_env(env.stdout, f"yarn logs -applicationId {probe[1]}")
        ran_on = set(re.findall(r"^Container: container_\S+ on (\S+)$", logs.stdout, re.M))
        done = logs_node_name(layout, throwaway_gpu) in ran_on and ran_on & default_nodes
        if done or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert logs_node_name(layout, throwaway_gpu) in ran_on, (ran_on, logs.stderr[-2000:])
    assert ran_on & default_nodes and ran_on <= all_nodes, (ran_on, logs.stdout[-2000:])

    down = run_cli(state, "down")
    assert down.returncode == 0, down.stderr
    assert "Stopped" in down.stdout
    assert "namenode" in down.stdout and "datanode" in down.stdout, down.stdout
    assert not alive(pids["namenode"]) and not alive(pids["datanode"])
    assert not [name for name, pid in pids.items() if alive(pid)]
    assert not daemon_pids(state)  # namenode.pid and datanode.pid too
    for name in pids:
        assert (state / "logs" / f"{name}.log").stat().st_size > 0
    hdfs_ports = [("127.0.0.1", port + OFFSET) for port in HDFS_PORTS.values()]
    assert not [address for address in hdfs_ports if listening(*address)]

    down_again = run_cli(state, "down")
    assert down_again.returncode == 0, down_again.stderr
    assert "not running" in down_again.stdout


@pytest.mark.xdist_group("throwaway")  # one lane: the throwaway cluster's ports
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
        assert not [a for a in throwaway_addresses() if a != ("127.0.0.1", port)
                    and listening(*a)]
