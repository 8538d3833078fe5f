"""The work-dir mirror (appmaster/agent/mirror.py) against the local cluster's real HDFS.

A writer saves checkpoints the way TensorFlow does (files first, the `checkpoint` state file
last, old checkpoints deleted after) while the mirror syncs: a state file on HDFS must never
name a file that is not there, and a task restoring from HDFS gets a complete checkpoint.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from jobtools import wait_for_hdfs

from appmaster.agent.mirror import WorkDirMirror, listed_checkpoints, missing_shards
from appmaster.common import jobpointer
from appmaster.common.storage import (
    TEMPORARY_MARK,
    RemoteDir,
    StorageError,
    bounded,
    plain_reason,
    remove_unfinished_copies,
)
from tfyarn.localyarn import daemons, hdfs
from tfyarn.localyarn.provision import find_java_home

pytestmark = pytest.mark.yarn

SUFFIXES = (".data-00000-of-00001", ".index", ".meta")


def save(directory: Path, step: int, keep: int = 3) -> None:
    """What tf.compat.v1.train.Saver does: files, then the state file, then pruning."""
    directory.mkdir(parents=True, exist_ok=True)
    for suffix in SUFFIXES:
        temporary = directory / f".model.ckpt-{step}{suffix}.tmp"
        temporary.write_bytes(os.urandom(20_000))
        temporary.rename(directory / f"model.ckpt-{step}{suffix}")
    steps = sorted({int(p.name.split("-")[1].split(".")[0])
                    for p in directory.glob("model.ckpt-*.index")})[-keep:]
    lines = [f'model_checkpoint_path: "{directory}/model.ckpt-{steps[-1]}"']
    lines += [f'all_model_checkpoint_paths: "{directory}/model.ckpt-{s}"' for s in steps]
    state = directory / "checkpoint.tmp"
    state.write_text("\n".join(lines) + "\n")
    state.rename(directory / "checkpoint")
    for old in directory.glob("model.ckpt-*"):
        if int(old.name.split("-")[1].split(".")[0]) not in steps:
            old.unlink()


def assert_whole_on_hdfs(remote: RemoteDir) -> list[str]:
    """Every file the state file on HDFS names is on HDFS; returns the prefixes named."""
    state = remote.read_bytes("checkpoints/checkpoint")
    if state is None:
        return []
    names = {os.path.basename(p) for p in remote.list_files()}
    prefixes = listed_checkpoints(state.decode())
    for prefix in prefixes:
        missing = [prefix + s for s in SUFFIXES if prefix + s not in names]
        assert not missing, f"the state file on HDFS names missing files {missing}: {state!r}"
    return prefixes


@pytest.fixture
def remote(yarn_cluster) -> RemoteDir:
    url = f"{yarn_cluster.layout.default_fs}/tmp/mirror-test-{uuid.uuid4().hex[:8]}"
    directory = RemoteDir(url)
    yield directory
    directory.client.delete(directory.root, recursive=True)


def test_state_file_on_hdfs_never_names_a_missing_file(remote: RemoteDir, tmp_path: Path):
    local = tmp_path / "work"
    checkpoints = local / "checkpoints"
    mirror = WorkDirMirror(local, remote)
    stop = threading.Event()

    def train() -> None:
        step = 0
        while not stop.is_set():
            save(checkpoints, step)
            step += 7
            time.sleep(0.01)

    writer = threading.Thread(target=train)
    writer.start()
    seen: set[str] = set()
    try:
        for _ in range(12):
            mirror.sync()
            seen.update(assert_whole_on_hdfs(remote))
    finally:
        stop.set()
        writer.join()
    mirror.sync()  # the last round, with the writer stopped: everything is up
    final = assert_whole_on_hdfs(remote)
    local = listed_checkpoints((checkpoints / "checkpoint").read_text())
    assert final[-1] == local[-1] and set(final) <= set(local), (final, local)
    assert len(seen) > 3, f"the writer's checkpoints hardly reached HDFS: {sorted(seen)}"
    # Pruned: only the listed checkpoints' files are left on HDFS.
    on_hdfs = {os.path.basename(p) for p in remote.list_files() if "model.ckpt-" in p}
    assert on_hdfs == {prefix + s for prefix in final for s in SUFFIXES}


def test_restore_brings_the_latest_checkpoint_to_a_fresh_dir(remote: RemoteDir,
                                                             tmp_path: Path):
    chief = tmp_path / "chief"
    for step in (0, 50, 100, 150):
        save(chief / "checkpoints", step)
    (chief / "events.out.tfevents.1").write_bytes(b"x" * 100)
    WorkDirMirror(chief, remote).sync()

    fresh = tmp_path / "replacement"  # another host: nothing of the chief's dir is here
    restored = WorkDirMirror(fresh, remote).restore()
    assert restored == "checkpoints/model.ckpt-150"
    got = sorted(p.name for p in (fresh / "checkpoints").iterdir())
    # One round sent the newest checkpoint only (older ones were superseded before it).
    assert got == sorted(["checkpoint"] + [f"model.ckpt-150{x}" for x in SUFFIXES])
    for name in got[1:]:
        assert (fresh / "checkpoints" / name).read_bytes() == \
            (chief / "checkpoints" / name).read_bytes()
    # The state file names what it brought, relative to its dir (TensorFlow resolves it there).
    state = (fresh / "checkpoints" / "checkpoint").read_text()
    assert listed_checkpoints(state) == ["model.ckpt-150"] and str(chief) not in state
    # A fresh job (nothing on HDFS yet) restores nothing.
    empty = RemoteDir(remote.url + "-empty")
    assert WorkDirMirror(tmp_path / "other", empty).restore() is None


def test_a_plain_restore_brings_the_scripts_files_not_the_appmasters_report(
        remote: RemoteDir, tmp_path: Path):
    """A PyTorch or JAX job's restart brings every file of the script's down and names the
    newest; the report the AppMaster wrote into the work dir after it is neither."""
    chief = tmp_path / "chief"
    chief.mkdir()
    (chief / "snapshot.pt").write_bytes(b"s" * 100)
    WorkDirMirror(chief, remote).sync()
    for name in jobpointer.APPMASTER_FILES:
        remote.write_bytes(name, b"{}")
    fresh = tmp_path / "replacement"
    assert WorkDirMirror(fresh, remote).restore(plain_files=True) == "snapshot.pt"
    assert sorted(p.name for p in fresh.iterdir()) == ["snapshot.pt"]


def test_a_checkpoint_split_across_hosts_is_never_mirrored(remote: RemoteDir, tmp_path: Path):
    """Sharded saving left the ps's shard on the ps's host: the chief's dir lacks it."""
    local = tmp_path / "work"
    checkpoints = local / "checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / "model.ckpt-10.index").write_bytes(b"i")
    (checkpoints / "model.ckpt-10.data-00001-of-00002").write_bytes(b"d")
    (checkpoints / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-10"\n')
    mirror = WorkDirMirror(local, remote)
    mirror.sync()
    assert remote.read_bytes("checkpoints/checkpoint") is None
    assert "model.ckpt-10.data-00000-of-00002" in (mirror.status.warning or "")
    assert missing_shards(["m.index", "m.data-00000-of-00001"], "m") == []


def test_unreachable_namenode_is_an_error_not_a_hang() -> None:
    """hdfs-native retries a dead NameNode forever: every call is bounded."""
    dead = RemoteDir("hdfs://127.0.0.1:1/nowhere")
    started = time.monotonic()
    with pytest.raises(StorageError, match="did not answer within 2 s"):
        bounded(dead.list_files, 2.0, what="The NameNode")
    assert time.monotonic() - started < 10


def test_namenode_errors_lose_their_java_frames() -> None:
    error = RuntimeError('RPCError("org.apache.hadoop.security.AccessControlException", '
                         '"Permission denied: user=alice, access=WRITE'
                         '\\n\\tat org.apache.x(X.java:1)")')
    assert plain_reason(error) == "Permission denied: user=alice, access=WRITE"


class DeletedBeforeClose:
    """A source that, read to its end, deletes the temporary file being written from it:
    the upload's close then fails, as it does when the NameNode goes away mid-close."""

    def __init__(self, remote: RemoteDir) -> None:
        self.remote, self.sent = remote, False

    def read(self, size: int) -> bytes:
        if not self.sent:
            self.sent = True
            return b"x" * 1000
        for status in self.remote.client.list_status(self.remote.root):
            if TEMPORARY_MARK in status.path:
                self.remote.client.delete(status.path)
        return b""


def test_a_failed_close_leaves_nothing_that_waits_for_the_namenode(yarn_cluster,
                                                                   remote: RemoteDir):
    """An upload whose close failed, dropped while the NameNode is away, returns at once. The
    writer's finalizer used to close it again, retrying the NameNode for about 50 s in the
    thread that dropped it (the mirror's loop, which then copied nothing)."""
    layout = yarn_cluster.layout
    namenode = hdfs.daemons_of(layout)[0]
    remote.make()
    try:
        try:
            remote.upload(DeletedBeforeClose(remote), "file")  # type: ignore[arg-type]
        except Exception as failure:  # noqa: BLE001 (the close's, whatever its type)
            assert daemons.stop(layout, namenode.name)
            with pytest.raises(StorageError):  # the client finds its connection gone
                bounded(remote.exists, 2.0)
            started = time.monotonic()
            del failure  # the traceback held the writer: its finalizer runs now
        else:
            pytest.fail("the close of a deleted file succeeded")
        gc.collect()
        dropped_s = time.monotonic() - started
    finally:
        if daemons.running_pid(layout, namenode.name) is None:
            daemons.start(layout, find_java_home(), namenode)
        wait_for_hdfs(layout)
    assert dropped_s < 2, f"dropping a failed upload took {dropped_s:.1f} s"
    remote.write_bytes("after", b"back")  # the same client goes on once HDFS is back
    assert remote.read_bytes("after") == b"back"


def test_the_jobs_end_removes_copies_cut_short_and_nothing_else(remote: RemoteDir) -> None:
    """What a chief killed mid-copy leaves (a file under its temporary name) is gone after the
    job's end; finished files stay."""
    remote.write_bytes("checkpoints/model.ckpt-100.index", b"whole")
    cut_short = remote.client.create(
        remote.path(f"checkpoints/.model.ckpt-200.index{TEMPORARY_MARK}0a1b2c3d"))
    cut_short.write(b"half")
    cut_short.close()
    assert remove_unfinished_copies(remote.url) == 1
    assert list(remote.list_files()) == ["checkpoints/model.ckpt-100.index"]
    assert remote.read_bytes("checkpoints/model.ckpt-100.index") == b"whole"
    assert remove_unfinished_copies(remote.url) == 0
