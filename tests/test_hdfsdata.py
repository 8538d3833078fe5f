"""tfyarn.data without a cluster: which files a task reads, TFRecord framing, the shipped copy."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tfyarn.data import RecordError, Shard, ShardError, assign, record_batches, task_shard
from tfyarn.data.shards import resolve
from tfyarn.submission.appspec import reader_package

CLUSTER = {"chief": ["c:1"], "worker": ["w0:1", "w1:1", "w2:1"], "ps": ["p:1"]}


def tf_config(kind: str, index: int, cluster: dict = CLUSTER) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})}


def test_readers_numbered_as_task_index_numbers_them() -> None:
    assert task_shard(tf_config("chief", 0)) == Shard(0, 4)
    assert [task_shard(tf_config("worker", i)) for i in range(3)] == [
        Shard(1, 4), Shard(2, 4), Shard(3, 4)]
    no_chief = {"worker": ["w0:1", "w1:1"], "ps": ["p:1"]}  # Slider's package: worker 0 leads
    assert task_shard(tf_config("worker", 1, no_chief)) == Shard(1, 2)
    assert task_shard({}) == Shard(0, 1)  # a plain python process reads everything


@pytest.mark.parametrize(("environ", "fragment"), [
    (tf_config("ps", 0), "a ps task reads no training data"),
    (tf_config("worker", 3), "not in its cluster"),
    ({"TF_CONFIG": "{not json"}, "not TensorFlow's cluster description"),
    ({"TF_CONFIG": '{"cluster": {}}'}, "not TensorFlow's cluster description"),
])
def test_no_shard_without_a_reader_task(environ: dict[str, str], fragment: str) -> None:
    with pytest.raises(ShardError, match=fragment) as info:
        task_shard(environ)
    assert "Fix: " in str(info.value)


def test_explicit_shard_wins_and_is_checked() -> None:
    assert resolve(2, 5, tf_config("ps", 0)) == Shard(2, 5)
    assert resolve(None, None, tf_config("worker", 0)) == Shard(1, 4)
    for index, count in ((1, None), (None, 2), (2, 2), (-1, 2), (0, 0)):
        with pytest.raises(ShardError):
            resolve(index, count, {})


def test_every_file_read_by_exactly_one_reader() -> None:
    files = [f"hdfs:///d/part-{i:02d}" for i in reversed(range(10))]
    shares = [assign(files, Shard(i, 4)) for i in range(4)]
    assert shares[0] == ["hdfs:///d/part-00", "hdfs:///d/part-04", "hdfs:///d/part-08"]
    assert sorted(f for share in shares for f in share) == sorted(files)
    assert {len(share) for share in shares} == {2, 3}
    with pytest.raises(ShardError, match="2 file.s. for 3 readers"):
        assign(files[:2], Shard(0, 3))


def framed(records: list[bytes]) -> bytes:
    """TFRecord framing (CRCs left zero: the reader does not check them)."""
    return b"".join(struct.pack("<QI", len(r), 0) + r + b"\0" * 4 for r in records)


@pytest.mark.parametrize("read_bytes", [1, 7, 100, 1 << 20])
def test_records_cut_out_of_large_reads(read_bytes: int) -> None:
    records = [bytes([i % 256]) * (i * 13 % 200) for i in range(500)]  # empty ones too
    batches = list(record_batches(io.BytesIO(framed(records)), "f", read_bytes, 64))
    assert [r for batch in batches for r in batch] == records
    assert [len(b) for b in batches] == [64] * 7 + [52]


def test_truncated_or_foreign_files_refused() -> None:
    data = framed([b"a" * 100, b"b" * 100])
    with pytest.raises(RecordError, match="ends inside a record"):
        list(record_batches(io.BytesIO(data[:-10]), "hdfs:///d/f"))
    with pytest.raises(RecordError, match="not an uncompressed TFRecord file"):
        list(record_batches(io.BytesIO(b"\x1f\x8b\x08\x00" + b"\xff" * 20), "hdfs:///d/f.gz"))
    assert list(record_batches(io.BytesIO(b""), "empty")) == []


def test_shipped_reader_imports_with_the_standard_library_only(tmp_path: Path) -> None:
    """What tfyarn ships with a job: tfyarn.data (and tfyarn.preemption, tfyarn.progress,
    tfyarn.jaxcluster and the sitecustomize a JAX process starts with), importable in a
    Python without tfyarn's other modules (or any site-packages: -S); hdfs-native and
    TensorFlow are only imported when data is read."""
    package = reader_package(tmp_path)
    assert sorted(p.name for p in package.iterdir()) == [
        "__init__.py", "data", "jaxcluster.py", "jaxstartup", "preemption.py", "progress.py"]
    assert sorted(p.name for p in (package / "jaxstartup").iterdir()) == ["sitecustomize.py"]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import tfyarn.data as d; "
            "print(d.__file__, d.task_shard({}), sorted(m for m in sys.modules "
            "if m.startswith(('tfyarn', 'hdfs_native', 'tensorflow'))))")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    assert out.startswith(f"{package}/data/__init__.py Shard(index=0, count=1)"), out
    assert "hdfs_native" not in out and "tensorflow" not in out, out
    # tfyarn.preemption and tfyarn.progress beside it, with the AppMaster's code (appmaster/,
    # in every container)
    code = ("import sys; sys.path[:0] = sys.argv[1:]; import tfyarn.preemption as p; "
            "import tfyarn.progress as s; s.report_step(1); "
            "print(p.__file__, p.notice_received())")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path),
                          str(Path(__file__).parent.parent)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    assert out == f"{package}/preemption.py False\n", out
