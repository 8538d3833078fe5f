"""Finding and opening a task's files on HDFS through the native client (no JVM).

hdfs-native reads HADOOP_CONF_DIR (name services, HA) and the delegation tokens YARN gives
every container (HADOOP_TOKEN_FILE_LOCATION), so this works in a task and on any machine
with the cluster's client configuration.
"""

from __future__ import annotations

import gzip
import posixpath
from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from typing import BinaryIO

SCHEMES = ("hdfs", "viewfs")
_MAGIC = set("*?[")


def _client(authority: str):
    from hdfs_native import Client  # imported here: shards and records need no HDFS

    return Client(authority) if authority else Client()


def _split(url: str) -> tuple[str, str]:
    """(scheme://authority or "" for the default file system, absolute path). Split by hand:
    a glob's "?" would be a query to urlsplit."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if scheme not in SCHEMES or not sep or not slash:
        raise ValueError(f"{url!r} is not a URL on HDFS. Fix: write hdfs:///path/to/*.tfrecord "
                         "(hdfs:/// is the cluster's default file system) or "
                         "hdfs://namenode:port/path.")
    return (f"{scheme}://{authority}" if authority else ""), "/" + path


def _visible(path: str) -> bool:
    """Hadoop's convention: _SUCCESS, _logs and .hidden files are not data."""
    return not posixpath.basename(path).startswith(("_", "."))


def list_files(patterns: str | Iterable[str]) -> list[str]:
    """The files matching glob patterns (``*``, ``?``, ``[...]`` within one path component;
    a directory stands for the files in it), as URLs, sorted; none matching is an error."""
    found: set[str] = set()
    for pattern in [patterns] if isinstance(patterns, str) else list(patterns):
        authority, path = _split(pattern)
        scheme_authority = authority or pattern.partition("://")[0] + "://"
        client = _client(authority)
        matches = [m for m in _expand(client, path) if _visible(m)]
        if not matches:
            raise FileNotFoundError(f"no file matches {pattern}. Fix: check the pattern with "
                                    f"`hdfs dfs -ls {pattern}`, or write the data there first.")
        found.update(scheme_authority + m for m in matches)
    return sorted(found)


def _expand(client, path: str) -> list[str]:
    """Files under the pattern ``path``, one component at a time."""
    current = ["/"]
    for part in [p for p in path.split("/") if p]:
        if not _MAGIC & set(part):
            current = [posixpath.join(c, part) for c in current]
            continue
        current = [s.path for c in current for s in _statuses(client, c)
                   if fnmatchcase(posixpath.basename(s.path), part)]
    files = []
    for candidate in current:
        try:
            info = client.get_file_info(candidate)
        except FileNotFoundError:
            continue
        if info.isdir:
            files.extend(s.path for s in _statuses(client, candidate) if not s.isdir)
        else:
            files.append(candidate)
    return files


def _statuses(client, directory: str) -> Iterator:
    try:
        yield from client.list_status(directory)
    except (FileNotFoundError, NotADirectoryError):
        return


def open_file(url: str, compression: str | None = None) -> BinaryIO:
    """A stream of the file's bytes; ``compression="GZIP"`` unzips it on the way."""
    authority, path = _split(url)
    stream = _client(authority).read(path)
    if compression is None or compression == "":
        return stream
    if compression.upper() == "GZIP":
        return gzip.GzipFile(fileobj=stream, mode="rb")
    raise ValueError(f'compression {compression!r}: only None and "GZIP" are read.')
