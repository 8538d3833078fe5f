"""Training data streamed from HDFS into ``tf.data``, each task reading its own files.

    from tfyarn.data import tfrecord_dataset
    dataset = tfrecord_dataset("hdfs:///user/me/train/part-*.tfrecord").map(parse).batch(64)

Each reader (the chief and the workers) gets every n-th file of the sorted matches, n being
the number of readers, so no two read the same file; TF_CONFIG says which task this is (tfyarn
sets it in every task, as does examples/run_local.py), or give ``shard_index`` and
``shard_count``. A process without TF_CONFIG reads every file. The files are read through
HDFS's native client in large reads (hdfs-native: no JVM, no libhdfs), which TensorFlow 2.21
cannot do itself. Needs TensorFlow and hdfs-native; tfyarn ships this package with every job,
so a packed env needs nothing more.

For data small enough to copy to every node, list it in ``site.global.data`` instead (YARN
localizes it; the script reads local files from ``--data_dir``).
"""

from __future__ import annotations

from tfyarn.data.dataset import read_tfrecords, task_files, tfrecord_dataset
from tfyarn.data.hdfs import list_files, open_file
from tfyarn.data.records import RecordError, record_batches
from tfyarn.data.shards import Shard, ShardError, assign, task_shard

__all__ = ["RecordError", "Shard", "ShardError", "assign", "list_files", "open_file",
           "read_tfrecords", "record_batches", "task_files", "task_shard", "tfrecord_dataset"]
