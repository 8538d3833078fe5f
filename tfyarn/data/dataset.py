"""The ``tf.data.Dataset`` of one task's TFRecords on HDFS."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence

from tfyarn.data import shards
from tfyarn.data.hdfs import list_files, open_file
from tfyarn.data.records import BATCH_RECORDS, READ_BYTES, record_batches


def task_files(patterns: str | Iterable[str], shard_index: int | None = None,
               shard_count: int | None = None) -> list[str]:
    """The files this task reads: its share of the sorted matches (see tfrecord_dataset)."""
    shard = shards.resolve(shard_index, shard_count)
    return shards.assign(list_files(patterns), shard)


def tfrecord_dataset(patterns: str | Iterable[str], *, shard_index: int | None = None,
                     shard_count: int | None = None, shuffle_files: bool = False,
                     seed: int | None = None, **reading):
    """A ``tf.data.Dataset`` of the serialized records (scalar tf.string) of this task's
    files among those matching ``patterns`` (hdfs:// or viewfs:// globs, or directories),
    listed once, now. ``shuffle_files`` reorders this task's files (with ``seed``);
    ``reading`` goes to read_tfrecords."""
    files = task_files(patterns, shard_index, shard_count)
    if shuffle_files:
        random.Random(seed).shuffle(files)
    return read_tfrecords(files, **reading)


def _batches(url: str, compression: str | None, read_bytes: int,
             batch_records: int) -> Iterator[list[bytes]]:
    with open_file(url, compression) as stream:
        yield from record_batches(stream, url, read_bytes, batch_records)


def read_tfrecords(files: Sequence[str], *, files_in_parallel: int = 1,
                   compression: str | None = None, read_bytes: int = READ_BYTES,
                   batch_records: int = BATCH_RECORDS):
    """The records of these files on HDFS, in order (no sharding): ``files_in_parallel``
    > 1 interleaves that many files; ``compression="GZIP"`` reads gzipped TFRecord files.
    Records enter TensorFlow ``batch_records`` at a time: one by one costs more than reading."""
    import tensorflow as tf  # the caller's TensorFlow; nothing else here needs it

    def one_file(url) -> tf.data.Dataset:
        return tf.data.Dataset.from_generator(
            lambda u: _batches(u.decode(), compression, read_bytes, batch_records),
            output_signature=tf.TensorSpec([None], tf.string), args=(url,)).unbatch()

    names = tf.data.Dataset.from_tensor_slices(tf.constant(list(files), tf.string))
    if files_in_parallel <= 1:
        return names.flat_map(one_file)
    return names.interleave(one_file, cycle_length=files_in_parallel,
                            num_parallel_calls=files_in_parallel, deterministic=True)
