"""What the environment's settings may say, checked in the job files and again when the job
is submitted: archives YARN unpacks, Docker mounts, the shared layers' directory and whom to
trust there. Nothing is read from the cluster here."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from appmaster.common.settings import LAYERS_DIR, LAYERS_TRUST
from appmaster.common.storage import is_remote

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
DIR_KEY, TRUST_KEY = LAYERS_DIR.key, LAYERS_TRUST.key
_MOUNT = re.compile(
    r"(?P<source>/[^:,]*):(?P<dest>/[^:,]*)"
    r"(?::(?P<mode>(?:ro|rw)(?:\+(?:shared|rshared|slave|rslave|private|rprivate))?"
    r"|shared|rshared|slave|rslave|private|rprivate))?"
)
# A user name that is one path component: no "/", no leading "." or "-", no spaces.
_USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


def user_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a writer of the shared directory; None when it can."""
    if not isinstance(name, str) or not _USER_NAME.fullmatch(name):
        return (f"{name!r} is not a user name (letters, digits, '_', '.', '-'; no '/', "
                "not starting with '.' or '-')")
    return None


def archive_kind(path: str | os.PathLike[str]) -> str | None:
    """The archive kind by its name (".tar.gz", ".tgz", ".tar" or ".zip"), as YARN reads it;
    None for a name YARN would not unpack."""
    name = Path(path).name.lower()
    return next((suffix for suffix in ARCHIVE_SUFFIXES
                 if name.endswith(suffix) and len(name) > len(suffix)), None)


def docker_mount_problem(mount: str) -> str | None:
    """Why a YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS entry is malformed; None when it is fine."""
    if _MOUNT.fullmatch(mount):
        return None
    return (f"{mount!r} is no mount: write /host/path:/container/path[:ro|rw], both paths "
            "absolute, without commas")


def layers_settings(settings: dict[str, Any]) -> tuple[str | None, tuple[str, ...] | None,
                                                     list[tuple[str, str, str, Any]]]:
    """(the shared directory, whom to trust, problems: (key, what is wrong, the fix, the
    value)) from a job's or a defaults file's settings; nothing read from HDFS."""
    problems: list[tuple[str, str, str, Any]] = []
    url = settings.get(DIR_KEY)
    if url is not None and (not isinstance(url, str) or not is_remote(url.strip())
                            or "${" in url):
        problems.append((DIR_KEY, "must be a directory on HDFS, as an hdfs:// or viewfs:// URL",
                         'write e.g. "hdfs:///tfyarn/layers", or remove the key to keep the '
                         "layers in your HDFS home.", url))
        url = None
    trusted = settings.get(TRUST_KEY)
    if isinstance(trusted, str):
        trusted = [name.strip() for name in trusted.split(",") if name.strip()]
    if trusted is not None and not isinstance(trusted, list):
        problems.append((TRUST_KEY, "must be a list of user names or one comma-separated "
                         "string", 'write e.g. ["hadoop", "alice"], or [] to trust nobody.',
                         settings[TRUST_KEY]))
        trusted = None
    for name in trusted or ():
        if problem := user_name_problem(name):
            problems.append((TRUST_KEY, problem, "give the HDFS user names of those whose "
                             'layers you run, e.g. ["hadoop"].', name))
    return (url.strip().rstrip("/") if url else None,
            None if trusted is None or problems else tuple(trusted), problems)
