"""A local copy of a job's TensorBoard event files, brought up to date incrementally.

TensorFlow cannot read ``hdfs://`` event files (issue 29), so `tfyarn tensorboard` copies
them into a local directory and points TensorBoard there. Only ``events.out.tfevents.*``
files are copied (not the checkpoints beside them), each at the same relative path, so
TensorBoard shows one run per directory as it would on the job's work dir.

Event files are append-only: the chief's writer only ever adds records, and tfyarn's
mirror re-uploads the whole grown file under the same name. So a file that grew on HDFS
gets only its new bytes, appended to the local copy, and a new file comes down whole (under
a name TensorBoard ignores, then renamed). Before appending, the last bytes the copy holds
are read again from the source: if they differ (the file was replaced, not grown), or the
source is shorter than the copy, the file comes down whole again.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from appmaster.common.storage import TEMPORARY_MARK, RemoteDir, bounded

EVENT_PREFIX = "events.out.tfevents."
OVERLAP = 64  # bytes read again before appending: the copy must still be the source's prefix
CHUNK = 4 * 2**20
# A file being copied down. TensorBoard takes any name with "tfevents" in it for an event
# file, so this one must not have it.
PARTIAL_PREFIX = ".tfyarn-partial-"
LIST_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 120.0  # one chunk


def is_event_file(relative: str) -> bool:
    """TensorFlow's event file, not one still being uploaded by tfyarn's mirror."""
    name = posixpath.basename(relative)
    return name.startswith(EVENT_PREFIX) and TEMPORARY_MARK not in name


class EventSource(Protocol):
    """Where a job's event files are: its work dir on HDFS, or a local directory."""

    where: str  # for messages: the URL or path

    def lengths(self) -> dict[str, int]:
        """Every event file below, by path relative to the directory, with its length."""
        ...

    def chunks(self, relative: str, offset: int, length: int) -> Iterator[bytes]:
        """``length`` bytes of a file from ``offset``, in pieces."""
        ...


class HdfsEvents:
    """Event files in a work dir on HDFS (hdfs://, viewfs://), read with hdfs-native."""

    def __init__(self, url: str) -> None:
        self.where = url
        self.remote = RemoteDir(url)

    def lengths(self) -> dict[str, int]:
        files = bounded(self.remote.list_files, LIST_TIMEOUT_S, what=f"HDFS ({self.where})")
        return {path: info.length for path, info in files.items() if is_event_file(path)}

    def chunks(self, relative: str, offset: int, length: int) -> Iterator[bytes]:
        what = f"HDFS ({self.where})"
        reader = bounded(lambda: self.remote.client.read(self.remote.path(relative)),
                         READ_TIMEOUT_S, what=what)
        end = offset + length
        while offset < end:
            size = min(CHUNK, end - offset)
            piece = bounded(lambda o=offset, n=size: reader.read_range(o, n), READ_TIMEOUT_S,
                            what=what)
            if not piece:
                return  # shorter than listed: replaced meanwhile; the caller sees the gap
            yield piece
            offset += len(piece)


class LocalEvents:
    """Event files in a directory this machine has (a work dir on a one-node cluster)."""

    def __init__(self, root: Path) -> None:
        self.where = str(root)
        self.root = root

    def lengths(self) -> dict[str, int]:
        found = {}
        for directory, _, names in os.walk(self.root):
            for name in names:
                path = Path(directory, name)
                relative = path.relative_to(self.root).as_posix()
                if is_event_file(relative):
                    try:
                        found[relative] = path.stat().st_size
                    except FileNotFoundError:
                        continue  # deleted between the listing and now
        return found

    def chunks(self, relative: str, offset: int, length: int) -> Iterator[bytes]:
        with open(self.root / relative, "rb") as source:
            source.seek(offset)
            while length > 0 and (piece := source.read(min(CHUNK, length))):
                yield piece
                length -= len(piece)


@dataclass
class SyncResult:
    """What one pass brought down."""

    new: list[str]  # files copied whole for the first time
    grown: int = 0  # files that got their new bytes appended
    rewritten: int = 0  # files copied whole again: replaced, not grown
    bytes: int = 0  # bytes read from the source (the overlap checks included)
    files: int = 0  # event files in the cache after the pass

    @property
    def changed(self) -> bool:
        return bool(self.new or self.grown or self.rewritten)


class EventCache:
    """A local directory holding a copy of a source's event files, same layout."""

    def __init__(self, source: EventSource, local: Path) -> None:
        self.source = source
        self.local = local

    def sync(self) -> SyncResult:
        """Bring every event file up to the source's length; source errors propagate
        (StorageError, OSError), leaving what was copied so far in place."""
        self.local.mkdir(parents=True, exist_ok=True)
        result = SyncResult(new=[])
        for relative, length in sorted(self.source.lengths().items()):
            target = self._target(relative)
            if target is not None:
                self._sync_file(relative, length, target, result)
        result.files = len(self.files())
        return result

    def files(self) -> list[str]:
        """The event files in the cache, relative to it."""
        return sorted(relative for relative in LocalEvents(self.local).lengths())

    def _target(self, relative: str) -> Path | None:
        """Where a file goes; None for a path that would leave the cache."""
        target = (self.local / relative).resolve()
        return target if target.is_relative_to(self.local.resolve()) else None

    def _sync_file(self, relative: str, length: int, target: Path, result: SyncResult) -> None:
        have = target.stat().st_size if target.exists() else 0
        if have == length:
            return  # append-only: same length, same bytes
        if 0 < have < length and self._still_prefix(relative, target, have, result):
            result.bytes += self._append(relative, target, have, length)
            result.grown += 1
            return
        result.bytes += self._fetch_whole(relative, target, length)
        if have:
            result.rewritten += 1
        else:
            result.new.append(relative)

    def _still_prefix(self, relative: str, target: Path, have: int, result: SyncResult) -> bool:
        """Whether the copy's last bytes are still the source's at the same place."""
        start = max(0, have - OVERLAP)
        theirs = b"".join(self.source.chunks(relative, start, have - start))
        result.bytes += len(theirs)
        with open(target, "rb") as copy:
            copy.seek(start)
            return copy.read() == theirs

    def _append(self, relative: str, target: Path, have: int, length: int) -> int:
        added = 0
        with open(target, "ab") as copy:
            for piece in self.source.chunks(relative, have, length - have):
                copy.write(piece)
                added += len(piece)
        return added

    def _fetch_whole(self, relative: str, target: Path, length: int) -> int:
        """The whole file under a partial name, renamed into place once complete."""
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{PARTIAL_PREFIX}{uuid.uuid4().hex[:8]}")
        size = 0
        try:
            with open(partial, "wb") as copy:
                for piece in self.source.chunks(relative, 0, length):
                    copy.write(piece)
                    size += len(piece)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return size
