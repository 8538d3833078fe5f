"""Training data that YARN localizes into every task: ``hdfs:///path#name`` entries.

Written in appConfig as ``site.global.data`` (a list, or one comma-separated string) or given
as ``tfyarn submit --data`` (repeatable). Each entry is a file, a directory or an archive on
the cluster's file system; YARN copies it into each task's data dir under ``name`` (an
archive unpacked), once per node, before the script starts. Whether the paths exist is
checked against HDFS before submitting (tfyarn/submission/workdir.py).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from appmaster.common.jobrules import is_plain_name, repeated_names
from appmaster.common.storage import REMOTE_SCHEMES
from tfyarn.jobconfig.documents import Checker, kind_of
from tfyarn.jobconfig.envvalues import ARCHIVE_SUFFIXES
from tfyarn.jobconfig.model import DataEntry

DATA_OPTION = "--data"
EXAMPLE = "hdfs:///user/${USER_NAME}/mnist.tar.gz#mnist"
# What YARN unpacks by the resource's name (a .jar too, as MapReduce's -archives).
_UNPACKED = (*ARCHIVE_SUFFIXES, ".jar")


def is_archive(path: str) -> bool:
    return path.lower().endswith(_UNPACKED)


def as_list(value: Any) -> list[str] | None:
    """A list of strings, or one comma-separated string; None for anything else."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    return None


def read_entry(text: str, user: str) -> tuple[DataEntry | None, str, str]:
    """One entry read: (entry, "", "") or (None, what is wrong, the fix)."""
    url, _, name = text.replace("${USER_NAME}", user).partition("#")
    parts = urlsplit(url)
    if parts.scheme not in REMOTE_SCHEMES:
        return None, "not on the cluster's file system", (
            "give an hdfs:// (or viewfs://) URL, e.g. hdfs:///data/mnist#mnist (hdfs:/// is "
            "the default file system); to ship local files, put them in the scripts directory "
            "or copy them to HDFS first (hdfs dfs -put).")
    if not url.startswith(f"{parts.scheme}://") or not parts.path.strip("/") \
            or parts.query or any(c.isspace() for c in text):
        return None, "not a URL of the form hdfs://[namenode:port]/path[#name]", \
            "write e.g. hdfs:///data/mnist.tar.gz#mnist."
    if "${" in url:
        return None, "unknown placeholder", "use only ${USER_NAME} (the submitting user)."
    name = name.strip() or parts.path.rstrip("/").rsplit("/", 1)[-1]
    if not is_plain_name(name):
        return None, f"#{name} cannot be a name in the task's data dir", \
            'give a plain name after "#", e.g. #mnist (no "/", not starting with ".").'
    return DataEntry(url.rstrip("/"), name, is_archive(parts.path)), "", ""


def parse_entries(c: Checker, where: str, value: Any, user: str) -> tuple[DataEntry, ...]:
    """Every entry of the key (or option) ``where``, each problem recorded in ``c``."""
    texts = as_list(value)
    if texts is None:
        c.add(where, f"must be a list of strings or one comma-separated string, not "
              f"{kind_of(value)}", f'write e.g. ["{EXAMPLE}"].', value=value)
        return ()
    read: list[tuple[DataEntry, str]] = []
    for text in texts:
        entry, message, fix = read_entry(text, user)
        if entry is None:
            c.add(where, message, fix, value=text)
        else:
            read.append((entry, text))
    entries = [entry for entry, _ in read]
    # by identity: an entry written twice is the same value twice, the first one kept
    repeated = {id(entry): earlier for entry, earlier in repeated_names(entries)}
    for entry, text in read:
        if id(entry) in repeated:
            c.add(where, f'the name "{entry.name}" is given twice (also by '
                  f"{repeated[id(entry)]})", "give each entry its own #name, e.g. "
                  f"{entry.url}#{entry.name}2.", value=text)
    return tuple(entry for entry in entries if id(entry) not in repeated)
