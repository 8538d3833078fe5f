"""What building tfyarn's patched skein AppMaster into the package costs, where the package is
built (never where it is used): `python -m tfyarn.amjarbuild` from an empty jar cache (pip
downloads skein's sdist and wheel, patch, javac against the Hadoop 3.3.6 API jars, which are
taken from the local cluster's Maven cache as they are: fetching them is the local cluster's
cost) and again with the jar cached (a copy). Prints the seconds of each, the jar's size and
skein's own jar's.

    python -m bench.am_build [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tfyarn.hadoop import amjar
from tfyarn.localyarn.layout import cache_root


def timed_build(cache: Path, into: Path) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "tfyarn.amjarbuild", "--into", str(into)],
                   env={**os.environ, "XDG_CACHE_HOME": str(cache)}, check=True,
                   capture_output=True, timeout=900)
    return time.monotonic() - started


def main(runs: int) -> None:
    hadoop = cache_root() / f"hadoop-{amjar.HADOOP_API}"
    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as scratch:
            cache = Path(scratch) / "cache"
            (cache / "tfyarn").mkdir(parents=True)
            if hadoop.is_dir():  # the Hadoop jars as the local cluster fetched them
                (cache / "tfyarn" / hadoop.name).symlink_to(hadoop)
            cold.append(timed_build(cache, Path(scratch) / "a"))
            warm.append(timed_build(cache, Path(scratch) / "b"))
            size = (Path(scratch) / "a" / amjar.jar_name()).stat().st_size
    print(f"{amjar.jar_name()}: {size / 1e6:.1f} MB (skein's own jar "
          f"{amjar.skein_jar().stat().st_size / 1e6:.1f} MB)")
    print(f"built (downloads, patch, javac): median {statistics.median(cold):.1f} s "
          f"{[round(s, 1) for s in cold]}; cached (a copy): median "
          f"{statistics.median(warm):.1f} s {[round(s, 1) for s in warm]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
