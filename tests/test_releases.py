"""The Hadoop releases the local cluster runs: each its own state dir and ports, and the
settings that differ between them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jobtools import TFYARN

from tfyarn.localyarn import releases, siteconf
from tfyarn.localyarn.layout import HDFS_PORTS, MAX_NODES, RM_PORTS, Layout, node_managers

# The offsets the test clusters and helpers use (tests/test_*_yarn.py, bench/): multiples of
# 300 up to 3600, and 1000 (test_localyarn's throwaway cluster).
TEST_OFFSETS = (*range(0, 3601, 300), 1000)


def ports(offset: int) -> set[int]:
    """Every port a cluster with the most NodeManagers takes at ``offset``."""
    found = {port + offset for port in (*RM_PORTS.values(), *HDFS_PORTS.values())}
    for nm in node_managers(MAX_NODES):
        found |= {port + offset for port in (nm.rpc_port, nm.localizer_port, nm.webapp_port,
                                             nm.collector_port)}
    return found


def test_release_numbers_order_as_releases_do() -> None:
    assert releases.release("3.3.6") < releases.release("3.4.0") < releases.release("3.4.3")
    assert releases.release("3.4.3") < releases.release("3.5.0")
    assert releases.release("3.3.6-SNAPSHOT") == (3, 3, 6)
    assert releases.release("3.4") == (3, 4, 0)


def test_each_release_has_a_state_dir_and_a_port_window_of_its_own() -> None:
    assert releases.state_dir_name("3.5.0") == "cluster"
    assert releases.port_window("3.5.0") == 0
    others = ("3.3.6", "3.4.3", "3.6.0")
    assert len({releases.state_dir_name(v) for v in (*others, "3.5.0")}) == 4
    windows = [releases.port_window(version) for version in others]
    assert len(set(windows)) == 3
    for window in windows:
        for offset in TEST_OFFSETS:
            assert not ports(window) & ports(offset), (window, offset)
        assert max(ports(window)) < 32768  # below Linux's ephemeral range


def test_the_default_state_dir_and_ports_follow_tfyarn_hadoop_version(tmp_path: Path) -> None:
    code = ("from tfyarn.localyarn.layout import Layout, default_state_dir\n"
            "layout = Layout(default_state_dir())\n"
            "print(layout.state_dir, layout.port_offset, layout.hadoop_version)")
    env = {key: value for key, value in os.environ.items()
           if key not in ("TFYARN_CLUSTER_DIR", "TFYARN_CLUSTER_PORT_OFFSET")}

    def layout_of(**extra: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={**env, "XDG_STATE_HOME": str(tmp_path),
                                               **extra}).stdout.split()

    assert layout_of(TFYARN_HADOOP_VERSION="3.5.0") == [
        str(tmp_path / "tfyarn" / "cluster"), "0", "3.5.0"]
    assert layout_of(TFYARN_HADOOP_VERSION="3.3.6") == [
        str(tmp_path / "tfyarn" / "cluster-hadoop-3.3.6"), "3900", "3.3.6"]
    # Settings are taken at their word.
    assert layout_of(TFYARN_HADOOP_VERSION="3.4.3", TFYARN_CLUSTER_DIR=str(tmp_path / "x"),
                     TFYARN_CLUSTER_PORT_OFFSET="900") == [str(tmp_path / "x"), "900", "3.4.3"]


@pytest.mark.parametrize("version, wants_directory", [
    ("3.3.6", True), ("3.4.0", False), ("3.4.3", False), ("3.5.0", False)])
def test_the_gpu_plugin_is_given_what_each_release_accepts(
        tmp_path: Path, version: str, wants_directory: bool) -> None:
    """3.3.x refuses a discovery path named nvidia-smi (its check is inverted): it is given
    the stand-in's directory; later releases the stand-in itself, as production sets it."""
    layout = Layout(tmp_path, port_offset=0, nodes=2, gpus=2, hadoop_version=version)
    gpu_node = layout.node_managers[-1]
    stand_in = layout.node_dir(gpu_node) / "bin" / "nvidia-smi"
    site = siteconf.node_manager_site(layout, gpu_node)
    assert site["yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables"] == (
        stand_in.parent if wants_directory else stand_in)


def test_a_state_dir_of_another_release_is_refused_before_anything_starts(
        tmp_path: Path) -> None:
    state = tmp_path / "state"
    releases.record(state, "3.3.6")
    env = {**os.environ, "TFYARN_CLUSTER_DIR": str(state), "TFYARN_CLUSTER_PORT_OFFSET": "2000",
           "TFYARN_HADOOP_VERSION": "3.5.0", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for command in (["up"], ["env"]):
        out = subprocess.run([*TFYARN, "cluster", *command], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode != 0, out
        assert f"The cluster in {state} was set up with Hadoop 3.3.6, not 3.5.0" in out.stderr
        assert "Fix: set TFYARN_HADOOP_VERSION=3.3.6" in out.stderr
    assert not (state / "run").exists()
    assert not (tmp_path / "cache").exists()  # no jars fetched
    assert releases.recorded(state) == "3.3.6"
