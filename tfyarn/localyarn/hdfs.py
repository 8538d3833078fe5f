"""The local cluster's HDFS: one NameNode and one DataNode, the storage every host shares."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import requests

from tfyarn.localyarn import daemons, ha, secure
from tfyarn.localyarn.daemons import DATANODE_CLASS, NAMENODE_CLASS, Daemon
from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.provision import ClusterError
from tfyarn.localyarn.siteconf import APP_LOG_DIR

SHARED_LAYERS_DIR = "/tfyarn/layers"  # made as /tmp is: every user writes, nobody replaces
NAMENODE_HEAP_MB = 128
DATANODE_HEAP_MB = 96


def daemons_of(layout: Layout) -> list[Daemon]:
    return [Daemon("namenode", NAMENODE_CLASS, layout.conf_dir, NAMENODE_HEAP_MB),
            Daemon("datanode", DATANODE_CLASS, layout.conf_dir, DATANODE_HEAP_MB)]


def format_once(layout: Layout, java_home: Path) -> None:
    """Format the NameNode's metadata the first time; later `up`s keep HDFS's content."""
    if (layout.hdfs_dir / "name" / "current" / "VERSION").is_file():
        return
    formatter = Daemon("namenode-format", NAMENODE_CLASS, layout.conf_dir, NAMENODE_HEAP_MB,
                       args=("-format", "-nonInteractive", "-force"))
    result = daemons.run_tool(layout, java_home, formatter)
    if result.returncode != 0:
        raise ClusterError(f"Formatting the NameNode failed:\n{result.stderr[-2000:]}\n"
                           f"Fix: see {layout.daemon_log('namenode-format')}.")


def _bean(layout: Layout, name: str) -> dict:
    response = secure.web_get(layout, f"{web_url(layout)}/jmx",
                              params={"qry": f"Hadoop:service=NameNode,name={name}"}, timeout=2)
    response.raise_for_status()
    beans = response.json().get("beans") or [{}]
    return beans[0]


def web_url(layout: Layout) -> str:
    """The NameNode's web address: the active one's on an HA cluster."""
    return ha.active_nn_url(layout) if layout.is_ha else layout.namenode_web_url


def ready(layout: Layout) -> bool:
    """Out of safe mode with at least one live DataNode: files can be written."""
    info = _bean(layout, "NameNodeInfo")
    state = _bean(layout, "FSNamesystemState")
    return not info.get("Safemode") and state.get("NumLiveDataNodes", 0) >= 1


def client(layout: Layout):
    from hdfs_native import Client

    if layout.is_ha:  # the nameservice's NameNodes are in the cluster's configuration
        return Client(layout.default_fs, config_dir=str(layout.conf_dir))
    return Client(layout.default_fs)


def prepare_directories(layout: Layout) -> None:
    """What a Hadoop cluster's administrators set up: the user's home, /tmp, the log dir,
    and a directory where every user's environment layers go (site.global.python.layers.dir;
    used only by jobs that name it)."""
    fs = client(layout)
    user = getpass.getuser()
    for path, mode in ((f"/user/{user}", 0o755), ("/tmp", 0o1777), (APP_LOG_DIR, 0o1777),
                       (os.path.dirname(SHARED_LAYERS_DIR), 0o755), (SHARED_LAYERS_DIR, 0o1777)):
        fs.mkdirs(path, permission=mode, create_parent=True)
        fs.set_permission(path, mode)


def status_line(layout: Layout) -> str:
    try:
        state = _bean(layout, "FSNamesystemState")
        info = _bean(layout, "NameNodeInfo")
    except (requests.RequestException, ValueError) as exc:
        return f"HDFS: {layout.default_fs} not answering ({exc.__class__.__name__})"
    used_mb = int(state.get("CapacityUsed", 0)) // 2**20
    free_mb = int(state.get("CapacityRemaining", 0)) // 2**20
    mode = "SAFE MODE" if info.get("Safemode") else state.get("FSState", "?")
    return (f"HDFS: {layout.default_fs} {mode}, {state.get('NumLiveDataNodes', 0)} live / "
            f"{state.get('NumDeadDataNodes', 0)} dead DataNode(s), {state.get('FilesTotal', 0)} "
            f"files, {used_mb} MB used, {free_mb} MB free (web {web_url(layout)})")
