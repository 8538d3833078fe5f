"""Fetching the Hadoop jars (tfyarn/localyarn/provision.py), with a stand-in Maven."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tfyarn.localyarn import provision

# Fails where another copy of it runs; otherwise takes a second to "fetch" one jar.
STAND_IN_MAVEN = """#!/bin/sh
[ -e "$RUNS/running" ] && { echo "two Mavens at once" >&2; exit 1; }
touch "$RUNS/running"; echo ran >> "$RUNS/count"; sleep 1
for arg; do case "$arg" in -DoutputDirectory=*) out=${arg#*=};; esac; done
mkdir -p "$out" && touch "$out/hadoop-common.jar"
rm "$RUNS/running"
"""


def test_two_clusters_started_at_once_fetch_the_jars_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two lanes (or two terminals) starting clusters on a fresh machine: one Maven runs,
    and the other call waits for its jars rather than running a second into the same
    directory and local repository."""
    bin_dir, runs = tmp_path / "bin", tmp_path / "runs"
    bin_dir.mkdir()
    runs.mkdir()
    (bin_dir / "mvn").write_text(STAND_IN_MAVEN)
    (bin_dir / "mvn").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("RUNS", str(runs))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    home = provision.cache_root() / "hadoop-test"
    with ThreadPoolExecutor(2) as both:
        libs = list(both.map(lambda _: provision.ensure_jars(
            home, ("hadoop-common",), "3.5.0", "Apache Hadoop 3.5.0", echo=lambda _: None),
            range(2)))
    assert libs == [home / "lib"] * 2
    assert (home / "lib" / "hadoop-common.jar").is_file()
    assert (runs / "count").read_text() == "ran\n"
