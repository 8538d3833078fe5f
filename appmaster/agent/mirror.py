"""A task's local work dir kept in step with the job's work dir on HDFS.

- ``restore``: before the script starts, the latest checkpoints on HDFS come down into the
  local dir, so a task restarted on any node resumes where the job was (a PyTorch or JAX
  job's: every file, its snapshots being the script's own).
- ``sync``: the chief's local dir goes up, on an interval while it runs and once more when it
  ends. Checkpoints go up whole or not at all: data and index files first (each under a
  temporary name, renamed into place, several at once), then the ``checkpoint`` state file,
  so a reader on HDFS never sees a state file naming a missing file. Checkpoints the state
  file no longer lists are pruned. Other files (TensorBoard event files, results) go up when
  they change.
- ``pull``: TensorBoard's local dir follows HDFS.
- ``follow``: the evaluator's local dir gets each newest checkpoint, whole (state file last).

A checkpoint whose data shards are not all in the local dir was written partly from another
host (TensorFlow's sharded saving puts each variable's shard on the ps holding it). It is
never mirrored; the status says so, and the script must save from the chief
(docs/guide/failures.md).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from appmaster.common import jobpointer
from appmaster.common.storage import TEMPORARY_MARK, RemoteDir, StorageError, bounded

log = logging.getLogger("tfyarn.mirror")

STATE_FILE = "checkpoint"  # TensorFlow's checkpoint state file, in every checkpoint dir
SKIPPED_NAMES = (".tfyarn-outcome.json",)
PARALLEL_UPLOADS = 4
PROBE_TIMEOUT_S = 10.0  # is the NameNode there at all?
COPY_TIMEOUT_S = 1800.0  # one round's copies: generous, a checkpoint may be large
HURRIED_INTERVAL_S = 1.0  # after YARN's preemption notice (hurry)
_PATHS = re.compile(r'^(model_checkpoint_path|all_model_checkpoint_paths):\s*"(.*)"\s*$')
_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")


def listed_checkpoints(state_text: str) -> list[str]:
    """Checkpoint prefixes a state file names (relative to its dir), newest last."""
    prefixes: list[str] = []
    for line in state_text.splitlines():
        match = _PATHS.match(line.strip())
        if match:
            name = os.path.basename(match.group(2))  # TF may write absolute paths
            if name not in prefixes:
                prefixes.append(name)
    latest = next((m.group(2) for line in state_text.splitlines()
                   if (m := _PATHS.match(line.strip())) and m.group(1) == "model_checkpoint_path"),
                  None)
    if latest is not None:  # the latest last
        latest = os.path.basename(latest)
        prefixes = [p for p in prefixes if p != latest] + [latest]
    return prefixes


def checkpoint_files(names: list[str], prefix: str) -> list[str]:
    """Files of one checkpoint among ``names`` (a dir's file names)."""
    return [n for n in names if n.startswith(prefix + ".") and
            (n.endswith((".index", ".meta")) or _SHARD.search(n))]


def missing_shards(names: list[str], prefix: str) -> list[str]:
    """Data shards an index promises that the dir lacks: ``<prefix>.data-00001-of-00002``."""
    shards = [m for n in checkpoint_files(names, prefix) if (m := _SHARD.search(n))]
    if not shards:
        return [f"{prefix}.data-*"] if f"{prefix}.index" in names else []
    total = int(shards[0].group(2))
    present = {int(m.group(1)) for m in shards}
    return [f"{prefix}.data-{i:05d}-of-{total:05d}" for i in range(total) if i not in present]


def is_checkpoint_file(name: str) -> bool:
    return name.endswith((".index", ".meta")) or bool(_SHARD.search(name))


def _prefix_of(name: str) -> str:
    """``model.ckpt-10.data-00000-of-00001`` / ``.index`` / ``.meta`` -> ``model.ckpt-10``."""
    return _SHARD.sub("", name).removesuffix(".index").removesuffix(".meta")


@dataclass
class MirrorStatus:
    """What the job's status shows about a task's mirror."""

    remote: str
    interval_s: float
    last_sync: float | None = None  # when a sync last completed
    last_checkpoint: str | None = None  # the newest checkpoint now on HDFS
    files_up: int = 0
    bytes_up: int = 0
    restored: str | None = None  # the checkpoint brought down at start
    restored_written: str | None = None  # when it was written (HDFS's time), "12:03:10"
    restore_done: bool = False  # the restore ran (``restored`` None: HDFS had nothing)
    error: str | None = None  # the last failure, while it lasts
    failing_since: float | None = None
    warning: str | None = None  # e.g. a checkpoint split across hosts

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Seen:
    """What this task already put on HDFS, so unchanged files are not sent again."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (size, mtime_ns)


class WorkDirMirror:
    def __init__(self, local: Path, remote: RemoteDir, interval_s: float = 10.0) -> None:
        self.local = local
        self.remote = remote
        self.interval_s = interval_s
        self.status = MirrorStatus(remote.url, interval_s)
        self._seen = _Seen()
        self._sent_states: dict[str, str] = {}  # the state file put on HDFS, per dir
        self._stop = threading.Event()
        self._wake = threading.Event()  # stop, or hurry
        self._hurry_until = 0.0
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one sync at a time (the loop's and the last one)

    # ------------------------------------------------------------ down

    def restore(self, plain_files: bool = False) -> str | None:
        """Bring every checkpoint dir's listed checkpoints and state file down; returns the
        newest checkpoint restored (None when HDFS has none yet). ``plain_files``: every
        other file too (a PyTorch or JAX script's snapshots, which no state file lists)."""
        remote_files = self.remote.list_files()
        newest = self._restore_plain(remote_files) if plain_files else None
        for state_path in sorted(p for p in remote_files if os.path.basename(p) == STATE_FILE):
            directory = os.path.dirname(state_path)
            state_text = (self.remote.read_bytes(state_path) or b"").decode()
            names = [os.path.basename(p) for p in remote_files if os.path.dirname(p) == directory]
            wanted = [f for prefix in listed_checkpoints(state_text)
                      for f in checkpoint_files(names, prefix)]
            for name in wanted:
                self._download(os.path.join(directory, name))
            target = self.local / state_path  # the state file last: it names the rest
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(state_text)
            self._remember(state_path)
            prefixes = listed_checkpoints(state_text)
            if prefixes:
                newest = os.path.join(directory, prefixes[-1])
        written = remote_files.get(newest) or remote_files.get(f"{newest}.index")
        self.status.restored = newest
        self.status.restored_written = time.strftime(
            "%H:%M:%S", time.localtime(written.modified_ms / 1000)) if written else None
        self.status.restore_done = True
        return newest

    def _restore_plain(self, remote_files: dict) -> str | None:
        """Every file of the script's outside TensorFlow's checkpoint dirs (not the
        AppMaster's report); the newest of them, if any."""
        checkpoint_dirs = {os.path.dirname(p) for p in remote_files
                           if os.path.basename(p) == STATE_FILE}
        plain = [p for p in remote_files if os.path.dirname(p) not in checkpoint_dirs
                 and p not in jobpointer.APPMASTER_FILES]
        for relative in plain:
            self._download(relative)
        return max(plain, key=lambda p: remote_files[p].modified_ms, default=None)

    def pull(self) -> int:
        """Fetch what changed on HDFS (for a reader such as TensorBoard); returns file count."""
        fetched = 0
        for relative, info in self.remote.list_files().items():
            key = (info.length, info.modified_ms)
            if self._seen.files.get("remote:" + relative) != key:
                self._download(relative)
                self._seen.files["remote:" + relative] = key
                fetched += 1
        return fetched

    def follow(self) -> int:
        """Bring each checkpoint dir's newest checkpoint down when HDFS has a newer one, its
        state file last (for a reader such as the evaluator); returns the files fetched."""
        remote_files = self.remote.list_files()
        fetched = 0
        for state_path in sorted(p for p in remote_files if os.path.basename(p) == STATE_FILE):
            directory = os.path.dirname(state_path)
            state_text = (self.remote.read_bytes(state_path) or b"").decode()
            prefixes = listed_checkpoints(state_text)
            if not prefixes:
                continue
            names = [os.path.basename(p) for p in remote_files if os.path.dirname(p) == directory]
            for name in checkpoint_files(names, prefixes[-1]):
                relative = os.path.join(directory, name)
                seen = (remote_files[relative].length, remote_files[relative].modified_ms)
                if self._seen.files.get("remote:" + relative) != seen:
                    self._download(relative)
                    self._seen.files["remote:" + relative] = seen
                    fetched += 1
            target = self.local / state_path
            if not target.exists() or target.read_text() != state_text:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(state_text)
        return fetched

    def _download(self, relative: str) -> None:
        self.remote.download(relative, self.local / relative)
        self._remember(relative)

    def _remember(self, relative: str) -> None:
        stat = (self.local / relative).stat()
        self._seen.files[relative] = (stat.st_size, stat.st_mtime_ns)

    # ------------------------------------------------------------ up

    def sync(self) -> int:
        """Put what changed locally on HDFS; returns the number of files sent."""
        with self._lock:
            sent = self._sync()
        self.status.last_sync = time.time()
        self.status.error = self.status.failing_since = None
        return sent

    def _sync(self) -> int:
        files = self._local_files()
        by_dir: dict[str, list[str]] = {}
        for relative in files:
            by_dir.setdefault(os.path.dirname(relative), []).append(os.path.basename(relative))
        plain, checkpoint_dirs = [], []
        for directory, names in by_dir.items():
            if STATE_FILE in names:
                checkpoint_dirs.append(directory)
                plain += [os.path.join(directory, n) for n in names
                          if n != STATE_FILE and not is_checkpoint_file(n)]
            else:
                plain += [os.path.join(directory, n) for n in names]
        sent = self._upload_changed(plain)
        for directory in checkpoint_dirs:
            sent += self._sync_checkpoints(directory)
        return sent

    def _sync_checkpoints(self, directory: str) -> int:
        """Send the newest checkpoint, then a state file naming only checkpoints that are
        whole on HDFS, then prune the others there. Only the newest is sent: a chief that
        saves faster than HDFS takes a checkpoint still gets its latest one up each round."""
        # The state file first, the directory after: TensorFlow writes a checkpoint's files
        # before the state file that names it, so every file it names is listed below.
        state_text = (self.local / directory / STATE_FILE).read_text()
        names = os.listdir(self.local / directory)
        prefixes = listed_checkpoints(state_text)
        if not prefixes or f"{prefixes[-1]}.index" not in names:
            return 0  # a state file naming nothing, or being replaced: the next round
        latest = prefixes[-1]
        missing = missing_shards(names, latest)
        if missing:
            self.status.warning = (
                f"checkpoint {os.path.join(directory, latest)} lacks {', '.join(missing)} in "
                "this task's dir: its shards were written on other hosts (sharded saving on "
                "the ps). It is not mirrored; save from the chief (docs/guide/failures.md).")
            log.warning("%s", self.status.warning)
            return 0
        files = [os.path.join(directory, f) for f in checkpoint_files(names, latest)]
        # Opened together before sending: the script may delete them meanwhile (it saves
        # faster than they travel), and an open file stays readable.
        opened = self._open_all(files)
        if opened is None:
            return 0  # already deleted: a newer one is there for the next round
        try:
            sent = self._upload_changed(files, opened)
        finally:
            for source in opened.values():
                source.close()
        on_hdfs = [os.path.basename(p) for p in self.remote.list_files()
                   if os.path.dirname(p) == directory]
        whole = [p for p in prefixes if f"{p}.index" in on_hdfs and not missing_shards(on_hdfs, p)]
        state = f'model_checkpoint_path: "{latest}"\n' + "".join(
            f'all_model_checkpoint_paths: "{p}"\n' for p in whole)
        state_path = os.path.join(directory, STATE_FILE)
        if state != self._sent_states.get(state_path):
            self.remote.write_bytes(state_path, state.encode())  # last: it names the rest
            self._sent_states[state_path] = state
            self.status.files_up += 1
            self.status.last_checkpoint = os.path.join(directory, latest)
            sent += 1
        self._prune(directory, on_hdfs, set(whole))
        return sent

    def _prune(self, directory: str, on_hdfs: list[str], keep: set[str]) -> None:
        """Delete this dir's checkpoint files on HDFS that the state file there no longer
        names (TensorFlow deleted them locally, or they were never whole)."""
        for name in on_hdfs:
            if is_checkpoint_file(name) and _prefix_of(name) not in keep:
                relative = os.path.join(directory, name)
                self.remote.delete(relative)
                self._seen.files.pop(relative, None)

    def _open_all(self, paths: list[str]) -> dict[str, BinaryIO] | None:
        opened: dict[str, BinaryIO] = {}
        try:
            for relative in paths:
                opened[relative] = open(self.local / relative, "rb")  # noqa: SIM115
        except FileNotFoundError:
            for source in opened.values():
                source.close()
            return None
        return opened

    def _upload_changed(self, paths: list[str],
                        opened: dict[str, BinaryIO] | None = None) -> int:
        opened = opened or {}
        changed = [p for p in paths if self._changed(p, opened.get(p))]
        if not changed:
            return 0
        with ThreadPoolExecutor(PARALLEL_UPLOADS) as pool:  # each close waits on the DataNode
            list(pool.map(lambda p: self._upload(p, opened.get(p)), changed))
        return len(changed)

    def _upload(self, relative: str, source: BinaryIO | None = None) -> None:
        """Send one file (already open, or opened now); an HDFS error propagates."""
        if source is None:
            opened = self._open_all([relative])
            if opened is None:
                return  # deleted by the script meanwhile
            with opened[relative] as own:
                self._upload(relative, own)
            return
        before = os.fstat(source.fileno())
        size = self.remote.upload(source, relative)
        self._seen.files[relative] = (before.st_size, before.st_mtime_ns)
        self.status.files_up += 1
        self.status.bytes_up += size

    def _changed(self, relative: str, source: BinaryIO | None = None) -> bool:
        try:
            stat = os.fstat(source.fileno()) if source else (self.local / relative).stat()
        except FileNotFoundError:
            return False
        return self._seen.files.get(relative) != (stat.st_size, stat.st_mtime_ns)

    def _local_files(self) -> list[str]:
        found = []
        for root, dirs, names in os.walk(self.local):
            # TensorFlow writes a checkpoint in "<name>_temp" dirs, then renames it.
            dirs[:] = [d for d in dirs if not d.endswith("_temp")]
            for name in names:
                if TEMPORARY_MARK in name or name in SKIPPED_NAMES or ".tmp" in name:
                    continue
                found.append(os.path.relpath(os.path.join(root, name), self.local))
        return found

    # ------------------------------------------------------------ the loop

    def start(self, action: str = "sync", on_status=None) -> None:
        """Run ``sync`` (or ``pull``) every interval in a thread, failures included.

        Each round first asks the NameNode something cheap, so an unreachable HDFS shows as
        a failure within seconds; the copy itself may take as long as a big checkpoint needs.
        No backoff: what a killed container loses is what the mirror has not copied yet,
        and retries backed off to a minute would let the copy lag that long behind an HDFS
        that is back (or out of safe mode). One process per job mirrors, so a try per
        interval costs HDFS nothing.
        """
        what = f"HDFS ({self.remote.url})"

        def loop() -> None:
            while True:
                hurried = time.monotonic() < self._hurry_until
                self._wake.wait(HURRIED_INTERVAL_S if hurried else self.interval_s)
                self._wake.clear()
                if self._stop.is_set():
                    return
                try:
                    bounded(self.remote.exists, PROBE_TIMEOUT_S, what)
                    bounded(getattr(self, action), COPY_TIMEOUT_S, what)
                except (StorageError, OSError) as exc:
                    self._failed(exc)
                if on_status:
                    on_status(self.status)

        self._thread = threading.Thread(target=loop, daemon=True, name=f"mirror-{action}")
        self._thread.start()

    def hurry(self, seconds: float) -> None:
        """Copy every HURRIED_INTERVAL_S for ``seconds``, starting now: YARN announced a
        preemption, and a checkpoint saved on that notice must reach HDFS before the kill."""
        self._hurry_until = time.monotonic() + seconds
        self._wake.set()

    def finish(self, timeout_s: float) -> bool:
        """Stop the loop and sync once more; whether everything reached HDFS."""
        self._stop.set()
        self._wake.set()
        try:
            bounded(self.sync, timeout_s, what=f"HDFS ({self.remote.url})")
            return True
        except (StorageError, OSError) as exc:
            self._failed(exc)
            return False

    def _failed(self, exc: BaseException) -> None:
        self.status.error = str(exc)
        self.status.failing_since = self.status.failing_since or time.time()
        log.warning("mirroring to %s failed (will retry): %s", self.remote.url, exc)
