"""When each environment layer on the cluster was last used, and pruning those long unused.

Every submit records the layers it uses: a layer of its own (in its HDFS home's
``.tfyarn/envs``, or its subdirectory of the shared directory) by setting its record's
(``….tar.json``) time to now; another writer's layer in the shared directory by an empty
marker in its own subdirectory, ``<dir>/<me>/.used/<writer>/<layer>``, since nobody may
change another's files. A layer's last use is the newest of those times; the record's is
its upload at first. HDFS's access times are no measure: YARN's NodeManagers read a layer
only when their cache lacks it, and many clusters turn access times off.

``tfyarn env prune`` deletes the layers of one writer not used for N days (the layer first,
then its record: a record alone is never read), except any a running job may use: for each
user with a job running (the ResourceManager says since when), every layer that user used
since an hour before their oldest running job was submitted is kept.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from appmaster.common.storage import RemoteDir, RemoteFile

LAYER_SUFFIX = ".tar"
RECORD_SUFFIX = ".json"
USED_DIR = ".used"
# A job's use is recorded just before YARN takes the job: its start time comes seconds later.
RUNNING_MARGIN_S = 3600.0
DAY_S = 86400.0
FRESH_S = DAY_S  # a use recorded this recently is not recorded again


@dataclass(frozen=True)
class Use:
    """One recorded use of a layer: by whom, when (seconds since the epoch)."""

    user: str
    at: float


@dataclass
class Pruning:
    """What pruning one writer's layers does: ``delete`` (path, bytes with its record),
    and why each other layer stays."""

    delete: list[tuple[str, int]] = field(default_factory=list)
    kept_recent: list[str] = field(default_factory=list)
    kept_running: list[str] = field(default_factory=list)

    @property
    def bytes_freed(self) -> int:
        return sum(size for _, size in self.delete)


def uses_of(files: dict[str, RemoteFile], writer: str, area: str) -> dict[str, list[Use]]:
    """Each layer of ``writer`` (path relative to the listing) with its uses. ``area`` is
    where the writer's layers are in the listing ("" for a home directory, "alice/" in
    the shared one); markers are read from every user's ``.used/<writer>/``."""
    uses: dict[str, list[Use]] = {}
    for path in files:
        if not path.startswith(area) or "/" in path[len(area):]:
            continue
        if path.endswith(LAYER_SUFFIX) and path + RECORD_SUFFIX in files:
            record = files[path + RECORD_SUFFIX]
            uses.setdefault(path, []).append(Use(record.owner or writer,
                                                 record.modified_ms / 1000))
    for path, info in files.items():
        user, _, rest = path.partition("/")
        if rest.startswith(f"{USED_DIR}/{writer}/"):
            layer = area + os.path.basename(rest)
            if layer in uses:
                uses[layer].append(Use(user, info.modified_ms / 1000))
    return uses


def plan(files: dict[str, RemoteFile], writer: str, area: str, older_than_days: float,
         running_since: dict[str, float], now: float) -> Pruning:
    """Which of ``writer``'s layers go: none used in ``older_than_days``, none a running
    job may use (``running_since``: each user's oldest running job's start)."""
    pruning = Pruning()
    cutoff = now - older_than_days * DAY_S
    for layer, uses in sorted(uses_of(files, writer, area).items()):
        if max(u.at for u in uses) >= cutoff:
            pruning.kept_recent.append(layer)
        elif any(u.user in running_since and u.at >= running_since[u.user] - RUNNING_MARGIN_S
                 for u in uses):
            pruning.kept_running.append(layer)
        else:
            size = files[layer].length + files[layer + RECORD_SUFFIX].length
            pruning.delete.append((layer, size))
    return pruning


def record(remote: RemoteDir, me: str, used: Iterable[str], shared: bool,
           known: dict[str, RemoteFile], echo: Callable[[str], None]) -> None:
    """Record this submit's use of the layers ``used`` (paths relative to ``remote``: a
    layer's name in a home directory, ``<writer>/<name>`` in the shared one). ``known``:
    the files the submit listed; a use recorded in the last day is not recorded again, so
    a day's later submits make no call."""
    from appmaster.common.storage import StorageError, bounded

    now = time.time()
    now_ms = int(now * 1000)
    todo = []
    for path in used:
        writer = path.partition("/")[0] if shared else me
        mark = path + RECORD_SUFFIX if writer == me else f"{me}/{USED_DIR}/{path}"
        if (info := known.get(mark)) is None or info.modified_ms / 1000 < now - FRESH_S:
            todo.append((writer == me, mark))

    def mark_all() -> None:
        for own, mark in todo:
            try:
                if own:
                    remote.client.set_times(remote.path(mark), now_ms, now_ms)
                else:
                    remote.write_bytes(mark, b"")
            except FileNotFoundError:  # a record another submit is still writing
                continue

    try:
        bounded(mark_all, what=f"HDFS ({remote.url})")
    except StorageError as exc:  # bookkeeping only: the job runs without it
        echo(f"  could not record the layers' use in {remote.url} ({exc}); "
             "`tfyarn env prune` may count them unused")
