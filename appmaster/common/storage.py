"""The job's directory on the cluster's shared file system (HDFS), through a native client.

Each NodeManager is a different machine with its own disks; HDFS is the only storage every
container shares. TensorFlow 2.21 cannot open ``hdfs://`` itself, so tasks keep working on a
local directory and this module moves files between it and HDFS. It uses hdfs-native (HDFS's
RPC protocol in Rust, no JVM per call), which reads HADOOP_CONF_DIR for name services and
takes delegation tokens from HADOOP_TOKEN_FILE_LOCATION, as every YARN container has them.

Writes are safe against readers and crashes: a file is written under a temporary name and
renamed into place, so nobody ever sees half a file under its real name.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar
from urllib.parse import urlsplit

log = logging.getLogger("tfyarn.storage")

REMOTE_SCHEMES = ("hdfs", "viewfs")  # what hdfs-native speaks
TEMPORARY_MARK = "._tfyarn_tmp_"  # in the name of a file still being written
CHUNK = 4 * 2**20
CALL_TIMEOUT_S = 60.0  # hdfs-native retries an unreachable NameNode without end
# hdfs-native's retries of an unreachable NameNode back off up to 15 s (15 tries): a call made
# during an outage then woke up to 15 s after the NameNode was back. Tries every 2 s at most,
# as many as keep the same patience (about 150 s).
CLIENT_CONFIG = {"dfs.client.failover.sleep.max.millis": "2000",
                 "dfs.client.failover.max.attempts": "75"}

T = TypeVar("T")
# Raised when the process got new delegation tokens (appmaster/common/hdfstokens.py): every
# RemoteDir then makes a new client, whose connections present them.
_tokens_generation = 0


def _closed_for_good(writer: io.RawIOBase) -> None:
    """Mark an hdfs-native writer closed, whether its close succeeded or failed.

    Its close() does not tell io.RawIOBase, so the finalizer closes it again: after a failed
    close (the NameNode went away), that second close retried the NameNode for about 50 s in
    whichever thread dropped the writer, the mirror's loop, out of reach of any timeout."""
    io.RawIOBase.close(writer)


def tokens_changed() -> None:
    global _tokens_generation
    _tokens_generation += 1


class StorageError(RuntimeError):
    """HDFS could not be used; the message is the NameNode's reason without Java frames."""


class NoAnswer(StorageError):
    """HDFS did not answer in the time given (waiting longer is no use)."""


def is_remote(work_dir: str) -> bool:
    """A URL on a Hadoop file system; plain paths and file:// stay on the node's disk."""
    return urlsplit(work_dir).scheme in REMOTE_SCHEMES


def plain_reason(exc: BaseException) -> str:
    """hdfs-native's errors carry the NameNode's Java stack: keep the exception's message."""
    text = str(exc)
    for marker in ("\\n\\tat ", "\n\tat "):
        text = text.split(marker, 1)[0]
    if text.startswith("RPCError("):
        parts = text[len("RPCError("):].split('", "', 1)
        text = parts[-1].strip('")') if len(parts) == 2 else text
    return text.strip()


def bounded(call: Callable[[], T], timeout_s: float = CALL_TIMEOUT_S, what: str = "HDFS") -> T:
    """Run ``call`` in a helper thread and give up after ``timeout_s`` (an unreachable
    NameNode makes hdfs-native retry forever)."""
    answers: queue.Queue = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            answers.put((True, call()))
        except BaseException as exc:  # handed to the caller's thread
            answers.put((False, exc))

    threading.Thread(target=run, daemon=True, name="hdfs-call").start()
    try:
        ok, value = answers.get(timeout=timeout_s)
    except queue.Empty:
        raise NoAnswer(f"{what} did not answer within {timeout_s:.0f} s") from None
    if not ok:
        if isinstance(value, StorageError):
            raise value
        raise StorageError(plain_reason(value)) from value
    return value


@dataclass(frozen=True)
class RemoteFile:
    path: str  # relative to the directory
    length: int
    modified_ms: int
    permission: int = 0o644
    owner: str = ""  # its HDFS owner


