"""Training data on HDFS: how fast one task reads it, and what localizing it costs.

A dataset of ``--size-mb`` MB of TFRecords (8 files of 3 kB records, random bytes) is read:

- local: tf.data.TFRecordDataset on a local copy, in this process (the floor);
- streamed, here: tfyarn.data over the same files on HDFS, in this process;
- in a YARN task (a job of one chiefworker running bench/data_task/read_data.py, the dataset
  given with ``tfyarn submit --data``): localized (TFRecordDataset on the copy YARN made in the
  task's data dir), streamed (tfyarn.data, batches of 1024 records) and streamed one record
  per generator element (one file only);
- localization: the task container's LOCALIZING -> SCHEDULED time in its NodeManager's log,
  for a job with the dataset uploaded afresh (nothing cached), the same dataset again (cached,
  if YARN puts the task on the same node) and a job without data.

Medians of ``--runs`` reads here, and of ``--runs`` rounds of the three jobs (each round on a
fresh copy of the dataset on HDFS). On the local cluster every
"host" is this machine, so the reads come from the page cache: network-free figures, the
most each path can give. Nothing is asserted; the HDFS files are removed at the end.

    python -m bench.hdfs_data [--size-mb 100] [--runs 3]      # on the running local cluster
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from appmaster.common.storage import RemoteDir
from bench.cluster import Cluster
from bench.common import log, write_job_files
from bench.data_task.read_data import timed_bytes
from bench.results import machine_info, save
from bench.stats import median

MB = 2**20
FILES = 8
RECORD = 3 * 1024  # about one MNIST-shaped tf.train.Example
TASK_DIR = Path(__file__).with_name("data_task")
OUT = Path(__file__).with_name("results") / "hdfs_data" / "results.json"
_TRANSITION = re.compile(r"^(\S+ \S+) INFO .*Container (container_\S+) transitioned from "
                         r"(LOCALIZING to \S+|NEW to LOCALIZING)")


def write_dataset(directory: Path, size_mb: int) -> list[Path]:
    import tensorflow as tf

    per_file = size_mb * MB // FILES // RECORD
    paths = []
    for index in range(FILES):
        path = directory / f"part-{index:05d}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for _ in range(per_file):
                writer.write(os.urandom(RECORD))
        paths.append(path)
    return paths


def upload(paths: list[Path], url: str) -> None:
    remote = RemoteDir(url)
    remote.make()

    def one(path: Path) -> None:
        with open(path, "rb") as source:
            remote.upload(source, path.name)

    with ThreadPoolExecutor(FILES) as pool:
        list(pool.map(one, paths))


def mb_per_s(total_bytes: int, seconds: float) -> float:
    return round(total_bytes / MB / seconds, 1)


def read_here(paths: list[Path], url: str, runs: int) -> dict[str, float | None]:
    """Local TFRecordDataset and tfyarn.data streaming, in this process: MB/s medians."""
    import tensorflow as tf

    from tfyarn.data import read_tfrecords, task_files

    def rate(dataset) -> float:
        return mb_per_s(*timed_bytes(tf, dataset))

    remote = task_files(f"{url}/*.tfrecord", 0, 1)
    return {
        "local_mb_s": median(rate(tf.data.TFRecordDataset([str(p) for p in paths]))
                             for _ in range(runs)),
        "streamed_here_mb_s": median(rate(read_tfrecords(remote)) for _ in range(runs)),
    }


def job_files(directory: Path) -> tuple[Path, Path]:
    """One chiefworker (no ps, no workers) running the bench task."""
    resources = {"components": {"chiefworker": {
        "yarn.role.priority": "1", "yarn.component.instances": "1", "yarn.memory": "1024",
        "yarn.vcores": "1"}}}
    app = {"global": {"site.global.user.scripts.dir": str(TASK_DIR),
                      "site.global.user.scripts.entry": "read_data.py",
                      "site.global.app.name": "tfyarn-bench-data"}}
    return write_job_files(directory, resources, app)


def run_job(cluster: Cluster, job: tuple[Path, Path], url: str | None) -> str:
    """`tfyarn submit --wait`, with the dataset as --data when given; the application id."""
    options = [] if url is None else ["--data", f"{url}#bench"]
    args = json.dumps(["--stream", f"{url}/*.tfrecord"] if url else [])
    app = json.loads(job[1].read_text())
    app["global"]["site.global.user.scripts.args"] = json.loads(args)
    job[1].write_text(json.dumps(app))
    result = subprocess.run(
        [sys.executable, "-m", "tfyarn.cli.main", "submit", "--resources", str(job[0]),
         "--app-config", str(job[1]), "--wait", *options],
        env=cluster.env, capture_output=True, text=True, timeout=900)
    match = re.search(r"^Submitted (application_\d+_\d+)", result.stdout, re.MULTILINE)
    if result.returncode != 0 or not match:
        raise SystemExit(f"the bench job failed:\n{result.stdout}\n{result.stderr}")
    return match.group(1)


def localization_s(cluster: Cluster, app_id: str) -> dict[str, float]:
    """Each of the app's task containers (not the AppMaster's, number 1): seconds from
    LOCALIZING to the next state, from the NodeManagers' logs."""
    started: dict[str, datetime] = {}
    took: dict[str, float] = {}
    for path in sorted(cluster.layout.log_dir.glob("nm*.log")):
        for line in path.read_text(errors="replace").splitlines():
            match = _TRANSITION.match(line)
            if not match or app_id.removeprefix("application_") not in match.group(2):
                continue
            when = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f")
            container = match.group(2)
            if match.group(3).startswith("NEW"):
                started[container] = when
            elif container in started:
                took[f"{container} ({path.stem})"] = round(
                    (when - started[container]).total_seconds(), 2)
    return {c: s for c, s in took.items() if not c.split(" ")[0].endswith("_000001")}


