"""The suite's lanes (pytest-xdist workers), each with a local cluster of its own.

A lane runs one test at a time, so a test has its lane's cluster to itself: it may fill a
queue, stop a node or HDFS, or count every application without waiting for other lanes, and
no lane ever waits for another. Lane 0 uses the cluster `tfyarn cluster` would (the state dir
and port offset of TFYARN_CLUSTER_DIR and TFYARN_CLUSTER_PORT_OFFSET, or their defaults;
reused if it runs); lane k beside it uses the state dir with `-lane<k>` added and the port
window k steps of LANE_PORT_WINDOW above.

Without xdist there is one lane: lane 0.
"""

from __future__ import annotations

import os
from pathlib import Path

from tfyarn.localyarn.layout import Layout, default_state_dir

LANE_PORT_WINDOW = 300  # a cluster's ports fit in 300 (tfyarn/localyarn/layout.py, MAX_NODES)
MAX_LANES = 3  # lane 3's window would reach the throwaway cluster's (tests/test_localyarn.py)


def lane_number(worker: str | None = None) -> int:
    """This process's lane: xdist's worker gw<k> is lane k."""
    worker = worker if worker is not None else os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker.removeprefix("gw")) if worker else 0


def lane_cluster(lane: int, state_dir: Path, port_offset: int) -> tuple[Path, int]:
    """The state dir and port offset of ``lane``'s cluster, beside lane 0's (``state_dir``,
    ``port_offset``)."""
    if not 0 <= lane < MAX_LANES:
        raise ValueError(f"the suite runs in 1 to {MAX_LANES} lanes (TFYARN_TEST_WORKERS), "
                         f"not {lane + 1}: each lane starts a local cluster of its own")
    if lane == 0:
        return state_dir, port_offset
    own_dir = state_dir.with_name(f"{state_dir.name}-lane{lane}")
    return own_dir, port_offset + LANE_PORT_WINDOW * lane


def point_at_the_lanes_cluster() -> None:
    """Point this process, and every command it starts, at its lane's cluster."""
    lane = lane_number()
    state_dir, offset = lane_cluster(lane, default_state_dir(),
                                     Layout(default_state_dir()).port_offset)
    if lane:
        os.environ["TFYARN_CLUSTER_DIR"] = str(state_dir)
        os.environ["TFYARN_CLUSTER_PORT_OFFSET"] = str(offset)
