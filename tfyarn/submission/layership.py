"""The environment's layers on the cluster: packed once, uploaded once, checked each submit.

Each layer (tfyarn/submission/envlayers.py) is packed once into ``~/.cache/tfyarn/envs/``
and uploaded once to ``.tfyarn/envs/layer-<label>-<key>.tar`` on the cluster's default
filesystem, with a record beside it (``….json``: its size and sha256). A later submit
reads the directory once: every layer there with its record is used as it is, and YARN's
NodeManagers, given the same path and timestamp, take it from their cache.

What is never used:
- a layer another submit is still writing: uploads go to a name of their own and are
  renamed into place (environments.upload_once), so the final name only ever holds a
  whole file;
- a layer whose size is not its record's (a copy by hand, a file replaced): named, with
  the command that removes it, before anything is submitted;
- a cached pack whose sha256 is not its record's: packed again.

Visibility: PUBLIC (one copy per node for every application that names the file) where
YARN allows it, that is when the file is readable by everyone and every directory above it
is searchable by everyone (YARN's FSDownload.isPublic); PRIVATE (one copy per node and
user) otherwise. tfyarn checks the directories once per submit, each file's mode in the
listing it reads anyway.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from appmaster.common.storage import RemoteFile
from tfyarn.submission import envlayers, envpack, layeruse, masterlayers
from tfyarn.submission.environments import (
    JobEnvironment,
    JobEnvironmentError,
    cache_url,
    cluster_user,
    sha256_file,
    upload_once,
)
from tfyarn.submission.envlayers import Layer
from tfyarn.submission.sharedlayers import SharedStore

# Uncompressed: packed at the disk's speed (7x faster than gzip -1 here) and unpacked
# without gunzip on every node (1.75x faster), for 3.3x the bytes on HDFS and the network
# (docs/benchmarks.md, issue 37).
SUFFIX = ".tar"
RECORD_SUFFIX = ".json"
UPLOADS_AT_ONCE = 4
RECORD_WAIT_S = 10.0  # a layer renamed into place before its record: the record follows


@dataclass(frozen=True)
class ShippedEnv:
    """The environment's layers on the cluster, and what this submit did to put them there."""

    layers: tuple[tuple[str, str, str], ...]  # (directory in a container, URL, visibility)
    master_layers: tuple[tuple[str, str, str], ...] = ()  # those the AppMaster needs
    packed: tuple[str, ...] = ()  # the labels packed by this submit
    uploaded: tuple[str, ...] = ()  # and uploaded by it

    def files(self) -> dict:
        """What a skein service needs to run ./pyenv/bin/python (tests, benchmarks)."""
        return JobEnvironment(layers=self.layers).files()


def record_of(archive: Path) -> dict:
    return {"size": archive.stat().st_size, "sha256": sha256_file(archive)}