class RemoteDir:
    """One directory on HDFS, given as ``hdfs://authority/path`` or ``viewfs://...``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in REMOTE_SCHEMES:
            raise StorageError(f"{url}: not an hdfs:// or viewfs:// URL")
        self.url = url.rstrip("/")
        self.root = parts.path.rstrip("/") or "/"
        # No authority (hdfs:///path): the configuration's default file system.
        self.authority = f"{parts.scheme}://{parts.netloc}" if parts.netloc else None
        self.reconnect()

    def reconnect(self) -> None:
        """A new client, whose first call opens (and authenticates) a new connection."""
        self._client, self._generation = self._new_client(), _tokens_generation

    @property
    def client(self):
        if self._generation != _tokens_generation:  # new tokens: new connections
            self.reconnect()
        return self._client

    def _new_client(self):
        from hdfs_native import Client  # imported here: the client side uses it only to check

        return Client(self.authority, config=CLIENT_CONFIG)

    def path(self, relative: str = "") -> str:
        return f"{self.root}/{relative}".rstrip("/") if relative else self.root

    def make(self) -> None:
        self.client.mkdirs(self.root, permission=0o755, create_parent=True)

    def make_private(self) -> None:
        """The directory, made if missing, readable by its owner alone (0700)."""
        self.client.mkdirs(self.root, permission=0o700, create_parent=True)
        if self.client.get_file_info(self.root).permission & 0o077:
            self.client.set_permission(self.root, 0o700)

    def exists(self, relative: str = "") -> bool:
        try:
            self.client.get_file_info(self.path(relative))
        except FileNotFoundError:
            return False
        return True

    def lineage(self) -> list:
        """The status of the directory and of every directory above it, its own first
        (FileNotFoundError when it does not exist)."""
        path, statuses = self.root, []
        while True:
            statuses.append(self.client.get_file_info(path))
            if path == "/":
                return statuses
            path = os.path.dirname(path)

    def list_files(self, under: str = "") -> dict[str, RemoteFile]:
        """Every file below the directory (or its subdirectory ``under``; none if it does
        not exist), by path relative to the directory."""
        try:
            statuses = list(self.client.list_status(self.path(under), recursive=True))
        except FileNotFoundError:
            return {}
        found = {}
        for status in statuses:
            if status.isdir or TEMPORARY_MARK in status.path:
                continue
            relative = status.path[len(self.root):].lstrip("/")
            found[relative] = RemoteFile(relative, status.length, status.modification_time,
                                         status.permission, status.owner)
        return found

    def remove_temporaries(self) -> int:
        """Delete every file below the directory still under a temporary name (an upload
        cut short by its writer's kill); how many."""
        try:
            statuses = list(self.client.list_status(self.root, recursive=True))
        except FileNotFoundError:
            return 0
        leftovers = [s.path for s in statuses if not s.isdir and TEMPORARY_MARK in s.path]
        for path in leftovers:
            self.client.delete(path, recursive=False)
        return len(leftovers)

    def read_bytes(self, relative: str) -> bytes | None:
        try:
            with self.client.read(self.path(relative)) as reader:
                return reader.read()
        except FileNotFoundError:
            return None

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Under a temporary name, then renamed over the old file: all or nothing."""
        self.upload(io.BytesIO(data), relative)

    def upload(self, source: BinaryIO, relative: str, replace: bool = True,
               replication: int | None = None,
               progress: Callable[[int, int], None] | None = None) -> int:
        """Copy an open local file up (temporary name, then rename); returns its size.

        ``replace=False`` never replaces an existing file (YARN refuses to localize a file
        that changed after a job named it): FileExistsError when one is there.
        ``replication``: copies kept (None: the cluster's default). ``progress`` is called
        with the bytes sent and the file's size.
        """
        from hdfs_native import WriteOptions

        target = self.path(relative)
        temporary = self._temporary(target)
        self.client.mkdirs(os.path.dirname(target), permission=0o755, create_parent=True)
        total = os.fstat(source.fileno()).st_size if progress else 0
        size = 0
        options = WriteOptions(replication=replication) if replication else None
        writer = self.client.create(temporary, options)
        try:
            while chunk := source.read(CHUNK):
                writer.write(chunk)
                size += len(chunk)
                if progress:
                    progress(size, total)
            writer.close()
        finally:
            _closed_for_good(writer)
        try:
            self.client.rename(temporary, target, overwrite=replace)
        except Exception:
            self.client.delete(temporary)
            if not replace and self.exists(relative):
                raise FileExistsError(target) from None
            raise
        return size

    def download(self, relative: str, local: Path) -> int:
        """Copy a file down; it appears under its name only when complete."""
        local.parent.mkdir(parents=True, exist_ok=True)
        partial = local.with_name(f".{local.name}{TEMPORARY_MARK}")
        size = 0
        with self.client.read(self.path(relative)) as reader, open(partial, "wb") as out:
            while chunk := reader.read(CHUNK):
                out.write(chunk)
                size += len(chunk)
        os.replace(partial, local)
        return size

    def delete(self, relative: str) -> None:
        self.client.delete(self.path(relative), recursive=False)

    def check_writable(self) -> None:
        """Create the directory and a file in it, then delete the file. The file is empty:
        closing one with data waits up to 0.5 s for a DataNode to report its block, and
        the NameNode alone decides who may write (issue 14: submit's seconds)."""
        self.make()
        probe = f".tfyarn-write-check-{uuid.uuid4().hex}"
        self.write_bytes(probe, b"")
        self.delete(probe)

    @staticmethod
    def _temporary(target: str) -> str:
        head, name = os.path.split(target)
        return f"{head}/.{name}{TEMPORARY_MARK}{uuid.uuid4().hex[:8]}"


def remove_unfinished_copies(work_dir: str) -> int:
    """Delete the copies in a job's work dir on HDFS that a writer's kill cut short (never
    finished, never to be read); how many, 0 where HDFS could not say (logged). A local work
    dir has none: nothing is copied there."""
    if not is_remote(work_dir):
        return 0
    try:
        removed = bounded(RemoteDir(work_dir).remove_temporaries, what=f"HDFS ({work_dir})")
    except StorageError as exc:
        log.warning("could not look for unfinished copies in %s: %s", work_dir, exc)
        return 0
    if removed:
        log.info("removed %d unfinished copies from %s", removed, work_dir)
    return removed
