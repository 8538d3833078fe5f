"""Training data for the examples as TFRecords: written to HDFS, read back streamed or local.

Each record is a tf.train.Example with "x" (N_FEATURES floats) and "y" (the teacher's label),
the same task mnist1.py's synthetic batches pose, so the loss falls the same way. Travels
with the scripts; TensorFlow is passed in, never imported here.
"""

from __future__ import annotations

import getpass
import glob
import os
from types import ModuleType

from example_support import N_FEATURES


def expand_user(path: str) -> str:
    """$USER (or ${USER}) filled in, also where the shell has no USER set."""
    os.environ.setdefault("USER", getpass.getuser())
    return os.path.expandvars(path)


def shard_files(train_data: str, data_dir: str | None) -> list[str]:
    """This task's share of the files: an hdfs:// glob is listed on HDFS (streamed later); a
    relative glob is looked up in --data_dir, where YARN localized site.global.data."""
    from tfyarn.data import assign, task_files, task_shard

    pattern = expand_user(train_data)  # e.g. hdfs:///user/$USER/...
    if "://" in pattern:
        return task_files(pattern)
    if not data_dir:
        raise SystemExit(f"--train_data {train_data}: a local glob needs --data_dir (list the "
                         "data in site.global.data, or give an hdfs:// glob)")
    found = glob.glob(os.path.join(data_dir, pattern))
    if not found:
        raise SystemExit(f"no file matches {pattern} in {data_dir}: {os.listdir(data_dir)}")
    return assign(found, task_shard())


def batches(tf: ModuleType, files: list[str], batch_size: int):
    """(x, labels) tensors of the next batch, cycling over the files for ever."""
    if "://" in files[0]:
        from tfyarn.data import read_tfrecords

        records = read_tfrecords(files)
    else:
        records = tf.data.TFRecordDataset(files)
    spec = {"x": tf.io.FixedLenFeature([N_FEATURES], tf.float32),
            "y": tf.io.FixedLenFeature([], tf.int64)}
    dataset = records.repeat().batch(batch_size).map(
        lambda serialized: tf.io.parse_example(serialized, spec))
    example = tf.compat.v1.data.make_one_shot_iterator(dataset.prefetch(2)).get_next()
    return example["x"], example["y"]


def write_files(tf: ModuleType, np: ModuleType, directory: str, files: int, records: int,
                seed: int = 0) -> list[str]:
    """``files`` TFRecord files of ``records`` examples each in a local directory."""
    from example_support import teacher_weights

    teacher = teacher_weights(np)
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    paths = []
    for index in range(files):
        path = os.path.join(directory, f"part-{index:05d}.tfrecord")
        x = rng.normal(size=(records, N_FEATURES)).astype(np.float32)
        labels = np.argmax(x @ teacher, axis=1)
        with tf.io.TFRecordWriter(path) as writer:
            for features, label in zip(x, labels, strict=True):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=features)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))}))
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths
