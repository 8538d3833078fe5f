"""Each of the suite's lanes gets a cluster of its own (tests/lanes.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lanes
import pytest

TESTS = Path(__file__).parent


def test_lane_0_uses_the_given_cluster_and_the_others_their_own() -> None:
    state = Path("/s/tfyarn/cluster")
    assert lanes.lane_cluster(0, state, 8100) == (state, 8100)
    assert lanes.lane_cluster(1, state, 8100) == (Path("/s/tfyarn/cluster-lane1"), 8400)
    assert lanes.lane_cluster(2, state, 0) == (Path("/s/tfyarn/cluster-lane2"), 600)
    with pytest.raises(ValueError, match="TFYARN_TEST_WORKERS"):
        lanes.lane_cluster(lanes.MAX_LANES, state, 0)


@pytest.mark.parametrize("worker, expected", [("", "given"), ("gw0", "given"), ("gw1", "lane1")])
def test_a_lanes_process_and_its_commands_point_at_its_cluster(tmp_path: Path, worker: str,
                                                               expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env.update(TFYARN_CLUSTER_DIR=str(tmp_path / "given"), TFYARN_CLUSTER_PORT_OFFSET="8100",
               PYTEST_XDIST_WORKER=worker)
    code = ("import lanes, os; lanes.point_at_the_lanes_cluster(); "
            "print(os.environ['TFYARN_CLUSTER_DIR'], os.environ['TFYARN_CLUSTER_PORT_OFFSET'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=TESTS, check=True,
                         capture_output=True, text=True).stdout.split()
    offset = "8400" if expected == "lane1" else "8100"
    assert out == [str(tmp_path / ("given-lane1" if expected == "lane1" else "given")), offset]
