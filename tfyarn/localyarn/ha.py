"""The HA local cluster's daemons (`tfyarn cluster up --ha`): ZooKeeper, a JournalNode, two
NameNodes and two ResourceManagers; which of each pair is active, and failing over."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import requests

from tfyarn.localyarn import daemons, hasite, secure, siteconf
from tfyarn.localyarn.daemons import DATANODE_CLASS, NAMENODE_CLASS, RM_CLASS, Daemon
from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.provision import ClusterError, find_java_home

ZOOKEEPER_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
JOURNALNODE_CLASS = "org.apache.hadoop.hdfs.qjournal.server.JournalNode"
ZOOKEEPER_HEAP_MB = 64
JOURNALNODE_HEAP_MB = 64
NAMENODE_HEAP_MB = 128
DATANODE_HEAP_MB = 96
RM_HEAP_MB = 320
FAILOVER_TIMEOUT_S = 90.0
ANSWER_TIMEOUT_S = 2.0

# Waits until a probe answers true, failing with the watched daemons' logs (cluster._wait).
Wait = Callable[[Layout, list[Daemon], str, Callable[[], bool]], None]


def daemon_conf_dir(layout: Layout, daemon: str) -> Path:
    """rm1's, nn2's, ...: the client's configuration plus the daemon's own id."""
    return layout.state_dir / daemon / "conf"


def storage_daemons(layout: Layout) -> list[Daemon]:
    """In start order: ZooKeeper, the JournalNode, the NameNodes, the DataNode."""
    conf = layout.conf_dir
    return [
        Daemon("zookeeper", ZOOKEEPER_CLASS, conf, ZOOKEEPER_HEAP_MB,
               args=(str(zookeeper_cfg(layout)),)),
        Daemon("journalnode", JOURNALNODE_CLASS, conf, JOURNALNODE_HEAP_MB),
        *(Daemon(nn, NAMENODE_CLASS, daemon_conf_dir(layout, nn), NAMENODE_HEAP_MB)
          for nn in hasite.NN_IDS),
        Daemon("datanode", DATANODE_CLASS, conf, DATANODE_HEAP_MB),
    ]


def resource_managers(layout: Layout) -> list[Daemon]:
    return [Daemon(rm, RM_CLASS, daemon_conf_dir(layout, rm), RM_HEAP_MB) for rm in hasite.RM_IDS]


def zookeeper_cfg(layout: Layout) -> Path:
    return layout.conf_dir / "zoo.cfg"


def write_configuration(layout: Layout) -> None:
    """zoo.cfg, and each RM's and NameNode's own configuration dir (after siteconf's)."""
    zookeeper_cfg(layout).write_text(hasite.zookeeper_conf(layout))
    # The JournalNode refuses to start without its web app (Maven's jar has none).
    web_xml = layout.webapps_dir / "webapps" / "journal" / "WEB-INF" / "web.xml"
    web_xml.parent.mkdir(parents=True, exist_ok=True)
    web_xml.write_text("<web-app/>\n")
    for daemon in (*hasite.RM_IDS, *hasite.NN_IDS):
        conf = daemon_conf_dir(layout, daemon)
        shutil.copytree(layout.conf_dir, conf, dirs_exist_ok=True)
        own = hasite.own_id_site(layout, daemon)
        (conf / "yarn-site.xml").write_text(
            siteconf.xml_document({**siteconf.yarn_site(layout), **own}))
        (conf / "hdfs-site.xml").write_text(
            siteconf.xml_document({**siteconf.hdfs_site(layout), **own}))


def start(layout: Layout, java_home: Path, wait: Wait) -> list[Daemon]:
    """Start everything but the NodeManagers: HDFS with nn1 active, then both RMs, one of
    them elected active. Returns the RMs (the NodeManagers' start watches them)."""
    zookeeper, journalnode, nn1, nn2, datanode = storage_daemons(layout)
    for daemon in (zookeeper, journalnode):
        daemons.start(layout, java_home, daemon)
    wait(layout, [zookeeper, journalnode], "ZooKeeper and the JournalNode to listen",
         lambda: _listening(layout, hasite.ZOOKEEPER_PORT)
         and _listening(layout, hasite.JOURNALNODE_PORTS["rpc"]))
    _run_once(layout, java_home, nn1.name, ("-format", "-nonInteractive", "-force"))
    daemons.start(layout, java_home, nn1)
    wait(layout, [nn1], "the first NameNode to answer", lambda: nn_state(layout, nn1.name) != "")
    # The second NameNode starts from a copy of the first one's metadata.
    _run_once(layout, java_home, nn2.name, ("-bootstrapStandby", "-nonInteractive", "-force"))
    for daemon in (nn2, datanode):
        daemons.start(layout, java_home, daemon)
    wait(layout, [nn1, nn2], "the second NameNode to answer",
         lambda: nn_state(layout, nn2.name) != "")
    if active_namenode(layout) is None:  # both start standby: manual failover chooses
        haadmin(layout, "-transitionToActive", nn1.name)
    rms = resource_managers(layout)
    for rm in rms:
        daemons.start(layout, java_home, rm)
    wait(layout, rms, "a ResourceManager to be elected active",
         lambda: active_rm(layout) is not None)
    return rms


def _run_once(layout: Layout, java_home: Path, nn: str, args: tuple[str, ...]) -> None:
    """Format nn1 (and the journal) or copy nn1's metadata to nn2, the first time only."""
    if (layout.hdfs_dir / nn / "current" / "VERSION").is_file():
        return
    tool = Daemon(f"{nn}-format", NAMENODE_CLASS, daemon_conf_dir(layout, nn),
                  NAMENODE_HEAP_MB, args=args)
    result = daemons.run_tool(layout, java_home, tool)
    if result.returncode != 0:
        raise ClusterError(f"NameNode {nn} {' '.join(args)} failed:\n{result.stderr[-2000:]}\n"
                           f"Fix: see {layout.daemon_log(tool.name)}.")


def _listening(layout: Layout, base_port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(ANSWER_TIMEOUT_S)
        return sock.connect_ex(("127.0.0.1", layout.port(base_port))) == 0


# ---------------------------------------------------------------- which one is active

def _web_get(layout: Layout, url: str, **options: object) -> requests.Response:
    """GET from a daemon's web server; with the user's tickets (SPNEGO) on a secure cluster
    only, as that swaps os.environ for the call and others' threads may read it."""
    if secure.is_secure(layout):
        return secure.web_get(layout, url, **options)
    return requests.get(url, **options)  # type: ignore[arg-type]


def rm_state(layout: Layout, rm: str) -> str:
    """ACTIVE, STANDBY, ... as the RM says (its info resource answers on a standby too);
    "" where it does not answer."""
    try:
        response = _web_get(layout, f"{hasite.rm_web_url(layout, rm)}/ws/v1/cluster/info",
                                headers={"Accept": "application/json"},
                                timeout=ANSWER_TIMEOUT_S, allow_redirects=False)
        return response.json()["clusterInfo"].get("haState", "") if response.ok else ""
    except (requests.RequestException, ValueError, KeyError):
        return ""


def nn_state(layout: Layout, nn: str) -> str:
    """active, standby, ... as the NameNode says; "" where it does not answer."""
    try:
        response = _web_get(layout, f"{hasite.nn_web_url(layout, nn)}/jmx",
                                params={"qry": "Hadoop:service=NameNode,name=NameNodeStatus"},
                                timeout=ANSWER_TIMEOUT_S)
        beans = (response.json().get("beans") or [{}]) if response.ok else [{}]
        return str(beans[0].get("State", ""))
    except (requests.RequestException, ValueError):
        return ""


def active_rm(layout: Layout) -> str | None:
    return next((rm for rm in hasite.RM_IDS if rm_state(layout, rm) == "ACTIVE"), None)


def active_namenode(layout: Layout) -> str | None:
    return next((nn for nn in hasite.NN_IDS if nn_state(layout, nn) == "active"), None)


def active_rm_url(layout: Layout) -> str:
    """The active RM's web address (rm1's while none is: its answer says why)."""
    return hasite.rm_web_url(layout, active_rm(layout) or hasite.RM_IDS[0])


def active_nn_url(layout: Layout) -> str:
    return hasite.nn_web_url(layout, active_namenode(layout) or hasite.NN_IDS[0])


def pair_states(layout: Layout) -> dict[str, str]:
    """Every RM's and NameNode's state ("down" where it does not answer)."""
    return {**{rm: rm_state(layout, rm) or "down" for rm in hasite.RM_IDS},
            **{nn: nn_state(layout, nn) or "down" for nn in hasite.NN_IDS}}


def is_running(layout: Layout, running: set[str], every: list[str]) -> bool:
    """Every daemon but the pairs' running, and one of each pair: a failover's survivor
    alone is a running cluster."""
    pairs = {*hasite.RM_IDS, *hasite.NN_IDS}
    return all(name in running for name in every if name not in pairs) and all(
        any(name in running for name in pair) for pair in (hasite.RM_IDS, hasite.NN_IDS))


# ---------------------------------------------------------------- failover

def haadmin(layout: Layout, *args: str) -> str:
    """`hdfs haadmin ARGS` (DFSHAAdmin) against this cluster; its output."""
    env = {**daemons.daemon_environment(layout, find_java_home()), "HADOOP_CONF_DIR":
           str(layout.conf_dir)}
    if secure.is_secure(layout):  # the user's tickets: an HDFS superuser's
        env.update(secure.client_env(layout))
    result = subprocess.run([str(layout.bin_dir / "hdfs"), "haadmin", *args],
                            capture_output=True, text=True, env=env, timeout=120)
    if result.returncode != 0:
        raise ClusterError(f"`hdfs haadmin {' '.join(args)}` failed:\n"
                           f"{(result.stderr or result.stdout).strip()[-2000:]}")
    return result.stdout


def _other(pair: tuple[str, str], one: str) -> str:
    return pair[1] if one == pair[0] else pair[0]


def _failover_pair(daemon: str, pair: tuple[str, str], active: str | None,
                   state: Callable[[str], object]) -> tuple[str, str]:
    """(the active one, the one to take over), or why a failover cannot start."""
    if active is None:
        raise ClusterError(f"No {daemon} is active, so there is nothing to fail over from. "
                           "Fix: `tfyarn cluster status` shows their states; "
                           "`tfyarn cluster up` restarts what is down.")
    other = _other(pair, active)
    if not state(other):
        raise ClusterError(f"{daemon} {other} does not answer, so it cannot take over. "
                           "Fix: `tfyarn cluster up` restarts what is down.")
    return active, other


def failover_namenode(layout: Layout) -> tuple[str, str]:
    """Make the standby NameNode active (graceful: the active one steps down first).
    Returns (was active, now active)."""
    was, now = _failover_pair("NameNode", hasite.NN_IDS, active_namenode(layout),
                              lambda other: nn_state(layout, other))
    haadmin(layout, "-failover", was, now)
    return was, now


def failover_rm(layout: Layout, java_home: Path, wait: Wait) -> tuple[str, str]:
    """Stop the active RM; the standby is elected within seconds (automatic failover, as
    production runs it); then restart the old one, which joins as the standby.
    Returns (was active, now active)."""
    was, now = _failover_pair("ResourceManager", hasite.RM_IDS, active_rm(layout),
                              lambda other: rm_state(layout, other))
    old, new = (next(d for d in resource_managers(layout) if d.name == name)
                for name in (was, now))
    daemons.stop(layout, was)
    deadline = time.monotonic() + FAILOVER_TIMEOUT_S
    while rm_state(layout, now) != "ACTIVE":
        if time.monotonic() > deadline:
            raise ClusterError(f"ResourceManager {now} was not elected active within "
                               f"{FAILOVER_TIMEOUT_S:.0f} s.\n{daemons.log_tail(layout, now)}")
        time.sleep(0.2)
    daemons.start(layout, java_home, old)
    wait(layout, [old, new], f"ResourceManager {was} to rejoin as the standby",
         lambda: rm_state(layout, was) == "STANDBY")
    return was, now
