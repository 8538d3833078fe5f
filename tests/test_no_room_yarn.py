"""Issue 37's bad input on the real local YARN: a node whose disk cannot hold the job's env.

The gpu node's local dirs (yarn.nodemanager.local-dirs) get a 16 MB disk of their own for
the test: a tmpfs mounted in that NodeManager's own mount namespace over its `local`, where
YARN unpacks what a container names and keeps its caches. The node's NodeManager finds the
env's layers it held gone and localizes them again, which cannot fit: YARN fails the worker's
container before it runs, and the job ends with what the user reads naming the node, YARN's
own words and the fix (appmaster/model/verdicts.py). The other nodes, whose disks have room, run
their tasks as always; nothing is left running.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from jobtools import prepare_light_job, wait_for
from test_faults_yarn import Job, assert_failed, submitting

from tfyarn.localyarn import cluster, daemons

pytestmark = pytest.mark.yarn

SMALL_DISK = "16m"  # the suite's env unpacks to over a GB


@pytest.fixture
def submit(yarn_cluster, skein_client) -> Iterator[Callable[..., Job]]:
    with submitting(yarn_cluster, skein_client) as submit_job:
        yield submit_job


# Run by the node's system Python inside its NodeManager's namespaces (nothing of the
# client's is visible there), with the kernel's calls, not mount(8): as root, or as the user
# whose user namespace the cluster's nodes run in (tfyarn/localyarn/hostview.py).
ON_NODE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def check(result, what):
    if result != 0:
        sys.exit(f"{what}: {os.strerror(ctypes.get_errno())}")
local = sys.argv[2]
if sys.argv[1] == "mount":
    check(libc.mount(b"tfyarn-small-disk", local.encode(), b"tmpfs", 0,
                     f"size={sys.argv[3]},mode=0755".encode()), "mount")
    # what a NodeManager makes in a local dir as it starts, as on a node with this disk
    # from the beginning: YARN then meets the lack of room, not a missing directory
    for name, mode in (("filecache", 0o755), ("usercache", 0o755), ("nmPrivate", 0o700)):
        os.mkdir(os.path.join(local, name), mode)
else:
    check(libc.umount2(local.encode(), 2), "umount")  # 2: MNT_DETACH
"""


@contextlib.contextmanager
def small_local_disk(layout, nm) -> Iterator[Path]:
    """``nm``'s local dirs on a disk of SMALL_DISK for the duration, seen by its NodeManager
    alone (each node's view is a mount namespace of its own)."""
    pid = daemons.running_pid(layout, nm.name)
    assert pid, f"{nm.name} is not running"
    local = layout.node_dir(nm) / "local"
    user = [] if os.geteuid() == 0 else ["--user", "--preserve-credentials"]
    on_node = ["nsenter", "--target", str(pid), "--mount", *user, "/usr/bin/python3", "-c",
               ON_NODE]
    subprocess.run([*on_node, "mount", str(local), SMALL_DISK], check=True, timeout=30)
    try:
        yield local
    finally:
        # The NodeManager's files for the failed container go with the tmpfs; its caches
        # below are as they were before the test.
        subprocess.run([*on_node, "umount", str(local)], check=True, timeout=30)
        # Where YARN's disk checker ran while the disk was full, the node is UNHEALTHY
        # until its next check: the next test must find it healthy.
        wait_for(f"{nm.name} healthy again", lambda: healthy(layout, nm), 90)


def healthy(layout, nm) -> bool:
    nodes = cluster.rest(layout, "nodes")["nodes"]["node"]
    return any(n["id"].startswith(f"{nm.host}:") and n["state"] == "RUNNING" for n in nodes)


NO_ROOM = {  # YARN's words -> the start of tfyarn's explanation
    "Download and unpack failed":
        "downloading or unpacking one of them failed, most often because the node's local dirs",
    "No space available in any of the local directories":
        "the node's local dirs (yarn.nodemanager.local-dirs) have no room",
}


def test_a_node_without_room_for_the_env_is_named_with_the_fix(
        yarn_cluster, submit, tmp_path: Path) -> None:
    layout = yarn_cluster.layout
    gpu_node = next(nm for nm in layout.node_managers if nm.partition == "gpu")
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "600"],
        components={"worker": {"yarn.component.instances": "1",
                               "yarn.label.expression": "gpu"}})
    with small_local_disk(layout, gpu_node):
        job = submit(resources, app_config)
        app = job.final()
    assert_failed(job, app)
    diagnostics = app["diagnostics"]
    # YARN's own words, which depend on whether its localizer found the space short before
    # or while unpacking; tfyarn's explanation of each
    said = [words for words in NO_ROOM if words in diagnostics]
    assert said, diagnostics
    assert f"YARN could not localize this container's files: {NO_ROOM[said[0]]}" in diagnostics
    assert "Fix: free space there or give the NodeManagers larger disks" in diagnostics
    assert f"on {gpu_node.host}:" in diagnostics, diagnostics  # the node it happened on
    job.assert_no_process_left()
