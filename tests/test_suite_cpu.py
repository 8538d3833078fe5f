"""bench/suite_cpu.py: a test is charged its lane's CPU since the lane's previous result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jobtools import REPO, wait_for

from bench import suite_cpu


def test_a_test_is_charged_its_lanes_cpu_since_the_lanes_previous_result(
        tmp_path: Path, capsys) -> None:
    timeline = tmp_path / "lanes.jsonl"
    timeline.write_text("\n".join(json.dumps(sample) for sample in [
        {"t": 100.0, "gw0": 0.0, "gw0:python": 0.0, "gw1": 0.0},
        {"t": 110.0, "gw0": 30.0, "gw0:python": 25.0, "gw1": 4.0},
        {"t": 120.0, "gw0": 35.0, "gw0:python": 25.0, "gw1": 50.0, "gw1:python": 3.0,
         "gw1:NodeManager": 47.0, "-": 7.0, "-:python": 7.0},
    ]) + "\n")
    log = tmp_path / "suite.log"
    log.write_text("100 tests/test_a.py::test_one \n"  # a start line: no lane, no result
                   "110 [gw0] [ 50%] PASSED tests/test_a.py::test_one \n"
                   "120 [gw0] [ 75%] FAILED tests/test_a.py::test_two \n"
                   "120 [gw1] [100%] PASSED tests/test_b.py::test_three@group \n")
    suite_cpu.report(timeline, log, top=10)
    out = capsys.readouterr().out
    assert "charged to tests: 85 CPU-s; to no lane: 7 CPU-s" in out
    lines = out.splitlines()
    assert lines[1].split()[:2] == ["50.0", "CPU-s"] and "test_three@group" in lines[1]
    assert lines[2].split()[:2] == ["30.0", "CPU-s"] and "test_one" in lines[2]
    assert "[python 25]" in lines[2]
    assert lines[3].split()[:2] == ["5.0", "CPU-s"] and "test_two" in lines[3]
    assert "   50.0 CPU-s  tests/test_b.py" in out and "   35.0 CPU-s  tests/test_a.py" in out
    by_kind = out.split("by kind of process:\n")[1].splitlines()
    assert by_kind == ["    47.0 CPU-s  NodeManager", "    35.0 CPU-s  python"], by_kind


def test_processes_are_named_by_what_they_run() -> None:
    assert suite_cpu.kind("/usr/lib/jvm/bin/java\0-cp\0x\0org.apache.hadoop.yarn.server."
                          "nodemanager.NodeManager") == "NodeManager"
    assert suite_cpu.kind("python3\0-m\0tfyarn.localyarn.hostview\0/n") == "NodeManager"
    assert suite_cpu.kind("/v/bin/python\0-m\0appmaster.agent") == "agent"
    assert suite_cpu.kind("/v/bin/python\0-m\0tfyarn.cli.main\0status") == "cli"
    assert suite_cpu.kind("/usr/bin/tar\0-x") == "tar"


# Burns a CPU-second, says so, waits for ``go``, burns another, says so, then sleeps.
BURNER = """import os, sys, time
def burn():
    start = time.process_time()
    while time.process_time() - start < 1.0:
        pass
burn(); open(sys.argv[1] + "/burnt-1", "w").close()
while not os.path.exists(sys.argv[1] + "/go"):
    time.sleep(0.05)
burn(); open(sys.argv[1] + "/burnt-2", "w").close()
time.sleep(60)
"""


def test_a_process_running_before_the_sampler_counts_its_cpu_from_then_on(
        tmp_path: Path) -> None:
    """The sampler sees a process that burnt a CPU-second before it started and burns one
    more after: it is charged the second alone (whole, it was the machine's own services'
    lives in the figures)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}  # no lane
    # bash's exec -a names the process "burner": a kind of its own in the samples
    burner = subprocess.Popen(["bash", "-c", 'exec -a burner "$0" -c "$1" "$2"',
                               sys.executable, BURNER, str(tmp_path)], env=env)
    timeline = tmp_path / "lanes.jsonl"
    try:
        wait_for("the first burn", (tmp_path / "burnt-1").exists, 60)
        sampler = subprocess.Popen([sys.executable, "-m", "bench.suite_cpu", "sample",
                                    str(timeline)], env=env, cwd=REPO)
        try:
            # the first sweep took each process's CPU so far
            wait_for("two samples", lambda: samples(timeline) >= 2, 60)
            (tmp_path / "go").touch()
            wait_for("the second burn", (tmp_path / "burnt-2").exists, 60)
            taken = samples(timeline)
            wait_for("two samples after it", lambda: samples(timeline) >= taken + 2, 60)
        finally:
            sampler.terminate()
            sampler.wait(timeout=30)
    finally:
        burner.kill()
        burner.wait(timeout=30)
    last = json.loads(timeline.read_text().splitlines()[-1])
    charged = sum(cpu for key, cpu in last.items() if key.endswith(":burner"))
    assert 0.8 <= charged <= 1.5, last


def samples(timeline: Path) -> int:
    return len(timeline.read_text().splitlines()) if timeline.exists() else 0
