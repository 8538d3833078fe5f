"""Where the local cluster keeps its jars, configuration, state and logs, and its ports."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

HADOOP_VERSION = os.environ.get("TFYARN_HADOOP_VERSION", "3.5.0")


def cache_root() -> Path:
    """Jars are big and version-pinned: keep them out of the repo, shared by every state dir."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tfyarn"


def default_state_dir() -> Path:
    explicit = os.environ.get("TFYARN_CLUSTER_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tfyarn" / "cluster"


@dataclass(frozen=True)
class NodeManagerSpec:
    """One NodeManager: its ports and what it advertises to the scheduler."""

    name: str
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

GPU_LABEL = "gpu"

# Every port sits below Linux's ephemeral range (32768-60999 by default), even with the
# offsets tests and bench add: a port in that range can be taken at any moment by an
# outgoing connection or by a task that binds port 0.
NODE_MANAGERS = (
    NodeManagerSpec("nm1", 8144, 8140, 8142, 8148, memory_mb=16384, vcores=16),
    NodeManagerSpec(
        "nm2", 8154, 8150, 8152, 8158, memory_mb=16384, vcores=16, gpus=2, partition=GPU_LABEL
    ),
)


@dataclass(frozen=True)
class Layout:
    """Paths of one local cluster. Everything it writes lives under ``state_dir``."""

    state_dir: Path
    hadoop_version: str = HADOOP_VERSION
    # Shifts every port, so a second cluster (a test's, say) can run beside the first.
    port_offset: int = field(
        default_factory=lambda: int(os.environ.get("TFYARN_CLUSTER_PORT_OFFSET", "0"))
    )

    def port(self, base: int) -> int:
        return base + self.port_offset

    @property
    def hadoop_home(self) -> Path:
        return cache_root() / f"hadoop-{self.hadoop_version}"

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

    @property
    def bin_dir(self) -> Path:
        return self.state_dir / "bin"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def run_dir(self) -> Path:
        return self.state_dir / "run"

    @property
    def app_log_dir(self) -> Path:
        """Aggregated container logs, read by ``yarn logs`` after an application ends."""
        return self.state_dir / "app-logs"

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