def task_figures(app_id: str, user: str, default_fs: str) -> dict:
    """The task's read.json, mirrored to the job's work dir on HDFS."""
    data = RemoteDir(f"{default_fs}/user/{user}/tfyarn/jobs/{app_id}").read_bytes("read.json")
    figures = json.loads(data or b"{}")
    for way in ("localized", "streamed", "streamed_one_record"):
        if way in figures:
            total, seconds = figures.pop(way)
            figures[f"{way}_mb_s"] = mb_per_s(total, seconds)
            figures[f"{way}_mb"] = round(total / MB, 1)
    return figures


def summary(jobs: list[dict]) -> dict[str, float | None]:
    """Medians over the jobs: localization per case, and each way's read rate in the task."""
    out: dict[str, float | None] = {}
    for case in ("fresh", "again", "no_data"):
        out[f"localization_{case}_s"] = median(
            s for j in jobs if j["case"] == case for s in j["localization_s"].values())
    for way in ("localized", "streamed", "streamed_one_record"):
        out[f"task_{way}_mb_s"] = median(j.get(f"{way}_mb_s") for j in jobs)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3, help="reads here; rounds of jobs")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    cluster = Cluster.default()
    os.environ.update(cluster.env)  # hdfs-native finds the cluster through HADOOP_CONF_DIR
    from tfyarn.submission.environments import cluster_user

    user = cluster_user()
    base = f"{cluster.layout.default_fs}/user/{user}/tfyarn-bench/data-{uuid.uuid4().hex[:8]}"
    results: dict = {"machine": machine_info(), "size_mb": args.size_mb, "files": FILES,
                     "record_bytes": RECORD, "jobs": []}
    with tempfile.TemporaryDirectory(prefix="tfyarn-bench-data-") as tmp:
        paths = write_dataset(Path(tmp), args.size_mb)
        job = job_files(Path(tmp))
        try:
            for round_ in range(args.runs):
                url = f"{base}/{round_}"  # a new path: no node has it cached
                started = time.perf_counter()
                upload(paths, url)
                results.setdefault("upload_s", []).append(round(time.perf_counter() - started, 2))
                if round_ == 0:
                    results.update(read_here(paths, url, args.runs))
                    log(f"here: {results}")
                for case, data in (("fresh", url), ("again", url), ("no_data", None)):
                    app_id = run_job(cluster, job, data)
                    results["jobs"].append({
                        "case": case, "round": round_, "app_id": app_id,
                        "load_1min_after": round(os.getloadavg()[0], 1),
                        "localization_s": localization_s(cluster, app_id),
                        **task_figures(app_id, user, cluster.layout.default_fs)})
                    log(f"{case}: {results['jobs'][-1]}")
        finally:
            RemoteDir(base).client.delete(RemoteDir(base).root, recursive=True)
    results["summary"] = summary(results["jobs"])
    save(args.out, results)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
