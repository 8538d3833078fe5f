"""A bench task (bench/hdfs_data.py): how fast one task reads TFRecords, three ways.

Run by tfyarn as a job's only task (a chiefworker): reads the TFRecords YARN localized into
its data dir (TFYARN_DATA_DIR, from ``--data``) with tf.data, the same files streamed from
HDFS by tfyarn.data (one record per generator element, and in batches), and writes the
figures to <work_dir>/read.json (mirrored to HDFS by tfyarn). Without a data dir it only
writes that it ran (the baseline job).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time


def timed_bytes(tf, dataset) -> tuple[int, float]:
    """(bytes, seconds) to read the dataset's records through a training-like pipeline:
    batches of 1024, counted in TensorFlow (a Python loop per record would be the limit)."""
    sizes = dataset.batch(1024).map(lambda batch: tf.reduce_sum(tf.strings.length(batch)))
    started = time.perf_counter()
    total = sum(int(n) for n in sizes.as_numpy_iterator())
    return total, time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--stream", default="", help="hdfs:// glob of the same files")
    args, _tfyarn_flags = parser.parse_known_args(argv)
    figures: dict[str, object] = {"host": os.environ.get("NM_HOST")}
    data_dir = os.environ.get("TFYARN_DATA_DIR")
    if data_dir:
        import tensorflow as tf

        from tfyarn.data import read_tfrecords, task_files

        local = sorted(glob.glob(os.path.join(data_dir, "bench", "*.tfrecord")))
        figures["localized"] = timed_bytes(tf, tf.data.TFRecordDataset(local))
        remote = task_files(args.stream, 0, 1)
        figures["streamed"] = timed_bytes(tf, read_tfrecords(remote))
        # one record per element, on one file only (it is slow)
        figures["streamed_one_record"] = timed_bytes(tf, read_tfrecords(remote[:1],
                                                                    batch_records=1))
    with open(os.path.join(args.work_dir, "read.json"), "w") as out:
        json.dump(figures, out)
    print("bench-data " + json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
