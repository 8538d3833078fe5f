"""The Hadoop releases the local cluster runs (TFYARN_HADOOP_VERSION), and where they differ.

3.5.0 is the default; 3.3.6 (the last of the 3.3 line) and 3.4.3 (the newest 3.4) run the
same cluster, each by default in a state dir and a port window of its own, so that clusters
of several releases can run side by side. A state dir remembers the release that formatted
its HDFS (an older NameNode refuses a newer one's storage), and another release is refused
there before anything starts. Where a release needs the cluster set up another way, the
difference is one function here, named for what differs, saying which release does what.
"""

from __future__ import annotations

import os
from pathlib import Path

from tfyarn.errors import TfyarnError
from tfyarn.hadoop.amjar import release

DEFAULT = "3.5.0"  # 3.3.6 and 3.4.3 pass the tests too (docs/benchmarks.md, section 15)
# Ports of a cluster of another release shift by its line's window (beside the default
# cluster's 0 and the test clusters' multiples of 300 up to 3600), unless
# TFYARN_CLUSTER_PORT_OFFSET says otherwise.
PORT_WINDOWS = {(3, 3): 3900, (3, 4): 4200}
OTHER_PORT_WINDOW = 4500
RECORD = "hadoop-version"  # in the state dir


class ReleaseMismatch(TfyarnError, RuntimeError):
    """The state dir belongs to another Hadoop release."""


def asked() -> str:
    """The release TFYARN_HADOOP_VERSION names, or the default."""
    return os.environ.get("TFYARN_HADOOP_VERSION") or DEFAULT


def gpu_discovery_wants_directory(version: str) -> bool:
    """Whether the NodeManager's GPU plugin must be given the directory of nvidia-smi rather
    than the binary itself. 3.3.x inverts its file-name check (GpuDiscoverer refuses a path
    whose name *is* nvidia-smi: "It should point to an nvidia-smi binary."); 3.4.0 fixed it.
    A directory works on every release, but 3.4+ then warns at each start."""
    return release(version) < (3, 4, 0)


def state_dir_name(version: str) -> str:
    """The default state dir's name: `cluster` for the default release, else its own."""
    return "cluster" if version == DEFAULT else f"cluster-hadoop-{version}"


def port_window(version: str) -> int:
    """The default port offset of a cluster of ``version``: 0 for the default release."""
    if version == DEFAULT:
        return 0
    return PORT_WINDOWS.get(release(version)[:2], OTHER_PORT_WINDOW)


def recorded(state_dir: Path) -> str | None:
    """The release the cluster in ``state_dir`` was set up with; None before its first `up`
    (or when set up by a tfyarn that did not record it)."""
    try:
        return (state_dir / RECORD).read_text().strip() or None
    except OSError:
        return None


def check_state_dir(state_dir: Path, version: str) -> None:
    """Refuse a state dir another release set up: its HDFS storage is that release's."""
    found = recorded(state_dir)
    if found is not None and found != version:
        raise ReleaseMismatch(
            f"The cluster in {state_dir} was set up with Hadoop {found}, not {version} "
            f"(TFYARN_HADOOP_VERSION={asked()}): its HDFS storage is {found}'s. Fix: set "
            f"TFYARN_HADOOP_VERSION={found} to use it, or give {version} a state dir of its "
            "own (unset TFYARN_CLUSTER_DIR to get its default one, or point it elsewhere with "
            "a free TFYARN_CLUSTER_PORT_OFFSET).")


def record(state_dir: Path, version: str) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / RECORD).write_text(f"{version}\n")
