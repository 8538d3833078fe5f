"""Tables and plots from bench/results/*.json.

    python -m bench.report [--results bench/results]   # prints Markdown tables, writes PNGs

Every figure is a median over the repetitions (min–max in brackets in the tables). A
phase is the difference of two milestones of the same run; medians of phases need not add
up to the median of the whole.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.common import RESULTS
from bench.plots import plot_floors, plot_recovery, plot_rendezvous, plot_seed
from bench.results import load
from bench.tables import (
    before_after,
    floors_tables,
    light_tables,
    print_seed_summary,
    recovery_tables,
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    opts = parser.parse_args(argv)
    res = opts.results
    recovery = None
    if (seed := load(res, "seed_job")) is not None:
        print("## Seed job\n")
        print_seed_summary(seed)
        plot_seed(seed, res / "seed_job.png")
    light = load(res, "rendezvous")
    if light is not None:
        print("\n## Rendezvous at scale\n")
        print(light_tables(light))
        plot_rendezvous(light, res / "rendezvous.png")
    if seed is not None or light is not None:
        print("\n## Floors\n")
        print(floors_tables(seed, light))
        plot_floors(seed, light, res / "floors.png")
    if (recovery := load(res, "recovery")) is not None:
        print("\n## Recovery\n")
        print(recovery_tables(recovery))
        plot_recovery(recovery, res / "recovery.png")
    table = before_after(seed, light, recovery)
    if table:
        print("\n## The variants side by side\n")
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
