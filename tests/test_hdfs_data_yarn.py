"""Training data on HDFS, both ways, on the local YARN (many hosts, HDFS).

examples/make_tfrecords.py writes six TFRecord files to HDFS; examples/mnist1.py trains on
them (1 ps, the chief and 2 workers: three readers, two files each):

- streamed: ``--train_data hdfs:///…/*.tfrecord``, read by tfyarn.data, which tfyarn ships
  with the job;
- localized: ``site.global.data`` lists the directory as ``#mnist``; YARN copies it into
  every task and the script reads ``<--data_dir>/mnist/*.tfrecord`` from the local disk.

Each reader records the files it read (flags/worker_<i>.json in its container's work dir):
they must be disjoint and cover the data. The streamed way also runs without YARN
(examples/run_local.py). Bad data entries are refused before submitting.
"""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from jobtools import EXAMPLES, Run, cluster_user, prepare_job, refused, submit_and_wait

from appmaster.common.storage import RemoteDir
from tfyarn.data import list_files, open_file, record_batches

pytestmark = pytest.mark.yarn

FILES = 6
STEPS = "60"


@pytest.fixture(scope="module")
def train_data(yarn_cluster) -> str:
    """The example's TFRecords on this cluster's HDFS, written by the example's own writer;
    the directory's URL."""
    url = f"{yarn_cluster.layout.default_fs}/user/{cluster_user()}/tfyarn-test-data/mnist"
    subprocess.run([sys.executable, str(EXAMPLES / "make_tfrecords.py"), url, "--files",
                    str(FILES), "--records", "300"], check=True, capture_output=True,
                   env=yarn_cluster.env, timeout=300)
    return url


def reads(run: Run) -> dict[str, list[str]]:
    """What each reader (the chief is worker_0) recorded as the files it trained on."""
    found = {}
    for path in run.files.glob("flags/worker_*.json"):
        record = json.loads(path.read_text())
        found[path.stem] = record["flags"]["train_files"]
    return found


def assert_each_reader_had_its_own_files(run: Run) -> dict[str, list[str]]:
    assert run.returncode == 0, run.output
    files = reads(run)
    assert sorted(files) == ["worker_0", "worker_1", "worker_2"], files
    names = [Path(f).name for task in files.values() for f in task]
    assert sorted(names) == [f"part-{i:05d}.tfrecord" for i in range(FILES)], files  # no repeat
    assert all(len(task) == FILES // 3 for task in files.values()), files
    assert run.files.remote_json("result.json")["global_step"] >= int(STEPS)
    return files


def test_streamed_from_hdfs(yarn_cluster, tmp_path: Path, train_data: str) -> None:
    resources, app = prepare_job(tmp_path, args=["--train_data", f"{train_data}/*.tfrecord",
                                                 "--train_steps", STEPS])
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app)
    print(f"streamed: {run.seconds:.1f} s")
    for task in assert_each_reader_had_its_own_files(run).values():
        assert all(f.startswith(f"{train_data}/part-") for f in task), task


def test_localized_by_yarn(yarn_cluster, tmp_path: Path, train_data: str) -> None:
    resources, app = prepare_job(tmp_path, args=["--train_data", "mnist/*.tfrecord",
                                                 "--train_steps", STEPS],
                                 settings={"data": [f"{train_data}#mnist"]})
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app)
    print(f"localized: {run.seconds:.1f} s")
    for name, task in assert_each_reader_had_its_own_files(run).items():
        record = json.loads(run.files.glob(f"flags/{name}.json")[0].read_text())
        data_dir = next(a.split("=", 1)[1] for a in record["argv"] if a.startswith("--data_dir="))
        assert all(f.startswith(f"{data_dir}/mnist/part-") for f in task), (data_dir, task)
        assert all(Path(f).is_file() for f in task), task  # on the task's own disk


def test_streamed_without_tfyarn_by_run_local(yarn_cluster, tmp_path: Path,
                                             train_data: str) -> None:
    """No YARN and no agent: examples/run_local.py starts the tasks with TF_CONFIG only, and
    tfyarn.data shards by it all the same."""
    work = tmp_path / "work"
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "run_local.py"), str(EXAMPLES / "mnist1.py"), "--ps",
         "1", "--workers", "2", "--work-dir", str(work), "--timeout", "240", "--",
         "--train_data", f"{train_data}/*.tfrecord", "--train_steps", STEPS],
        env=yarn_cluster.env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    files = {p.stem: json.loads(p.read_text())["flags"]["train_files"]
             for p in (work / "flags").glob("worker_*.json")}
    names = sorted(Path(f).name for task in files.values() for f in task)
    assert names == [f"part-{i:05d}.tfrecord" for i in range(FILES)], files
    assert json.loads((work / "result.json").read_text())["global_step"] >= int(STEPS)


def test_missing_or_bad_data_refused_before_submit(yarn_cluster, tmp_path: Path,
                                                   train_data: str) -> None:
    missing = f"{train_data}-nowhere"
    resources, app = prepare_job(tmp_path, settings={"data": [f"{train_data}#mnist",
                                                              f"{missing}#more"]})
    message = refused(yarn_cluster, resources, app, "site.global.data")
    assert f"{missing}#more: no such file or directory" in message and "hdfs dfs -put" in message
    assert f"{train_data}#mnist" not in message  # the one that exists is not blamed
    message = refused(yarn_cluster, resources, app, "--data",
                      options=("--data", f"{train_data}#mnist", "--data", f"{missing}.tgz"))
    assert f"{missing}.tgz#mnist-nowhere.tgz: no such file" in message
    message = refused(yarn_cluster, resources, app, "--data",
                      options=("--data", "/data/mnist", "--data", f"{train_data}#mnist"))
    assert "command line: --data = \"/data/mnist\": not on the cluster's file system" in message
    assert "Fix: give an hdfs://" in message


def test_patterns_directories_and_gzip_on_hdfs(yarn_cluster) -> None:
    """tfyarn.data's listing and reading against the real NameNode, without TensorFlow."""
    url = f"{yarn_cluster.layout.default_fs}/user/{cluster_user()}/tfyarn-test-list-" \
          f"{uuid.uuid4().hex[:8]}"
    root = RemoteDir(url)
    records = [b"first", b"", b"third" * 100]
    framed = b"".join(struct.pack("<QI", len(r), 0) + r + b"\0" * 4 for r in records)
    try:
        for name in ("a/part-0", "a/part-1", "a/_SUCCESS", "a/.hidden", "b/part-0"):
            root.write_bytes(name, framed)
        root.write_bytes("c/part-0.gz", gzip.compress(framed))
        assert list_files(f"{url}/a") == [f"{url}/a/part-0", f"{url}/a/part-1"]
        assert list_files(f"{url}/*/part-0") == [f"{url}/a/part-0", f"{url}/b/part-0"]
        assert list_files([f"{url}/a/part-[1]", f"{url}/?/part-1"]) == [f"{url}/a/part-1"]
        with pytest.raises(FileNotFoundError, match="no file matches .*Fix: "):
            list_files(f"{url}/a/none-*")
        with open_file(f"{url}/c/part-0.gz", compression="GZIP") as stream:
            assert [r for batch in record_batches(stream, "gz") for r in batch] == records
        with open_file(f"{url}/a/part-0") as stream:
            assert next(record_batches(stream, "plain")) == records
    finally:
        root.client.delete(root.root, recursive=True)
