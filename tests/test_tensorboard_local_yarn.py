"""`tfyarn tensorboard APP` on the local YARN: a real job's event files copied from HDFS while
it trains and after it ended, served by a TensorBoard on this machine, stopped whole."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from jobtools import (
    TFYARN,
    JobFiles,
    ReleaseFile,
    app_state,
    interruptible,
    prepare_light_job,
    processes_with,
    run_tfyarn,
    wait_for,
)

from tfyarn.watch.eventcache import EventCache, HdfsEvents, is_event_file
from tfyarn.watch.tensorboard_local import free_port

pytestmark = pytest.mark.yarn

# The chief of tests/apps/light_task.py writes real event files (a loss every second) into
# train/ of its work dir, mirrored to the job's work dir on HDFS: TensorBoard's run "train".
# What is tested is the copy from HDFS, not TensorFlow's training: no TensorFlow to start.
# The job runs until the test has seen the copy follow it, then creates the release file.
RUN = "train"


def hdfs_events(files: JobFiles) -> dict[str, bytes]:
    remote = files.remote()
    return {path: remote.read_bytes(path) or b"" for path in remote.list_files()
            if is_event_file(path)}


def cached(cache: Path) -> dict[str, bytes]:
    return {p.relative_to(cache).as_posix(): p.read_bytes()
            for p in cache.rglob("events.out.tfevents.*")}


def scalar_tags(url: str) -> dict:
    try:
        return requests.get(f"{url}data/plugin/scalars/tags", timeout=5).json()
    except (requests.RequestException, ValueError):
        return {}


def test_tensorboard_follows_a_job_and_shows_it_after_the_end(yarn_cluster, tmp_path: Path):
    release = ReleaseFile.fresh(yarn_cluster.layout)
    res, app = prepare_light_job(
        tmp_path, ["--sleep", "600", "--release_file", release.url, "--summaries"],
        settings={"checkpoint.mirror.interval": "2"},
        components={"worker": {"yarn.component.instances": "0"}})
    submitted = run_tfyarn(yarn_cluster, "submit", "--resources", str(res), "--app-config",
                           str(app), "--detach", "--json")
    assert submitted.returncode == 0, submitted.stderr
    app_id = json.loads(submitted.stdout)["application_id"]
    files = JobFiles(yarn_cluster.layout, app_id)
    cache, out, err = tmp_path / "live", tmp_path / "tb.out", tmp_path / "tb.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        board = subprocess.Popen(
            [*TFYARN, "tensorboard", app_id, "--cache", str(cache),
             "--port", str(free_port("localhost")), "--interval", "1"],
            env=yarn_cluster.env, stdout=stdout, stderr=stderr, preexec_fn=interruptible)
    try:
        # Started once the chief's first summaries reached HDFS, while the job trains.
        def url_line() -> str | None:
            if board.poll() is not None:
                pytest.fail(f"tfyarn tensorboard exited {board.returncode}:\n{err.read_text()}")
            return next((x for x in out.read_text().splitlines()
                         if x.startswith("TensorBoard: ")), None)

        line = wait_for("TensorBoard's URL", url_line, timeout_s=300)
        url = line.removeprefix("TensorBoard: ")
        assert app_state(yarn_cluster, app_id) == "RUNNING"
        size_then = sum(len(b) for b in cached(cache).values())
        tags = wait_for("the chief's loss in TensorBoard",
                        lambda: "loss" in scalar_tags(url).get(RUN, {}) and
                        scalar_tags(url), timeout_s=120)
        assert RUN in requests.get(f"{url}data/runs", timeout=5).json()
        # The copy follows the running job: what the chief appended since comes down.
        wait_for("events appended while the job runs in the cache", lambda: sum(
            len(b) for b in cached(cache).values()) > size_then, timeout_s=60)
        assert app_state(yarn_cluster, app_id) == "RUNNING"
        release.touch()  # the chief exits 0: the job ends

        wait_for("the end of the job", lambda: "no more syncing" in err.read_text(),
                 timeout_s=300)
        assert app_state(yarn_cluster, app_id) == "FINISHED"
        # Every event file, byte for byte as on HDFS, after appends while the job ran.
        on_hdfs = hdfs_events(files)
        assert on_hdfs and cached(cache) == on_hdfs
        assert board.poll() is None, "TensorBoard stays up after the end"
        assert "loss" in tags[RUN]
        print(f"\nserved at {url} while RUNNING; stderr:\n{err.read_text()}")
    finally:
        release.touch()  # a failed test's job ends too
        board.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            board.wait(30)
        except subprocess.TimeoutExpired:
            board.kill()
            raise
        if app_state(yarn_cluster, app_id) not in ("FINISHED", "FAILED", "KILLED"):
            run_tfyarn(yarn_cluster, "kill", app_id)
    assert board.returncode == 0, err.read_text()
    assert "stopping TensorBoard" in err.read_text()
    # Neither TensorBoard nor its data server (both name the cache) is left.
    time.sleep(1)
    assert processes_with(str(cache)) == []

    # A finished job, once, as a script would: the path on stdout, the bytes as on HDFS.
    once = tmp_path / "once"
    copied = run_tfyarn(yarn_cluster, "tensorboard", app_id, "--once", "--cache", str(once),
                        timeout_s=180)
    assert copied.returncode == 0, copied.stderr
    assert copied.stdout.strip().splitlines()[-1] == str(once)
    assert cached(once) == hdfs_events(files)
    release.remove()


def test_incremental_copy_from_hdfs(yarn_cluster, tmp_path: Path) -> None:
    """Against HDFS itself: a file re-uploaded longer (as the mirror does) gets its new bytes."""
    import uuid

    url = f"{yarn_cluster.layout.default_fs}/tmp/tfyarn-test-events-{uuid.uuid4().hex}"
    source = HdfsEvents(url)
    name = "run/events.out.tfevents.1.host.1.0"
    first, more = bytes(range(256)) * 40, b"appended" * 1000
    source.remote.write_bytes(name, first)
    source.remote.write_bytes("run/model.ckpt-1.index", b"not copied")
    cache_dir = tmp_path / "cache"
    try:
        cache = EventCache(source, cache_dir)
        assert cache.sync().new == [name]
        source.remote.write_bytes(name, first + more)
        result = cache.sync()
        assert (result.grown, result.new) == (1, [])
        assert len(more) <= result.bytes <= len(more) + 64  # the new bytes and the overlap
        assert (cache_dir / name).read_bytes() == first + more
        assert cache.files() == [name]
    finally:
        source.remote.client.delete(source.remote.root, recursive=True)
