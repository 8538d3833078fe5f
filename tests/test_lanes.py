"""The suite's lanes share the cluster by turns (tests/lanes.py), checked with real processes:
tests beside each other overlap, an `alone` test overlaps none, and a waiting `alone` test
keeps new ones out."""

from __future__ import annotations

import fcntl
import multiprocessing
import time
from pathlib import Path

import lanes

HOLD_S = 1.0


def take_turn(shared: str, alone: bool, log: str, name: str) -> None:
    with lanes.on_the_cluster(Path(shared), alone):
        with open(log, "a") as out:
            out.write(f"{time.monotonic()} start {name}\n")
        time.sleep(HOLD_S)
        with open(log, "a") as out:
            out.write(f"{time.monotonic()} end {name}\n")


def spans(log: Path) -> dict[str, tuple[float, float]]:
    seen: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        when, _, name = line.split()
        seen.setdefault(name, []).append(float(when))
    return {name: (times[0], times[1]) for name, times in seen.items()}


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def until(what: str, check) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def gate_taken(shared: Path) -> bool:
    with (shared / "gate.lock").open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_tests_beside_each_other_overlap_and_an_alone_one_overlaps_none(tmp_path: Path) -> None:
    log = tmp_path / "turns.log"
    log.touch()
    context = multiprocessing.get_context("spawn")

    def start(name: str, alone: bool):
        proc = context.Process(target=take_turn, args=(str(tmp_path), alone, str(log), name))
        proc.start()
        return proc

    procs = [start("a", False), start("b", False)]
    until("a and b on the cluster", lambda: log.read_text().count("start") == 2)
    procs.append(start("solo", True))
    until("solo waiting at the gate", lambda: gate_taken(tmp_path))
    procs.append(start("late", False))
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    seen = spans(log)
    assert overlap(seen["a"], seen["b"]), seen
    for other in ("a", "b", "late"):
        assert not overlap(seen["solo"], seen[other]), seen
    # `late` came while `solo` waited for a and b: it went after solo, not before.
    assert seen["late"][0] >= seen["solo"][1], seen


def test_lanes_count_in_and_out(tmp_path: Path) -> None:
    assert lanes.count_lanes(tmp_path, +1) == 1
    assert lanes.count_lanes(tmp_path, +1) == 2
    assert lanes.count_lanes(tmp_path, -1) == 1
    assert lanes.count_lanes(tmp_path, -1) == 0


def alone_stretch(shared: str, log: str, tests: int) -> None:
    stretch = lanes.AloneStretch()
    for i in range(tests):
        stretch.before(Path(shared), alone=True)
        with open(log, "a") as out:
            out.write(f"{time.monotonic()} start solo{i}\n")
        time.sleep(HOLD_S / 2)
        with open(log, "a") as out:
            out.write(f"{time.monotonic()} end solo{i}\n")
        stretch.after(next_alone=i < tests - 1)


def test_a_stretch_of_alone_tests_keeps_the_cluster_from_its_first_to_its_last(
        tmp_path: Path) -> None:
    log = tmp_path / "turns.log"
    log.touch()
    context = multiprocessing.get_context("spawn")
    solo = context.Process(target=alone_stretch, args=(str(tmp_path), str(log), 3))
    solo.start()
    until("the stretch begun", lambda: "start solo0" in log.read_text())
    other = context.Process(target=take_turn, args=(str(tmp_path), False, str(log), "other"))
    other.start()
    for proc in (solo, other):
        proc.join(30)
        assert proc.exitcode == 0
    seen = spans(log)
    assert seen["other"][0] >= seen["solo2"][1], seen  # not between two of the stretch
