"""What each test of the suite costs in CPU, which is its time on a CPU-bound 2-core machine.

    python -m bench.suite_cpu sample lanes.jsonl &
    PYTEST_ADDOPTS=-v bash .ci/run 2>&1 |
      while IFS= read -r line; do echo "$(date +%s) $line"; done > suite.log
    kill %1
    python -m bench.suite_cpu report lanes.jsonl suite.log [--top N]

`sample` reads every process's CPU every 2 s and charges it to a lane: the pytest-xdist
worker named by PYTEST_XDIST_WORKER in its environment, or else its parent's lane, so a
lane's daemons, the containers under its NodeManagers and the commands its tests run all
count for the lane; it writes each lane's cumulative CPU-s (in all and by kind of process)
as one JSON line a sample. A process already running when sampling starts (the machine's
own services among them) counts only its CPU from then on. A lane runs one test at a time,
so `report` charges a test its lane's CPU between the test's result line in the log and the
lane's previous one, fixture set-up included. Processes shorter than a sample are missed.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import re
import sys
import time
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 2.0
NO_LANE = "-"
JAVA_KINDS = ("NameNode", "DataNode", "ResourceManager", "NodeManager",
              "skein.ApplicationMaster", "skein.Driver", "LogsCLI")
RESULT = re.compile(r"\[(gw\d+)\] \[\s*\d+%\] (PASSED|FAILED|ERROR|SKIPPED|RERUN|XFAIL|XPASS) "
                    r"(\S+)")


def kind(cmdline: str) -> str:
    """What sort of process this is, from its command line (NUL-separated)."""
    argv = cmdline.split("\0")
    whole = " ".join(argv)
    program = os.path.basename(argv[0])
    if program == "java" or argv[0].endswith("/java"):
        return next((k for k in JAVA_KINDS if k in whole), "java")
    if program.startswith("python"):
        for marker, name in (("hostview", "NodeManager"), ("xdist", "pytest"),
                             ("pytest", "pytest"), ("appmaster.agent", "agent"),
                             ("appmaster", "appmaster"), ("tfyarn.cli", "cli")):
            if marker in whole:
                return name
        return "python"
    return program[:20]


def environ_lane(pid: str) -> str | None:
    try:
        variables = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((v.split(b"=", 1)[1].decode() for v in variables
                 if v.startswith(b"PYTEST_XDIST_WORKER=")), None)


def sample(timeline: Path) -> None:
    # (pid, start time) -> [lane, kind, ticks, its ticks when first seen by the first sweep]
    seen: dict[tuple[str, str], list] = {}
    lane_of: dict[str, str] = {}
    first_sweep = True
    with timeline.open("w") as out:
        while True:
            began = time.time()
            processes = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                except OSError:
                    continue
                fields = stat[stat.rindex(")") + 2:].split()
                cpu_ticks = int(fields[11]) + int(fields[12])  # user + system
                processes.append((int(fields[19]), pid, fields[1], cpu_ticks))
            for start, pid, parent, ticks in sorted(processes):  # parents before children
                key = (pid, str(start))
                if key not in seen:
                    try:
                        cmdline = Path(f"/proc/{pid}/cmdline").read_text()
                    except OSError:
                        continue
                    if not cmdline:
                        continue  # a kernel thread
                    lane_of[pid] = environ_lane(pid) or lane_of.get(parent, NO_LANE)
                    seen[key] = [lane_of[pid], kind(cmdline), 0, ticks if first_sweep else 0]
                seen[key][2] = ticks
            first_sweep = False
            totals: collections.Counter[str] = collections.Counter()
            for lane, sort, ticks, before in seen.values():
                totals[lane] += (ticks - before) / HZ
                totals[f"{lane}:{sort}"] += (ticks - before) / HZ
            out.write(json.dumps({"t": round(began, 1),
                                  **{k: round(v, 1) for k, v in totals.items()}}) + "\n")
            out.flush()
            time.sleep(max(0.2, SAMPLE_S - (time.time() - began)))


def report(timeline: Path, log: Path, top: int) -> None:
    samples = [json.loads(line) for line in timeline.read_text().splitlines()]
    times = [s["t"] for s in samples]

    def at(moment: float, key: str) -> float:
        return samples[min(bisect.bisect_left(times, moment), len(samples) - 1)].get(key, 0.0)

    results: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for line in log.read_text(errors="replace").splitlines():
        stamp, _, text = line.partition(" ")  # each line timestamped: `<epoch s> <line>`
        match = RESULT.search(text)
        if match and stamp.isdigit():
            results[match.group(1)].append((float(stamp), match.group(3)))
    kinds = sorted({k.split(":", 1)[1] for s in samples for k in s if ":" in k})
    rows = []
    for lane, ends in results.items():
        previous = times[0]
        for moment, test in ends:
            by_kind = {k: at(moment, f"{lane}:{k}") - at(previous, f"{lane}:{k}") for k in kinds}
            rows.append((at(moment, lane) - at(previous, lane), moment - previous, test, by_kind))
            previous = moment
    rows.sort(key=lambda row: -row[0])
    print(f"charged to tests: {sum(r[0] for r in rows):.0f} CPU-s; to no lane: "
          f"{samples[-1].get(NO_LANE, 0):.0f} CPU-s")
    for cpu, wall, test, by_kind in rows[:top]:
        largest = ", ".join(f"{k} {v:.0f}" for k, v in sorted(
            by_kind.items(), key=lambda item: -item[1])[:4] if v >= 1)
        print(f"{cpu:7.1f} CPU-s {wall:6.0f} s  {test}  [{largest}]")
    files: collections.Counter[str] = collections.Counter()
    for cpu, _, test, _ in rows:
        files[test.split("::")[0]] += cpu
    print("\nby module:")
    for name, cpu in files.most_common(top):
        print(f"{cpu:8.1f} CPU-s  {name}")
    # the whole run's CPU by kind of process, every lane's and no lane's (the set-up, the
    # other Pythons): what the benchmarks' tables of a run give
    processes: collections.Counter[str] = collections.Counter()
    for key, cpu in samples[-1].items():
        if ":" in key:
            processes[key.split(":", 1)[1]] += cpu
    print("\nby kind of process:")
    for name, cpu in processes.most_common(top):
        print(f"{cpu:8.1f} CPU-s  {name}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("sample").add_argument("timeline", type=Path)
    reporting = commands.add_parser("report")
    reporting.add_argument("timeline", type=Path)
    reporting.add_argument("log", type=Path, help="pytest -v's output, each line prefixed "
                           "with its epoch second")
    reporting.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    if args.command == "sample":
        sample(args.timeline)
    else:
        report(args.timeline, args.log, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
