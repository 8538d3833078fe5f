"""A bench-owned second local YARN whose NodeManagers advertise more vcores.

The shared local cluster (`tfyarn cluster up`) gives each NodeManager 16 vcores, and YARN's
smallest container takes 1 vcore (DominantResourceCalculator), so at most 31 one-vcore tasks
fit beside the AppMaster: 64 tasks cannot run there. This starts the very same cluster
(tfyarn/localyarn, same jars and settings) in its own state directory with every port shifted,
with only `NODE_MANAGERS[*].vcores` raised, for the rendezvous benchmark at 32 and 64 tasks.
The shared cluster is never touched; this one is stopped (by its own pid files) afterwards.

    with private_cluster(vcores=64) as cluster: ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

from bench.common import Cluster, log
from tfyarn.localyarn import cluster as localcluster
from tfyarn.localyarn import layout as layout_module
from tfyarn.localyarn import siteconf
from tfyarn.localyarn.layout import Layout

STATE_DIR = Path(os.environ.get("TFYARN_BENCH_CLUSTER_DIR",
                                Path.home() / ".local" / "state" / "tfyarn" / "bench-cluster"))
PORT_OFFSET = int(os.environ.get("TFYARN_BENCH_CLUSTER_PORT_OFFSET", "2000"))


def _patch_node_managers(vcores: int) -> tuple:
    """Every module that read NODE_MANAGERS at import sees NodeManagers with `vcores`."""
    original = layout_module.NODE_MANAGERS
    patched = tuple(dataclasses.replace(nm, vcores=vcores) for nm in original)
    for module in (layout_module, siteconf, localcluster):
        module.NODE_MANAGERS = patched
    return original


def _restore(original: tuple) -> None:
    for module in (layout_module, siteconf, localcluster):
        module.NODE_MANAGERS = original


@contextlib.contextmanager
def private_cluster(vcores: int = 64) -> Iterator[Cluster]:
    original = _patch_node_managers(vcores)
    layout = Layout(STATE_DIR, port_offset=PORT_OFFSET)
    try:
        started = not localcluster.is_running(layout)
        if started:
            log(f"starting a bench-owned YARN in {STATE_DIR} (ports +{PORT_OFFSET}, "
                f"{vcores} vcores per NodeManager)")
            result = localcluster.up(layout, echo=log)
            log(f"  up in {result.seconds:.1f} s at {result.webapp_url}")
        try:
            yield Cluster(layout, localcluster.client_environment(layout))
        finally:
            if started:
                stopped = localcluster.down(layout)
                log(f"stopped the bench-owned YARN ({', '.join(stopped)})")
    finally:
        _restore(original)
