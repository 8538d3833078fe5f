"""`tfyarn cluster up | down | status | env`: the local single-machine YARN."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import requests

from tfyarn.localyarn import daemons, ha, hasite, hdfs, hostview, kdc, localfs, releases, secure
from tfyarn.localyarn.daemons import NM_CLASS, RM_CLASS, Daemon
from tfyarn.localyarn.layout import GPU_LABEL, HDFS_PORTS, RM_PORTS, Layout
from tfyarn.localyarn.provision import ClusterError, ensure_hadoop_jars, find_java_home
from tfyarn.localyarn.siteconf import write_configuration
from tfyarn.security import spnego

RM_HEAP_MB = 320
NM_HEAP_MB = 192
START_TIMEOUT_S = 120.0
PROBE_TIMEOUT_S = 150.0  # the probe gives up after 90 s; this bounds the driver too

Echo = Callable[[str], None]


@dataclass(frozen=True)
class UpResult:
    already_running: bool
    webapp_url: str
    seconds: float


def daemons_of(layout: Layout, node_wrapper: tuple[str, ...] = ()) -> list[Daemon]:
    """HDFS first, then the ResourceManager (both pairs on an HA cluster, ha.py), then the
    NodeManagers (each run by ``node_wrapper`` with its host's view, see hostview.py)."""
    nms = [Daemon(nm.name, NM_CLASS, layout.node_conf_dir(nm), NM_HEAP_MB,
                  wrapper=(*node_wrapper, *_host_view_command(layout, nm)) if node_wrapper
                  else (),
                  classpath=daemons.classpath(layout, layout.node_conf_dir(nm),
                                              localfs.class_dir(layout)))
           for nm in layout.node_managers]
    if layout.is_ha:
        return [*ha.storage_daemons(layout), *ha.resource_managers(layout), *nms]
    return [*hdfs.daemons_of(layout), Daemon("rm", RM_CLASS, layout.conf_dir, RM_HEAP_MB), *nms]


def _host_view_command(layout: Layout, nm) -> tuple[str, ...]:
    """python -m tfyarn.localyarn.hostview ... --: the node sees what a real node has and
    nothing else (hostview.node_view)."""
    return hostview.node_view(layout, nm, find_java_home()).command()


def running_daemons(layout: Layout) -> list[str]:
    return [d.name for d in daemons_of(layout) if daemons.running_pid(layout, d.name)]


def is_running(layout: Layout) -> bool:
    if layout.is_ha:
        return ha.is_running(layout, set(running_daemons(layout)),
                             [d.name for d in daemons_of(layout)])
    return len(running_daemons(layout)) == len(daemons_of(layout)) and (
        not secure.is_secure(layout) or kdc.is_running(layout))


def up(layout: Layout, echo: Echo = print, kerberos: bool = False,
       probe: bool = True) -> UpResult:
    """Start the cluster (with a KDC and Kerberos everywhere if ``kerberos``, secure.py).
    With ``probe``, as `tfyarn cluster up` has it, a probe application then proves that a
    container runs in each partition; a caller whose own jobs follow at once (the test
    suite's clusters) may leave that proof to them, some 20 s and two JVMs sooner."""
    releases.check_state_dir(layout.state_dir, layout.hadoop_version)
    if is_running(layout):
        if kerberos != secure.is_secure(layout):
            running = "with" if secure.is_secure(layout) else "without"
            raise ClusterError(f"The cluster in {layout.state_dir} is running {running} "
                               "Kerberos. Fix: `tfyarn cluster down` first, or give another "
                               "TFYARN_CLUSTER_DIR (and TFYARN_CLUSTER_PORT_OFFSET).")
        if layout.ha is not None and layout.ha != is_ha_started(layout):
            running = "with" if is_ha_started(layout) else "without"
            raise ClusterError(f"The cluster in {layout.state_dir} is running {running} HA. "
                               "Fix: `tfyarn cluster down` first, or give another "
                               "TFYARN_CLUSTER_DIR (and TFYARN_CLUSTER_PORT_OFFSET).")
        return UpResult(True, web_url(layout), 0.0)
    started_at = time.monotonic()
    java_home = find_java_home()
    ensure_hadoop_jars(layout, echo)
    localfs.ensure_compiled(layout, java_home)
    partly = running_daemons(layout)
    if partly:
        echo(f"Only {', '.join(partly)} of the cluster is running: restarting it whole.")
    down(layout)  # what a half-started earlier attempt left (one daemon alive, say) goes first
    if layout.nodes is not None:
        layout.state_dir.mkdir(parents=True, exist_ok=True)
        layout.nodes_file.write_text(f"{layout.nodes}\n")
    if layout.gpus is not None:
        layout.state_dir.mkdir(parents=True, exist_ok=True)
        layout.gpus_file.write_text(f"{layout.gpus}\n")
    if layout.ha is not None:
        layout.state_dir.mkdir(parents=True, exist_ok=True)
        layout.ha_file.write_text(f"{str(layout.ha).lower()}\n")
    releases.record(layout.state_dir, layout.hadoop_version)
    _check_ports_free(layout)
    secure.set_secure(layout, kerberos)  # before the configuration, which follows it
    write_configuration(layout)
    if layout.is_ha:
        ha.write_configuration(layout)
    write_launcher(layout, java_home)
    wrapper = node_wrapper(layout, echo)
    nms = daemons_of(layout, wrapper)[-len(layout.node_managers):]
    try:
        if kerberos:  # the daemons log in from their keytabs as they start
            secure.start_kdc(layout, java_home, echo)
        rms = (ha.start(layout, java_home, _wait) if layout.is_ha
               else _start_hdfs_and_rm(layout, java_home))
        _wait(layout, rms, "HDFS to leave safe mode with a live DataNode",
              lambda: hdfs.ready(layout))
        with secure.client_environ(layout):  # hdfs-native finds the user's tickets there
            hdfs.prepare_directories(layout)
        _wait(layout, rms, "the ResourceManager to start", lambda: _rm_started(layout))
        _ensure_gpu_label(layout)
        for nm in nms:
            daemons.start(layout, java_home, nm)
        _wait(layout, [*rms, *nms], "every NodeManager to register",
              lambda: _nodes_ready(layout))
        if probe:
            _run_probe(layout, [*rms, *nms], echo)
    except BaseException:
        down(layout)
        raise
    return UpResult(False, web_url(layout), time.monotonic() - started_at)


def _start_hdfs_and_rm(layout: Layout, java_home: Path) -> list[Daemon]:
    """The non-HA cluster's NameNode, DataNode and ResourceManager; returns [the RM]."""
    namenode, datanode, rm = daemons_of(layout)[:3]
    hdfs.format_once(layout, java_home)
    for daemon in (namenode, datanode, rm):
        daemons.start(layout, java_home, daemon)
    _wait(layout, [namenode, datanode], "HDFS to leave safe mode with a live DataNode",
          lambda: hdfs.ready(layout))
    return [rm]


def is_ha_started(layout: Layout) -> bool:
    """Whether the cluster was started with --ha (the state dir remembers)."""
    return Layout(layout.state_dir, port_offset=layout.port_offset).is_ha


def web_url(layout: Layout) -> str:
    """The ResourceManager's web address: the active one's on an HA cluster."""
    return ha.active_rm_url(layout) if layout.is_ha else layout.webapp_url


def failover(layout: Layout, which: str) -> tuple[str, str]:
    """`tfyarn cluster failover rm|nn`: (was active, now active)."""
    if not layout.is_ha:
        raise ClusterError(f"The cluster in {layout.state_dir} has one ResourceManager and "
                           "one NameNode: nothing to fail over to. Fix: `tfyarn cluster down`, "
                           "then `tfyarn cluster up --ha`.")
    if which == "nn":
        return ha.failover_namenode(layout)
    return ha.failover_rm(layout, find_java_home(), _wait)


def node_wrapper(layout: Layout, echo: Echo) -> tuple[str, ...]:
    """How each NodeManager gets a host view of its own; () where the kernel refuses."""
    prefix = hostview.unshare_prefix()
    shared_marker = layout.state_dir / "hosts-share-files"
    if prefix is None:
        shared_marker.write_text("mount namespaces refused\n")
        echo("WARNING: this machine refuses mount namespaces, so every NodeManager sees the "
             "machine's files (/tmp, HOME, the other nodes' dirs, ...). A job that wrongly "
             "relies on files shared between hosts will work here and fail on a real "
             "cluster; only HDFS is shared there.")
        return ()
    shared_marker.unlink(missing_ok=True)
    return tuple(prefix)


def down(layout: Layout) -> list[str]:
    """Stop what `up` started, the NodeManagers first (together: each may wait 15 s for its
    applications), then the others in turn; logs and state stay. Safe to repeat."""
    node_managers = [nm.name for nm in layout.node_managers]
    stopped = daemons.stop_together(layout, node_managers)
    stopped += [d.name for d in reversed(daemons_of(layout))
                if d.name not in node_managers and daemons.stop(layout, d.name)]
    if kdc.stop(layout):
        stopped.append(kdc.KDC_NAME)
    daemons.kill_leftover_containers(layout)
    _remove_set_aside_caches(layout)
    return stopped


def _remove_set_aside_caches(layout: Layout) -> None:
    """A starting NodeManager renames its old caches to ``*_DEL_<time>`` and deletes them in
    the background; stopped before it finishes, it leaves them (GBs of envs each restart)."""
    for nm in layout.node_managers:
        for aside in (layout.node_dir(nm) / "local").glob("*_DEL_*"):
            shutil.rmtree(aside, ignore_errors=True)


LAUNCHERS = ("yarn", "hadoop", "hdfs")  # bin/<name>: the same script, dispatching on its name


def write_launcher(layout: Layout, java_home: Path) -> Path:
    """Write bin/yarn and bin/hadoop from launcher.sh; returns bin/yarn.

    Each is replaced atomically and only when its text changed, so a launcher that is
    running meanwhile (bash reads its script as it goes) is never cut short.
    """
    layout.bin_dir.mkdir(parents=True, exist_ok=True)
    template = resources.files("tfyarn.localyarn").joinpath("launcher.sh").read_text()
    script = (
        template.replace("@JAVA_HOME@", str(java_home))
        .replace("@CONF_DIR@", str(layout.conf_dir))
        .replace("@LIB_DIR@", str(layout.lib_dir))
        .replace("@STATE_DIR@", str(layout.state_dir))
        .replace("@JDK17_OPTIONS@", " ".join(daemons.JDK17_OPTIONS))
    )
    for name in LAUNCHERS:
        launcher = layout.bin_dir / name
        if launcher.is_file() and launcher.read_text() == script:
            continue
        temporary = launcher.with_name(f".{name}.{os.getpid()}.tmp")
        temporary.write_text(script)
        temporary.chmod(0o755)
        os.replace(temporary, launcher)
    return layout.bin_dir / "yarn"


def env_lines(layout: Layout) -> list[str]:
    """Shell lines that point `yarn` and skein at this cluster."""
    java_home = find_java_home()
    releases.check_state_dir(layout.state_dir, layout.hadoop_version)  # the launchers' jars
    if (layout.bin_dir / "yarn").is_file():
        # A cluster started by an older tfyarn gets the launchers added since (bin/hadoop).
        write_launcher(layout, java_home)
    return [
        f"export HADOOP_CONF_DIR={shlex.quote(str(layout.conf_dir))}",
        f"export JAVA_HOME={shlex.quote(str(java_home))}",
        f'export PATH={shlex.quote(str(layout.bin_dir))}:"$PATH"',
        # skein's driver talks gRPC on loopback; a proxy must not intercept it.
        'export no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"',
        'export NO_PROXY="$no_proxy"',
        *secure.env_lines(layout),  # the KDC's krb5.conf and the user's ticket cache
    ]


def client_environment(layout: Layout) -> dict[str, str]:
    """os.environ as `eval "$(tfyarn cluster env)"` would leave it (for tests and scripts)."""
    out = subprocess.run(
        ["bash", "-c", "\n".join([*env_lines(layout), "env -0"])],
        capture_output=True, check=True,
    ).stdout
    pairs = (item.split(b"=", 1) for item in out.split(b"\0") if b"=" in item)
    return {key.decode(): value.decode() for key, value in pairs}


# ---------------------------------------------------------------- status

def rest(layout: Layout, path: str, timeout: float = 5.0) -> dict:
    response = secure.web_get(layout, f"{web_url(layout)}/ws/v1/cluster/{path}",
                              timeout=timeout, headers={"Accept": "application/json"})
    response.raise_for_status()
    return response.json()


def nodes(layout: Layout) -> list[dict]:
    return (rest(layout, "nodes").get("nodes") or {}).get("node") or []


def running_apps(layout: Layout) -> list[dict]:
    return (rest(layout, "apps?states=NEW,SUBMITTED,ACCEPTED,RUNNING").get("apps") or {}).get(
        "app"
    ) or []


def node_gpus(node: dict) -> tuple[int, int]:
    """(used, total) yarn.io/gpu of one node from the RM's REST answer."""
    total = used = 0
    for info in (node.get("totalResource") or {}).get("resourceInformations", {}).get(
        "resourceInformation", []
    ):
        if info.get("name") == "yarn.io/gpu":
            total = int(info.get("value", 0))
    for info in (node.get("usedResource") or {}).get("resourceInformations", {}).get(
        "resourceInformation", []
    ):
        if info.get("name") == "yarn.io/gpu":
            used = int(info.get("value", 0))
    return used, total


def status_lines(layout: Layout, lost_hosts: Sequence[str] = ()) -> list[str]:
    """`tfyarn cluster status`; ``lost_hosts`` as hosts.lost_hosts lists them."""
    lines = [f"ResourceManager: {web_url(layout)} (Hadoop {layout.hadoop_version}, state dir "
             f"{layout.state_dir})",
             *([ha_line(layout)] if layout.is_ha else []), hdfs.status_line(layout), "Nodes:"]
    for node in nodes(layout):
        used_gpus, total_gpus = node_gpus(node)
        labels = ",".join(node.get("nodeLabels") or []) or "<default partition>"
        lines.append(
            f"  {node['id']:<18} {node['state']:<9} label={labels:<20} "
            f"memory {node.get('usedMemoryMB', 0)}/"
            f"{node.get('usedMemoryMB', 0) + node.get('availMemoryMB', 0)} MB  "
            f"vcores {node.get('usedVirtualCores', 0)}/"
            f"{node.get('usedVirtualCores', 0) + node.get('availableVirtualCores', 0)}  "
            f"gpus {used_gpus}/{total_gpus}  containers {node.get('numContainers', 0)}"
        )
    if lost_hosts:
        lines.append(f"Lost hosts (tfyarn cluster regain-host brings them back): "
                     f"{', '.join(lost_hosts)}")
    if (layout.state_dir / "hosts-share-files").exists():
        lines.append("WARNING: the NodeManagers share the machine's files (no mount namespaces "
                     "here)")
    labels = [f"{label['name']}(exclusive={str(label.get('exclusivity', True)).lower()})"
              for label in _cluster_labels(layout)]
    lines.append(f"Node labels: {', '.join(labels) or 'none'}")
    apps = running_apps(layout)
    lines.append(f"Running applications: {len(apps)}")
    lines += [f"  {app['id']}  {app['state']:<9} {app['name']}  ({app['user']})" for app in apps]
    return lines


def status_document(layout: Layout, lost_hosts: Sequence[str] = ()) -> dict:
    """`tfyarn cluster status --json`: what status_lines says, as data."""
    def used_total(node: dict, used: str, avail: str) -> dict:
        return {"used": node.get(used, 0), "total": node.get(used, 0) + node.get(avail, 0)}

    found = []
    for node in nodes(layout):
        used_gpus, total_gpus = node_gpus(node)
        found.append({
            "id": node["id"], "state": node["state"], "labels": node.get("nodeLabels") or [],
            "memory_mb": used_total(node, "usedMemoryMB", "availMemoryMB"),
            "vcores": used_total(node, "usedVirtualCores", "availableVirtualCores"),
            "gpus": {"used": used_gpus, "total": total_gpus},
            "containers": node.get("numContainers", 0)})
    return {
        "running": True, "state_dir": str(layout.state_dir), "hadoop": layout.hadoop_version,
        "resourcemanager": web_url(layout), "hdfs": hdfs.status_line(layout),
        **({"ha": ha.pair_states(layout)} if layout.is_ha else {}),
        "nodes": found, "lost_hosts": list(lost_hosts),
        "hosts_share_files": (layout.state_dir / "hosts-share-files").exists(),
        "node_labels": [{"name": label["name"],
                         "exclusive": str(label.get("exclusivity", True)).lower() == "true"}
                        for label in _cluster_labels(layout)],
        "running_applications": [{key: app.get(key) for key in ("id", "state", "name", "user")}
                                 for app in running_apps(layout)],
    }


# ---------------------------------------------------------------- start-up steps

def _check_ports_free(layout: Layout) -> None:
    wanted = {f"ResourceManager {key}": ("127.0.0.1", port) for key, port in RM_PORTS.items()}
    wanted.update({f"HDFS {what}": ("127.0.0.1", port) for what, port in HDFS_PORTS.items()})
    wanted.update({what: ("127.0.0.1", port) for what, port in hasite.ports(layout).items()})
    for nm in layout.node_managers:
        wanted.update({
            f"NodeManager {nm.name} RPC": (nm.host, nm.rpc_port),
            f"NodeManager {nm.name} localizer": (nm.host, nm.localizer_port),
            f"NodeManager {nm.name} web UI": (nm.host, nm.webapp_port),
            f"NodeManager {nm.name} collector": (nm.host, nm.collector_port),
        })
    busy = [f"{host}:{layout.port(port)} ({what})" for what, (host, port) in wanted.items()
            if _port_in_use(host, layout.port(port))]
    if busy:
        raise ClusterError(
            f"Port(s) in use: {', '.join(busy)}. The local cluster needs them. "
            "Fix: stop whatever listens there (`ss -ltnp` shows it), or if it is another "
            "tfyarn cluster, run `tfyarn cluster down` with its TFYARN_CLUSTER_DIR."
        )


def _port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _wait(layout: Layout, watched: list[Daemon], what: str, ready: Callable[[], bool]) -> None:
    """Wait until ``ready()``; a watched daemon dying fails at once with its last log lines."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        for daemon in watched:
            if daemons.running_pid(layout, daemon.name) is None:
                raise ClusterError(
                    f"The {daemon.name} daemon died while waiting for {what}.\n"
                    f"{daemons.log_tail(layout, daemon.name)}\n"
                    f"Fix: see the log above; all logs are in {layout.log_dir}."
                )
        try:
            if ready():
                return
        except spnego.SpnegoError:
            raise  # no ticket: waiting will not bring one
        except requests.RequestException:
            pass  # the web server is not up yet
        if time.monotonic() > deadline:
            tails = "\n".join(daemons.log_tail(layout, d.name) for d in watched)
            raise ClusterError(
                f"Timed out after {START_TIMEOUT_S:.0f} s waiting for {what}.\n{tails}\n"
                f"Fix: see the logs in {layout.log_dir}."
            )
        time.sleep(0.2)


def _run_probe(layout: Layout, watched: list[Daemon], echo: Echo) -> None:
    """Run one container in each partition through skein, as a job would (probe.py)."""
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "tfyarn.localyarn.probe"],
                                env=client_environment(layout), capture_output=True, text=True,
                                timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        result = subprocess.CompletedProcess(exc.cmd, 1, "", f"no answer in {exc.timeout:.0f} s")
    if result.returncode != 0:
        tails = "\n".join(daemons.log_tail(layout, d.name) for d in watched)
        raise ClusterError(
            "The daemons started, but a probe application could not run a container in "
            f"each partition:\n{result.stderr.strip()[-3000:]}\n{tails}\n"
            f"Fix: see the logs in {layout.log_dir}."
        )
    echo(f"Probe application {result.stdout.strip()} ran a container in each partition "
         f"({time.monotonic() - started:.1f} s).")


def _rm_started(layout: Layout) -> bool:
    return rest(layout, "info", timeout=2)["clusterInfo"]["state"] == "STARTED"


def ha_line(layout: Layout) -> str:
    """Which of each pair is active: "HA: rm1 ACTIVE, rm2 STANDBY, nn1 active, ..."."""
    states = ha.pair_states(layout)
    return "HA: " + ", ".join(f"{name} {state}" for name, state in states.items())


def _cluster_labels(layout: Layout) -> list[dict]:
    found = rest(layout, "get-node-labels").get("nodeLabelInfo") or []
    return [found] if isinstance(found, dict) else found


def _ensure_gpu_label(layout: Layout) -> None:
    """The label store persists in the state dir, so this runs only on the first `up`."""
    if any(label["name"] == GPU_LABEL for label in _cluster_labels(layout)):
        return
    yarn = str(layout.bin_dir / "yarn")
    for args in (["-addToClusterNodeLabels", f"{GPU_LABEL}(exclusive=true)"], ["-refreshQueues"]):
        result = subprocess.run([yarn, "rmadmin", *args], capture_output=True, text=True,
                                env=client_environment(layout))
        if result.returncode != 0:
            raise ClusterError(
                f"`yarn rmadmin {' '.join(args)}` failed:\n{result.stderr.strip()[-2000:]}\n"
                f"Fix: see {layout.daemon_log('rm')}."
            )


def _nodes_ready(layout: Layout) -> bool:
    """Every NM RUNNING, the gpu NM in its partition with its GPUs, free room on each."""
    by_id = {node["id"]: node for node in nodes(layout)}
    for spec in layout.node_managers:
        node = by_id.get(f"{spec.host}:{layout.port(spec.rpc_port)}")
        if node is None or node["state"] != "RUNNING" or node.get("availMemoryMB", 0) <= 0:
            return False
        if (node.get("nodeLabels") or []) != ([spec.partition] if spec.partition else []):
            return False
        if node_gpus(node)[1] != spec.gpus:
            return False
    return True


