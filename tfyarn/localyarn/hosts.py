"""Lose a host of the local cluster and get it back, for tests and demonstrations.

A host is a NodeManager and every process in its mount namespace (its containers, their
tasks). Losing it the hard way kills them all at once, as a power loss does: no process
says goodbye. `--freeze` stops them instead (SIGSTOP), as a host cut off from the network
looks to everyone else; getting it back then resumes them, and whatever still runs of the
old tasks meets a job that has moved on without it.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tfyarn.localyarn import daemons, localfs
from tfyarn.localyarn.cluster import daemons_of, node_wrapper
from tfyarn.localyarn.layout import Layout, NodeManagerSpec
from tfyarn.localyarn.proctable import scan_processes
from tfyarn.localyarn.provision import ClusterError, find_java_home


def node(layout: Layout, name: str) -> NodeManagerSpec:
    for nm in layout.node_managers:
        if name in (nm.name, nm.host):
            return nm
    names = ", ".join(f"{nm.name} ({nm.host})" for nm in layout.node_managers)
    raise ClusterError(f"No NodeManager {name!r} in this cluster.", hint=f"name one of {names}.")


def lost_marker(layout: Layout, nm: NodeManagerSpec) -> Path:
    return layout.run_dir / f"{nm.name}.lost"


def host_processes(layout: Layout, nm: NodeManagerSpec) -> list[int]:
    """The NodeManager and every process sharing its mount namespace (its host's view), or,
    where there are no namespaces, running in its directories."""
    pid = daemons.running_pid(layout, nm.name)
    if pid is None:
        return []
    namespace = _mount_namespace(pid)
    own_view = namespace is not None and namespace != _mount_namespace(os.getpid())
    node_dir = f"{layout.node_dir(nm)}/"
    found = [pid]
    for proc in scan_processes():
        if proc.pid in (pid, os.getpid()):
            continue
        if (_mount_namespace(proc.pid) == namespace) if own_view else \
                proc.cwd.startswith(node_dir):
            found.append(proc.pid)
    return found


def lose(layout: Layout, name: str, freeze: bool = False) -> list[int]:
    """Kill (or freeze) the host's every process at once; returns their pids."""
    nm = node(layout, name)
    if lost_marker(layout, nm).exists():
        raise ClusterError(f"{nm.name} ({nm.host}) is already lost.",
                           hint=f"`tfyarn cluster regain-host {nm.name}` first.")
    pids = host_processes(layout, nm)
    if not pids:
        raise ClusterError(f"{nm.name} ({nm.host}) is not running.", hint="`tfyarn cluster up`.")
    for pid in pids:
        daemons.send_signal(pid, signal.SIGSTOP if freeze else signal.SIGKILL)
    lost_marker(layout, nm).write_text(json.dumps({"frozen": freeze, "pids": pids}))
    return pids


def regain(layout: Layout, name: str) -> str:
    """Thaw a frozen host, or start a killed host's NodeManager again (it re-registers)."""
    nm = node(layout, name)
    marker = lost_marker(layout, nm)
    if not marker.exists():
        raise ClusterError(f"{nm.name} ({nm.host}) is not lost.")
    state = json.loads(marker.read_text())
    if state["frozen"]:
        for pid in state["pids"]:
            daemons.send_signal(pid, signal.SIGCONT)
        how = f"thawed {len(state['pids'])} process(es)"
    else:
        daemon = next(d for d in daemons_of(layout, node_wrapper(layout, print))
                      if d.name == nm.name)
        java_home = find_java_home()
        localfs.ensure_compiled(layout, java_home)  # its classpath names the class's dir
        daemons.start(layout, java_home, daemon)
        how = "its NodeManager started again"
    marker.unlink()
    return how


def lost_hosts(layout: Layout) -> list[str]:
    return [f"{nm.name} ({nm.host}, {'frozen' if json.loads(m.read_text())['frozen'] else 'down'})"
            for nm in layout.node_managers if (m := lost_marker(layout, nm)).exists()]


def _mount_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None
