"""Where the local cluster keeps its jars, configuration, state and logs, and its ports."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tfyarn.localyarn import releases

HADOOP_VERSION = releases.asked()


def cache_root() -> Path:
    """Jars are big and version-pinned: keep them out of the repo, shared by every state dir."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tfyarn"


def default_state_dir() -> Path:
    explicit = os.environ.get("TFYARN_CLUSTER_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tfyarn" / releases.state_dir_name(HADOOP_VERSION)


@dataclass(frozen=True)
class NodeManagerSpec:
    """One NodeManager, a host of its own: its address, ports and what it offers."""

    name: str
    host: str  # its own loopback address: tasks on different nodes get different host:port
    rpc_port: int
    localizer_port: int
    webapp_port: int
    collector_port: int
    memory_mb: int
    vcores: int
    gpus: int = 0
    partition: str | None = None  # an exclusive node-label partition, or the default one


RM_PORTS = {
    "address": 8032,
    "scheduler.address": 8030,
    "resource-tracker.address": 8031,
    "admin.address": 8033,
    "webapp.address": 8088,
}

# The NameNode and the one DataNode (HDFS is the storage every host shares) on 127.0.0.1.
HDFS_PORTS = {
    "namenode rpc": 8020,
    "namenode http": 8021,
    "datanode data": 8022,
    "datanode http": 8023,
    "datanode ipc": 8024,
    "datanode internal proxy": 8025,
}

# An HA cluster's file system (`tfyarn cluster up --ha`): a nameservice, as production names one.
NAMESERVICE = "nameservice1"

GPU_LABEL = "gpu"
GPUS_PER_GPU_NODE = 2  # the gpu node's GPUs unless `tfyarn cluster up --gpus N` says otherwise
MAX_GPUS_PER_GPU_NODE = 16
DEFAULT_NODES = 3  # NodeManagers: all in the default partition but the last, the gpu one
MAX_NODES = 14  # keeps every NodeManager port below the next cluster's (offsets of 300)
NODE_MEMORY_MB = 16384
NODE_VCORES = 16


def node_managers(count: int, vcores: int = NODE_VCORES,
                  gpus: int = GPUS_PER_GPU_NODE) -> tuple[NodeManagerSpec, ...]:
    """``count`` NodeManagers, each its own host 127.0.0.<k+1>; the last is in the gpu
    partition. Ports differ too, so a daemon that binds every interface cannot collide.

    Every port sits below Linux's ephemeral range (32768-60999 by default), even with the
    offsets tests and bench add: a port in that range can be taken at any moment by an
    outgoing connection or by a task that binds port 0.
    """
    if not 2 <= count <= MAX_NODES:
        raise ValueError(f"the local cluster has 2 to {MAX_NODES} NodeManagers, not {count}")
    specs = []
    for k in range(1, count + 1):
        base = 8140 + 10 * (k - 1)
        gpu_node = k == count
        specs.append(NodeManagerSpec(
            f"nm{k}", f"127.0.0.{k + 1}", rpc_port=base + 4, localizer_port=base,
            webapp_port=base + 2, collector_port=base + 8, memory_mb=NODE_MEMORY_MB,
            vcores=vcores, gpus=gpus if gpu_node else 0,
            partition=GPU_LABEL if gpu_node else None,
        ))
    return tuple(specs)


@dataclass(frozen=True)
class Layout:
    """Paths of one local cluster. Everything it writes lives under ``state_dir``."""

    state_dir: Path
    hadoop_version: str = HADOOP_VERSION
    # Shifts every port, so a second cluster (a test's, another release's) can run beside
    # the first.
    port_offset: int = field(default_factory=lambda: int(
        os.environ.get("TFYARN_CLUSTER_PORT_OFFSET") or releases.port_window(HADOOP_VERSION)))
    # NodeManagers: given to `up`; otherwise what the running cluster was started with.
    nodes: int | None = None
    node_vcores: int = NODE_VCORES
    # GPUs of the gpu node (its stand-in nvidia-smi lists them): given to `up`, or as started.
    gpus: int | None = None
    # Two ResourceManagers and two NameNodes (ha.py): given to `up`, or as started.
    ha: bool | None = None

    @property
    def node_count(self) -> int:
        if self.nodes is not None:
            return self.nodes
        try:
            return int(self.nodes_file.read_text())
        except (OSError, ValueError):
            return int(os.environ.get("TFYARN_CLUSTER_NODES", DEFAULT_NODES))

    @property
    def nodes_file(self) -> Path:
        return self.state_dir / "nodes"

    @property
    def gpu_count(self) -> int:
        if self.gpus is not None:
            return self.gpus
        try:
            return int(self.gpus_file.read_text())
        except (OSError, ValueError):
            return int(os.environ.get("TFYARN_CLUSTER_GPUS", GPUS_PER_GPU_NODE))

    @property
    def gpus_file(self) -> Path:
        return self.state_dir / "gpus"

    @property
    def is_ha(self) -> bool:
        if self.ha is not None:
            return self.ha
        try:
            return self.ha_file.read_text().strip() == "true"
        except OSError:
            return False

    @property
    def ha_file(self) -> Path:
        return self.state_dir / "ha"

    @property
    def node_managers(self) -> tuple[NodeManagerSpec, ...]:
        return node_managers(self.node_count, self.node_vcores, self.gpu_count)

    def port(self, base: int) -> int:
        return base + self.port_offset

    @property
    def hadoop_home(self) -> Path:
        return cache_root() / f"hadoop-{self.hadoop_version}"

    @property
    def kdc_lib_dir(self) -> Path:
        """Hadoop's MiniKdc and its Kerby jars (the secure cluster's KDC), beside the jars."""
        return cache_root() / f"minikdc-{self.hadoop_version}"

    @property
    def mapreduce_lib_dir(self) -> Path:
        """Hadoop's MapReduce runtime and its sleep job (sleepjob.py), with the cluster's
        jars, which every node sees."""
        return self.hadoop_home / "mapreduce" / "lib"

    @property
    def lib_dir(self) -> Path:
        return self.hadoop_home / "lib"

    @property
    def conf_dir(self) -> Path:
        """The client's (and the ResourceManager's) configuration: HADOOP_CONF_DIR."""
        return self.state_dir / "conf"

    def node_conf_dir(self, nm: NodeManagerSpec) -> Path:
        return self.state_dir / nm.name / "conf"

    def node_dir(self, nm: NodeManagerSpec) -> Path:
        return self.state_dir / nm.name

    def host_view_dir(self, nm: NodeManagerSpec) -> Path:
        """What the node's tasks see at the paths private to each host (/tmp, HOME)."""
        return self.node_dir(nm) / "host"

    @property
    def kdc_dir(self) -> Path:
        """The secure cluster's KDC: its krb5.conf, keytabs and ticket caches."""
        return self.state_dir / "kdc"

    @property
    def krb5_conf(self) -> Path:
        return self.kdc_dir / "krb5.conf"

    @property
    def hdfs_dir(self) -> Path:
        # An HA cluster's HDFS is another one (its own cluster id): switching keeps both.
        return self.state_dir / ("hdfs-ha" if self.is_ha else "hdfs")

    @property
    def webapps_dir(self) -> Path:
        """Empty web apps the NameNode and DataNode insist on (Maven's jar has none)."""
        return self.hadoop_home / "webapps-stub"

    @property
    def default_fs(self) -> str:
        if self.is_ha:
            return f"hdfs://{NAMESERVICE}"
        return f"hdfs://127.0.0.1:{self.port(HDFS_PORTS['namenode rpc'])}"

    @property
    def namenode_web_url(self) -> str:
        return f"http://127.0.0.1:{self.port(HDFS_PORTS['namenode http'])}"

    @property
    def bin_dir(self) -> Path:
        return self.state_dir / "bin"

    @property
    def node_software_dir(self) -> Path:
        """Software installed at the same path on every node, as an administrator installs a
        node-wide Python (an Anaconda parcel, say): every node sees this directory."""
        return self.state_dir / "node-software"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def run_dir(self) -> Path:
        return self.state_dir / "run"

    @property
    def label_store_dir(self) -> Path:
        return self.state_dir / "node-labels"

    def pid_file(self, daemon: str) -> Path:
        return self.run_dir / f"{daemon}.pid"

    def daemon_log(self, daemon: str) -> Path:
        return self.log_dir / f"{daemon}.log"

    def daemon_out(self, daemon: str) -> Path:
        return self.log_dir / f"{daemon}.out"

    @property
    def webapp_url(self) -> str:
        return f"http://127.0.0.1:{self.port(RM_PORTS['webapp.address'])}"
