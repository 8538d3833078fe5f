"""The environment's layers in a directory all users share: one copy per cluster (issue 37).

By default each user's layers go to their own HDFS home (layership.py), so two users with the
same packages upload, and every node localizes, two copies. An administrator who makes one
directory for everyone (``hdfs dfs -mkdir -p /tfyarn/layers && hdfs dfs -chmod 1777
/tfyarn/layers``) and names it in the site defaults (``site.global.python.layers.dir``)
gives every user one copy:

- each user writes only ``<dir>/<user>/`` (0755, its layers 0644, so YARN caches them
  PUBLIC): no two users' files share a name and nobody can replace another's layer;
- a submit uses a layer already in its own subdirectory, else in the subdirectory of a
  writer it trusts (``site.global.python.layers.trust``; by default the directory's owner),
  else uploads it to its own;
- trusting a writer means running their bytes, so their copy is used only if its HDFS owner
  is that writer and their subdirectory is theirs and writable by no one else; anything
  else is passed over with one line saying why.

HDFS round trips per submit: the directory and each one above it (its owner, and whether
YARN may cache below it publicly), one listing of the directory (every writer's
subdirectory with its owner and mode), one listing per writer looked in; a first upload
adds the user's subdirectory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from appmaster.common.storage import RemoteFile
from tfyarn.jobconfig.envvalues import DIR_KEY
from tfyarn.submission.environments import JobEnvironmentError, default_fs

SUBDIR_MODE = 0o755
@dataclass(frozen=True)
class Subdir:
    """A writer's subdirectory as the shared directory's listing shows it."""

    owner: str
    permission: int


def writers(me: str, trusted: tuple[str, ...] | None, dir_owner: str) -> tuple[str, ...]:
    """Whose subdirectories a submit looks in, in order: its own, then those it trusts
    (None: the shared directory's owner, the administrator who made it)."""
    return tuple(dict.fromkeys((me, *(trusted if trusted is not None else (dir_owner,)))))


def subdir_problem(writer: str, subdir: Subdir) -> str | None:
    """Why a writer's subdirectory cannot be trusted to hold only their files."""
    if subdir.owner != writer:
        return f"it belongs to {subdir.owner}, not {writer}"
    if subdir.permission & 0o022:
        return (f"others than {writer} may write in it (mode {subdir.permission:04o}: "
                "group or others may write)")
    return None


def file_problem(writer: str, found: RemoteFile) -> str | None:
    """Why a file in a writer's subdirectory cannot be trusted to be what they wrote."""
    if found.owner != writer:
        return f"written by {found.owner}, not {writer}"
    if found.permission & 0o022:  # truncated and appended to by others, it keeps its size
        return f"others than {writer} may write it (mode {found.permission:04o})"
    return None


def choose(name: str, order: tuple[str, ...],
           listings: dict[str, dict[str, RemoteFile]]) -> tuple[str | None, list[str]]:
    """The writer whose copy of layer ``name`` a submit uses (None: nobody's), and one
    line for each copy passed over: a file in a writer's subdirectory that someone else
    wrote (put there while the subdirectory was open to them, or moved in) or may write."""
    passed = []
    for writer in order:
        found = listings.get(writer, {}).get(f"{writer}/{name}")
        if found is None:
            continue
        if problem := file_problem(writer, found):
            passed.append(f"{writer}/{name}: {problem}")
            continue
        return writer, passed
    return None, passed


def missing_dir(url: str) -> JobEnvironmentError:
    return JobEnvironmentError(
        f"{DIR_KEY}: {url} does not exist (or is not a directory): it is where every user's "
        "environment layers go.",
        hint=f"an administrator makes it once for everyone: `hdfs dfs -mkdir -p {url} && "
        f"hdfs dfs -chmod 1777 {url}`; or remove {DIR_KEY} from your defaults file to keep "
        "the layers in your HDFS home.")


def may_not_write(url: str, me: str, why: str) -> JobEnvironmentError:
    return JobEnvironmentError(
        f"{DIR_KEY}: {me} may not write in {url} ({why}), so this environment's new layers "
        "cannot go there.",
        hint=f"an administrator opens it to every user as /tmp is: `hdfs dfs -chmod 1777 "
        f"{url}`; or remove {DIR_KEY} from your defaults file.")


def bad_own_subdir(url: str, me: str, problem: str) -> JobEnvironmentError:
    subdir = f"{url}/{me}"
    fix = (f"`hdfs dfs -chmod 755 {subdir}`" if problem.startswith("others")
           else f"the owner or an administrator removes it (`hdfs dfs -rm -r {subdir}`), and "
           "your next submit makes it anew")
    return JobEnvironmentError(
        f"{DIR_KEY}: {url}/{me}, where your environment layers go, cannot be trusted: "
        f"{problem}.", hint=fix + ".")


def qualified(url: str, fs_default: str | None = None) -> str:
    """``hdfs:///path`` as ``hdfs://<the default filesystem's authority>/path``: YARN's
    caches know a file by its URL as written, so every user's jobs must write it alike."""
    url = url.rstrip("/")
    parts = urlsplit(url)
    if parts.netloc:
        return url
    fs_default = fs_default or default_fs()
    return fs_default + parts.path if urlsplit(fs_default).scheme == parts.scheme else url


def bad_own_layer(url: str, line: str) -> JobEnvironmentError:
    path, problem = line.split(": ", 1)
    return JobEnvironmentError(
        f"{DIR_KEY}: your environment layer {url}/{path} cannot be trusted: {problem}.",
        hint=f"remove it and its record (`hdfs dfs -rm -f '{url}/{path}*'`) and submit again: "
        "tfyarn uploads it anew.")


class SharedStore:
    """The layers a submit finds in a shared directory, and where its own go: read once."""

    def __init__(self, url: str, me: str, trusted: tuple[str, ...] | None,
                 echo: Callable[[str], None]) -> None:
        from appmaster.common.storage import RemoteDir, StorageError, bounded

        self.url, self.me = qualified(url), me
        self.remote = RemoteDir(self.url)
        what = f"HDFS ({self.url})"
        try:
            above = bounded(lambda: self.remote.lineage(), what=what)
            entries = bounded(lambda: list(self.remote.client.list_status(self.remote.root)),
                              what=what)
        except (FileNotFoundError, NotADirectoryError):
            raise missing_dir(self.url) from None
        except StorageError as exc:
            if isinstance(exc.__cause__, FileNotFoundError | NotADirectoryError):
                raise missing_dir(self.url) from None
            raise JobEnvironmentError(f"cannot read {self.url} ({DIR_KEY}): {exc}.",
                                      hint="check that HDFS is reachable from here.") from None
        if not above[0].isdir:
            raise missing_dir(self.url)
        self.searchable = all(status.permission & 0o001 for status in above)
        subdirs = {os.path.basename(e.path): Subdir(e.owner, e.permission)
                   for e in entries if e.isdir}
        self.order = writers(me, trusted, above[0].owner)
        self.subdirs: dict[str, Subdir] = {}
        if me in subdirs and (problem := subdir_problem(me, subdirs[me])):
            raise bad_own_subdir(self.url, me, problem)
        for writer in self.order:
            if writer not in subdirs:
                continue
            if problem := subdir_problem(writer, subdirs[writer]):
                echo(f"  not using {self.url}/{writer}/: {problem}")
                continue
            self.subdirs[writer] = subdirs[writer]
        self.listings = {writer: bounded(lambda w=writer: self.remote.list_files(w), what=what)
                         for writer in self.subdirs}
        self.echo = echo

    def find(self, name: str) -> tuple[str, RemoteFile, bool] | None:
        """(path under the directory, the file, whether YARN may cache it publicly) of the
        copy of layer ``name`` this submit uses; None: none."""
        writer, passed = choose(name, tuple(w for w in self.order if w in self.subdirs),
                                self.listings)
        for line in passed:
            if line.startswith(f"{self.me}/"):  # uploading it again would meet it there
                raise bad_own_layer(self.url, line)
            self.echo(f"  not using {self.url}/{line}")
        if writer is None:
            return None
        found = self.listings[writer][f"{writer}/{name}"]
        public = (self.searchable and bool(self.subdirs[writer].permission & 0o001)
                  and bool(found.permission & 0o004))
        return found.path, found, public

    def upload_to(self, name: str) -> tuple[str, bool]:
        """Where this submit's own copy of layer ``name`` goes (its subdirectory, made at
        its first upload), and whether YARN may cache it publicly."""
        from appmaster.common.storage import StorageError, bounded

        if self.me not in self.subdirs:
            path = self.remote.path(self.me)
            try:
                bounded(lambda: (self.remote.client.mkdirs(path, permission=SUBDIR_MODE),
                                 self.remote.client.set_permission(path, SUBDIR_MODE)),
                        what=f"HDFS ({self.url})")
            except StorageError as exc:
                raise may_not_write(self.url, self.me, str(exc)) from None
            self.subdirs[self.me] = Subdir(self.me, SUBDIR_MODE)
        return f"{self.me}/{name}", self.searchable

    def known(self) -> dict[str, RemoteFile]:
        """The files listed (each writer looked in), by path under the directory."""
        return {path: info for listing in self.listings.values() for path, info in
                listing.items()}

    def whose(self, used: list[str]) -> str:
        """Which writers' layers the job uses, for the submit's summary."""
        counts = {writer: sum(path.startswith(f"{writer}/") for path in used)
                  for writer in self.order}
        return f"; from {self.url}: " + ", ".join(f"{n} of {w}'s" for w, n in counts.items())
