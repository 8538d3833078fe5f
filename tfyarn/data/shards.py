"""Which part of the data one task reads: its shard of the readers, from TF_CONFIG.

Pure logic, no TensorFlow and no HDFS, so it is cheap to test. The readers are the tasks that
train on data: the chief and the workers, numbered as ``--task_index`` numbers them (the
chief first, as worker 0, when the job has one). Parameter servers read no data.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

READERS = ("chief", "worker")  # TF_CONFIG's task types that train on data


class ShardError(ValueError):
    """This task cannot tell which shard it reads; the message says what to give instead."""


@dataclass(frozen=True)
class Shard:
    index: int  # 0 .. count-1
    count: int


def task_shard(environ: Mapping[str, str] | None = None) -> Shard:
    """This task's shard among all readers, from TF_CONFIG (which tfyarn's agent and
    examples/run_local.py set); a process without TF_CONFIG reads everything."""
    environ = os.environ if environ is None else environ
    text = environ.get("TF_CONFIG")
    if not text:
        return Shard(0, 1)
    try:
        config = json.loads(text)
        cluster, task = config.get("cluster", {}), config["task"]
        kind, index = task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ShardError(f"TF_CONFIG is not TensorFlow's cluster description ({exc}). Fix: "
                         "give shard_index and shard_count.") from None
    if kind not in READERS:
        raise ShardError(f"a {kind} task reads no training data (TF_CONFIG says {kind} "
                         f"{index}). Fix: read data in the chief and the workers, or give "
                         "shard_index and shard_count.")
    chiefs = len(cluster.get("chief", ()))
    count = chiefs + len(cluster.get("worker", ()))
    position = index if kind == "chief" else chiefs + index
    if not 0 <= position < count:
        raise ShardError(f"TF_CONFIG's task {kind} {index} is not in its cluster. Fix: give "
                         "shard_index and shard_count.")
    return Shard(position, count)


def resolve(index: int | None, count: int | None,
            environ: Mapping[str, str] | None = None) -> Shard:
    """Explicit arguments win (both or neither); otherwise TF_CONFIG says."""
    if (index is None) != (count is None):
        raise ShardError("give shard_index and shard_count together (or neither: then "
                         "TF_CONFIG says).")
    if index is None or count is None:
        return task_shard(environ)
    if count < 1 or not 0 <= index < count:
        raise ShardError(f"shard_index {index} of shard_count {count}: the index must be "
                         "from 0 to shard_count - 1.")
    return Shard(index, count)


def assign(files: Sequence[str], shard: Shard) -> list[str]:
    """Every ``count``-th file of the sorted list, starting at ``index``: each file read by
    exactly one reader, the readers' shares differing by at most one file."""
    ordered = sorted(files)
    if shard.count > len(ordered):
        raise ShardError(f"{len(ordered)} file(s) for {shard.count} readers: some readers "
                         "would get no data. Fix: write the data in at least as many files as "
                         "there are readers (the chief and the workers), or give "
                         "shard_count=1 to read every file in every task.")
    return ordered[shard.index::shard.count]
