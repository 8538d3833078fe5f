#!/usr/bin/env python
"""Write the examples' TFRecord training data to HDFS (or a local directory).

    python examples/make_tfrecords.py hdfs:///user/$USER/tfyarn-example/mnist --files 6

Writes FILES files of RECORDS MNIST-shaped examples each (x: 784 floats, y: a label; about
3.2 kB a record), uploads them with HDFS's native client (no JVM), in parallel, and prints
their URLs. examples/hdfs_data/ trains on them, streamed or localized.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # example_data, from anywhere
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # appmaster, from a checkout

from example_data import expand_user, write_files  # noqa: E402


def upload(paths: list[str], target: str) -> list[str]:
    from appmaster.common.storage import RemoteDir

    remote = RemoteDir(target)
    remote.make()

    def one(path: str) -> str:
        with open(path, "rb") as source:
            remote.upload(source, os.path.basename(path))
        return f"{target.rstrip('/')}/{os.path.basename(path)}"

    with ThreadPoolExecutor(8) as pool:  # each HDFS close waits ~0.5 s: overlap them
        return list(pool.map(one, paths))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", help="hdfs:// directory (or a local one)")
    parser.add_argument("--files", type=int, default=6, help="files to write")
    parser.add_argument("--records", type=int, default=2000, help="examples per file")
    args = parser.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    target = expand_user(args.target)
    if "://" not in target:
        paths = write_files(tf, np, target, args.files, args.records)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            paths = upload(write_files(tf, np, tmp, args.files, args.records), target)
    print("\n".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
