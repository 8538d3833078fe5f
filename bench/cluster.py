"""The running local YARN the benchmarks use, as they read it: REST, nodes, each
container's files, a job's work dir on HDFS.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tfyarn.localyarn import cluster as localcluster
from tfyarn.localyarn.layout import Layout, NodeManagerSpec, default_state_dir
from tfyarn.submission.workdir import default_work_dir


@dataclass(frozen=True)
class Cluster:
    """A running local YARN and the client environment that points at it."""

    layout: Layout
    env: dict[str, str]

    @classmethod
    def default(cls) -> Cluster:
        layout = Layout(default_state_dir())
        if not localcluster.is_running(layout):
            raise SystemExit("the local YARN is not running: `tfyarn cluster up` first")
        return cls(layout, localcluster.client_environment(layout))

    def rest(self, path: str) -> dict:
        return localcluster.rest(self.layout, path)

    def app(self, app_id: str) -> dict:
        return self.rest(f"apps/{app_id}")["app"]

    def active_apps(self) -> list[dict]:
        return localcluster.running_apps(self.layout)

    def node_managers(self) -> tuple[NodeManagerSpec, ...]:
        return self.layout.node_managers

    def free_vcores(self) -> dict[str, tuple[int, int]]:
        """Per partition ("" = default): (free vcores, total vcores) of RUNNING nodes."""
        out: dict[str, tuple[int, int]] = {}
        for node in localcluster.nodes(self.layout):
            if node.get("state") != "RUNNING":
                continue
            label = ",".join(node.get("nodeLabels") or [])
            free, total = out.get(label, (0, 0))
            avail = int(node.get("availableVirtualCores", 0))
            out[label] = (free + avail, total + avail + int(node.get("usedVirtualCores", 0)))
        return out

    def app_log_dirs(self, app_id: str) -> list[Path]:
        """The NodeManagers' live log directory of each of the app's containers."""
        dirs: list[Path] = []
        for nm in self.node_managers():
            base = self.layout.node_dir(nm) / "containers" / app_id
            with contextlib.suppress(OSError):
                dirs += [p for p in base.iterdir() if p.name.startswith("container_")]
        return dirs

    def task_files(self, app_id: str, pattern: str) -> list[Path]:
        """Files matching ``pattern`` in the local work dir (`<container dir>/work`) of each
        of the app's containers, on whichever host ran it (the NodeManagers keep finished
        containers' dirs for yarn.nodemanager.delete.debug-delay-sec)."""
        found: list[Path] = []
        for nm in self.node_managers():
            appcache = self.layout.node_dir(nm) / "local" / "usercache"
            found += appcache.glob(f"*/appcache/{app_id}/container_*/work/{pattern}")
        return sorted(found)

    def job_dir(self, app_id: str) -> str:
        """The job's work dir on HDFS (tfyarn's default, which bench jobs keep)."""
        return default_work_dir(self.env).replace("${APP_ID}", app_id)

    def remove_job_dir(self, app_id: str) -> None:
        """The job's work dir on HDFS, checkpoints and all, goes (if it is there)."""
        from hdfs_native import Client

        url = urlsplit(self.job_dir(app_id))
        with contextlib.suppress(FileNotFoundError):
            Client(f"{url.scheme}://{url.netloc}").delete(url.path, recursive=True)

    @property
    def rm_log(self) -> Path:
        return self.layout.daemon_log("rm")


def wait_for_room(cluster: Cluster, need: dict[str, int], timeout_s: float) -> dict[str, Any]:
    """Wait (bounded) until each partition has `need` free vcores; say what the cluster had."""
    deadline = time.monotonic() + timeout_s
    while True:
        free = cluster.free_vcores()
        if all(free.get(part, (0, 0))[0] >= n for part, n in need.items()):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(2)
    return {"free_vcores": {k or "default": v[0] for k, v in free.items()},
            "other_apps": len(cluster.active_apps()), "load1": round(os.getloadavg()[0], 2)}


def kill_app(cluster: Cluster, app_id: str) -> None:
    subprocess.run(["yarn", "application", "-kill", app_id], env=cluster.env,
                   capture_output=True, timeout=120)
