"""`tfyarn cluster up` fails clearly, before starting anything, when a prerequisite is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from jobtools import TFYARN


def cluster_up(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """`tfyarn cluster up` on a throwaway state dir, jar cache and ports."""
    environ = {**os.environ, "TFYARN_CLUSTER_DIR": str(tmp_path / "state"),
               "TFYARN_CLUSTER_PORT_OFFSET": "2000", "XDG_CACHE_HOME": str(tmp_path / "cache"),
               **env}
    return subprocess.run([*TFYARN, "cluster", "up"], env=environ,
                          capture_output=True, text=True, timeout=600)


def assert_nothing_running(tmp_path: Path) -> None:
    run_dir = tmp_path / "state" / "run"
    assert not run_dir.exists() or not list(run_dir.glob("*.pid"))


def test_java_that_is_not_17(tmp_path: Path):
    other = next((p for p in Path("/usr/lib/jvm").glob("*") if "17" not in p.name
                  and (p / "bin" / "java").exists()), None)
    if other is None:
        pytest.skip("no JDK other than 17 on this machine")
    out = cluster_up(tmp_path, TFYARN_JAVA_HOME=str(other))
    assert out.returncode != 0
    assert f"TFYARN_JAVA_HOME={other} holds Java" in out.stderr
    assert "needs JDK 17" in out.stderr and "Fix:" in out.stderr
    assert_nothing_running(tmp_path)


def test_no_maven_on_path(tmp_path: Path):
    bin_dir = tmp_path / "bin"  # PATH with everything but mvn
    bin_dir.mkdir()
    for name in ("java", "bash", "env"):
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    out = cluster_up(tmp_path, PATH=str(bin_dir))
    assert out.returncode != 0
    assert "Maven (mvn) is not on PATH" in out.stderr and "Fix: install it" in out.stderr
    assert_nothing_running(tmp_path)


def test_maven_cannot_fetch_the_jars(tmp_path: Path):
    out = cluster_up(tmp_path, TFYARN_HADOOP_VERSION="0.0.0-no-such-version")
    assert out.returncode != 0
    assert "Maven could not fetch the Hadoop 0.0.0-no-such-version jars" in out.stderr
    assert "Fix: check that Maven Central is reachable" in out.stderr
    assert_nothing_running(tmp_path)


def test_a_java_without_javac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The NodeManagers' file system class is compiled at `up`: a JRE alone is named."""
    from tfyarn.localyarn import localfs
    from tfyarn.localyarn.layout import Layout
    from tfyarn.localyarn.provision import ClusterError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing compiled yet
    jre = tmp_path / "jre"
    (jre / "bin").mkdir(parents=True)
    with pytest.raises(ClusterError, match=f"{jre} has no javac.*Fix: install a JDK"):
        localfs.ensure_compiled(Layout(tmp_path / "state"), jre)


def test_down_removes_the_caches_a_nodemanager_set_aside(tmp_path: Path):
    """A NodeManager stopped soon after it started leaves its old caches renamed *_DEL_*:
    `down` removes them, and nothing else, so restarts do not fill the disk."""
    from tfyarn.localyarn import cluster
    from tfyarn.localyarn.layout import Layout

    layout = Layout(tmp_path, port_offset=2400, nodes=2)
    for nm in layout.node_managers:
        local = layout.node_dir(nm) / "local"
        (local / "usercache_DEL_123" / "root").mkdir(parents=True)
        (local / "usercache" / "root").mkdir(parents=True)
    cluster.down(layout)
    for nm in layout.node_managers:
        local = layout.node_dir(nm) / "local"
        assert sorted(p.name for p in local.iterdir()) == ["usercache"]