def local_pack(layer: Layer, source: envpack.EnvSource, echo: Callable[[str], None],
               suffix: str = SUFFIX) -> tuple[Path, dict, bool]:
    """The layer's pack in the local cache with its record, packed unless a whole one is
    there; (path, record, whether it was packed now). Two submits at once pack a layer
    once: the second waits for the first's pack and takes it."""
    archive = envpack.cache_dir() / layer.archive_name(suffix)
    record_file = archive.with_name(archive.name + RECORD_SUFFIX)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive.with_name(f".{archive.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.is_file() and record_file.is_file():
            record = json.loads(record_file.read_text())
            if record == record_of(archive):
                return archive, record, False
            echo(f"  {archive}: not the pack its record describes (changed or cut short): "
                 "packing it again")
        started = time.monotonic()
        added = envpack.launchers(source.version, source.lib) if layer.kind != "site" else []
        size = envpack.pack(envlayers.members(layer, source), archive, added,
                            envpack.TerminalProgress(f"  packing {layer.label}"))
        record = record_of(archive)
        partial = record_file.with_name(f".{record_file.name}.{os.getpid()}")
        partial.write_text(json.dumps(record))
        os.replace(partial, record_file)
    echo(f"  packed {layer.label}: {envpack.format_size(size)} in "
         f"{time.monotonic() - started:.1f} s")
    return archive, record, True


def ship(source: envpack.EnvSource, echo: Callable[[str], None] = print,
         directory_url: str | None = None, shared_url: str | None = None,
         trusted: tuple[str, ...] | None = None) -> ShippedEnv:
    """Every layer of ``source`` on the cluster: packed and uploaded where it is not. In
    ``directory_url`` (default: your HDFS home's .tfyarn/envs), or with ``shared_url`` in
    a directory all users share, from the subdirectories of those ``trusted``
    (sharedlayers.py)."""
    from appmaster.common.storage import StorageError

    layers = envlayers.split(source)
    what = f"this Python environment ({source.prefix})"
    if shared_url:
        store: HomeStore | SharedStore = SharedStore(shared_url, cluster_user(), trusted, echo)
    else:
        directory_url = directory_url or cache_url("").rstrip("/")
        try:
            store = HomeStore(directory_url)
        except StorageError as exc:
            raise JobEnvironmentError(
                f"cannot read {directory_url}, where {what} goes: {exc}.",
                hint="check that HDFS is reachable from here and that you may write there.") \
                from None
    shipped, packed, used, uploading = [], [], [], []
    master_needs = masterlayers.needed_by_master()
    for_master = []
    verified = Verified(envpack.cache_dir() / "verified.json")
    # Packs one after another (the disk's work), each uploaded while the next is packed, a
    # few at once: HDFS takes about 0.5 s to close each file (docs/benchmarks.md §11).
    with ThreadPoolExecutor(UPLOADS_AT_ONCE, thread_name_prefix="upload") as uploads:
        for layer in layers:
            name = layer.archive_name(SUFFIX)
            if found := store.find(name):
                relative, remote_file, public = found
                url = f"{store.remote.url}/{relative}"
                check_remote(store.remote, relative, remote_file, url, verified)
            else:
                archive, record, was_packed = local_pack(layer, source, echo)
                packed += [layer.label] if was_packed else []
                relative, public = store.upload_to(name)
                url = f"{store.remote.url}/{relative}"
                uploading.append((layer.label, url, uploads.submit(
                    upload_layer, archive, record, url, f"{what}'s layer {layer.label}")))
            used.append(relative)
            shipped.append((layer.link, url, "public" if public else "private"))
            for_master.append(masterlayers.for_master(layer, master_needs))
        uploaded = []
        if still := sum(not upload.done() for _, _, upload in uploading):
            echo(f"  waiting for {still} upload(s) to HDFS to finish")
        for label, url, upload in uploading:
            if (seconds := upload.result()) is None:
                echo(f"  another submit uploaded {label} first: {url}")
            else:
                uploaded.append(label)
                echo(f"  uploaded {label} to {url} in {seconds:.1f} s")
    verified.save()
    layeruse.record(store.remote, cluster_user(), used, shared=bool(shared_url),
                    known=store.known(), echo=echo)
    prune_cache({layer.archive_name(SUFFIX) for layer in layers})
    reused = len(layers) - len(uploaded)
    visibilities = sorted({visibility for _, _, visibility in shipped})
    echo(f"Python env: {source.prefix} in {len(layers)} layers on the cluster ({reused} there "
         f"already, {len(uploaded)} uploaded now; {' and '.join(visibilities)} in the "
         f"NodeManagers' cache{store.whose(used)})")
    master = tuple(layer for layer, needed in zip(shipped, for_master, strict=True) if needed)
    return ShippedEnv(tuple(shipped), master, tuple(packed), tuple(uploaded))


def upload_layer(archive: Path, record: dict, url: str, what: str) -> float | None:
    """The layer and then its record on the cluster; the seconds it took, or None when
    another submit had put it there first."""
    from appmaster.common.storage import RemoteDir

    started = time.monotonic()
    if not upload_once(archive, url, what=what):
        return None
    directory, name = url.rsplit("/", 1)
    RemoteDir(directory).write_bytes(name + RECORD_SUFFIX, json.dumps(record).encode())
    return time.monotonic() - started


class HomeStore:
    """The layers in a directory of one's own: listed once, by name."""

    def __init__(self, url: str) -> None:
        from appmaster.common.storage import RemoteDir, bounded

        self.remote = RemoteDir(url)
        what = f"HDFS ({url})"
        bounded(lambda: self.remote.make(), what=what)  # 0755, as uploads
        self.present = bounded(lambda: self.remote.list_files(), what=what)
        self.public = bounded(lambda: searchable_by_all(self.remote), what=what)

    def find(self, name: str) -> tuple[str, RemoteFile, bool] | None:
        """(its path here, the file, whether YARN may cache it publicly); None: absent."""
        found = self.present.get(name)
        return None if found is None else (
            name, found, self.public and bool(found.permission & 0o004))

    def upload_to(self, name: str) -> tuple[str, bool]:
        return name, self.public  # uploads are 0644

    def whose(self, used: list[str]) -> str:
        return ""

    def known(self) -> dict[str, RemoteFile]:
        """The files listed, by path under the directory."""
        return self.present


class Verified:
    """The layers on the cluster whose record this machine has read, by URL with their
    length and time: a later submit reads no record again while a layer is unchanged."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.known: dict[str, list[int]] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.known = {}
        self.changed = False

    def has(self, url: str, found) -> bool:
        return self.known.get(url) == [found.length, found.modified_ms]

    def add(self, url: str, found) -> None:
        self.known[url], self.changed = [found.length, found.modified_ms], True

    def save(self) -> None:
        if self.changed:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            partial.write_text(json.dumps(self.known))
            os.replace(partial, self.path)


def check_remote(remote, name: str, found, url: str, verified: Verified,
                 wait_s: float = RECORD_WAIT_S) -> None:
    """The layer on the cluster is the whole file its record describes: else
    JobEnvironmentError, naming it and the command that removes it."""
    if verified.has(url, found):
        return
    deadline = time.monotonic() + wait_s
    while (data := remote.read_bytes(name + RECORD_SUFFIX)) is None:
        if time.monotonic() > deadline:  # its uploader stopped between the two renames
            raise not_its_content(url, f"has no record beside it ({name}{RECORD_SUFFIX})")
        time.sleep(0.5)
    record = json.loads(data)
    if record.get("size") != found.length:
        raise not_its_content(url, f"is {found.length} bytes, its record says "
                              f"{record.get('size')}")
    verified.add(url, found)


def prune_cache(keep: set[str], cache: Path | None = None) -> None:
    """Of the local packs of a layer's label, keep this environment's and the newest other
    (each can be GBs; the cluster keeps its own copy); packs of earlier formats go."""
    cache = cache or envpack.cache_dir()
    for stale in [*cache.glob("env-*.tar.gz"), *cache.glob("layer-*")]:  # earlier formats
        if not stale.name.endswith((SUFFIX, SUFFIX + RECORD_SUFFIX)):
            stale.unlink(missing_ok=True)
    labels = {name.rsplit("-", 1)[0] for name in keep}
    for label in labels:
        others = sorted((p for p in cache.glob(f"{label}-*{SUFFIX}")
                         if p.name not in keep and p.name.rsplit("-", 1)[0] == label),
                        key=lambda p: p.stat().st_mtime, reverse=True)
        for old in others[1:]:
            old.unlink(missing_ok=True)
            old.with_name(old.name + RECORD_SUFFIX).unlink(missing_ok=True)


def not_its_content(url: str, why: str) -> JobEnvironmentError:
    return JobEnvironmentError(
        f"the environment layer {url} {why}: it is not the content its name stands for "
        "(copied or replaced by hand, or cut short), so tfyarn does not use it.",
        hint=f"remove it (`hdfs dfs -rm -f {url} {url}{RECORD_SUFFIX}`) and submit again: "
        "tfyarn uploads it anew.")


def searchable_by_all(remote) -> bool:
    """Whether YARN may cache files of this directory publicly: it and every directory
    above it searchable by everyone (its files are written 0644, readable by all)."""
    try:
        return all(status.permission & 0o001 for status in remote.lineage())
    except FileNotFoundError:
        return False
