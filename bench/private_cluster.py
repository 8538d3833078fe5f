"""A bench-owned second local YARN whose NodeManagers advertise more vcores.

The shared local cluster (`tfyarn cluster up`) gives each NodeManager 16 vcores, and YARN's
smallest container takes 1 vcore (DominantResourceCalculator), so at most 16 one-vcore tasks
fit in the gpu partition (one NodeManager): a 64-task job cannot run there. This starts the
very same cluster (tfyarn/localyarn, same jars and settings, as many NodeManagers) in its own
state directory with every port shifted, only with more vcores per NodeManager
(`Layout(node_vcores=...)`), for the rendezvous benchmark at 32 and 64 tasks. The shared
cluster is never touched; this one is stopped (by its own pid files) afterwards.

    with private_cluster(vcores=64) as cluster: ...
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from bench.cluster import Cluster
from bench.common import log
from tfyarn.localyarn import cluster as localcluster
from tfyarn.localyarn.layout import Layout

STATE_DIR = Path(os.environ.get("TFYARN_BENCH_CLUSTER_DIR",
                                Path.home() / ".local" / "state" / "tfyarn" / "bench-cluster"))
PORT_OFFSET = int(os.environ.get("TFYARN_BENCH_CLUSTER_PORT_OFFSET", "2000"))


@contextlib.contextmanager
def private_cluster(vcores: int = 64) -> Iterator[Cluster]:
    layout = Layout(STATE_DIR, port_offset=PORT_OFFSET, node_vcores=vcores)
    started = not localcluster.is_running(layout)
    if started:
        log(f"starting a bench-owned YARN in {STATE_DIR} (ports +{PORT_OFFSET}, "
            f"{layout.node_count} NodeManagers of {vcores} vcores)")
        result = localcluster.up(layout, echo=log)
        log(f"  up in {result.seconds:.1f} s at {result.webapp_url}")
    try:
        yield Cluster(layout, localcluster.client_environment(layout))
    finally:
        if started:
            stopped = localcluster.down(layout)
            log(f"stopped the bench-owned YARN ({', '.join(stopped)})")
