"""The job's work dir: where it defaults to, and whether the cluster can use it.

On a cluster of many machines the only storage every container shares is the cluster's file
system (HDFS), so that is where a job's checkpoints live by default:
``<fs.defaultFS>/user/<user>/tfyarn/jobs/${APP_ID}``. A local path is still accepted, for a
one-node cluster or a directory every node mounts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from appmaster.storage import REMOTE_SCHEMES, RemoteDir, StorageError, bounded, is_remote
from tfyarn import environments

WORK_DIR_KEY = "site.global.user.work.dir"
LOCAL_DEFAULT = str(Path.home() / "tfyarn" / "jobs" / "${APP_ID}")
CHECK_TIMEOUT_S = 20.0


class WorkDirError(ValueError):
    """The work dir cannot be used; the message names the key and the fix."""


def default_work_dir(environ: Mapping[str, str] | None = None) -> str:
    """On the cluster's default file system, or local when no Hadoop configuration says
    which (a dry run on a machine without one)."""
    environ = os.environ if environ is None else environ
    try:
        fs = environments.default_fs(environ)
    except environments.JobEnvironmentError:
        return LOCAL_DEFAULT
    return f"{fs}/user/{environments.cluster_user(environ)}/tfyarn/jobs/${{APP_ID}}"


def fixed_part(work_dir: str) -> str:
    """The directory above the first placeholder: it must exist or be creatable now."""
    if "${" not in work_dir:
        return work_dir
    return work_dir.split("${", 1)[0].rsplit("/", 1)[0]


def check(work_dir: str, environ: Mapping[str, str] | None = None) -> None:
    """Refuse, before anything is submitted, a work dir the job could not use."""
    environ = os.environ if environ is None else environ
    parts = urlsplit(work_dir)
    if not parts.scheme or parts.scheme == "file":
        return  # the node's own disk: shared only on a one-node cluster (README)
    if parts.scheme not in REMOTE_SCHEMES:
        raise WorkDirError(
            f"{WORK_DIR_KEY} = {work_dir!r}: tfyarn's tasks reach the cluster's file system "
            f"over HDFS's protocol ({', '.join(s + '://' for s in REMOTE_SCHEMES)}), not "
            f"{parts.scheme}://. Fix: use a directory on the cluster's file system, e.g. "
            f"{default_work_dir(environ)}.")
    if not work_dir.startswith(f"{parts.scheme}://") or not parts.path.startswith("/") or \
            re.search(r"\s", work_dir):
        raise WorkDirError(
            f"{WORK_DIR_KEY} = {work_dir!r} is not a URL of the form "
            f"{parts.scheme}://namenode:port/path (or {parts.scheme}:///path for the default "
            f"file system). Fix: write it so, e.g. {default_work_dir(environ)}.")
    _check_authority(work_dir, parts.scheme, parts.netloc, environ)
    directory = fixed_part(work_dir)
    try:
        bounded(lambda: RemoteDir(directory).check_writable(), CHECK_TIMEOUT_S,
                what=f"The NameNode of {directory}")
    except StorageError as exc:
        raise WorkDirError(
            f"{WORK_DIR_KEY} = {work_dir!r}: cannot write in {directory}: {exc}. Fix: check "
            "that the NameNode is up and reachable from here (`hdfs dfs -ls "
            f"{directory}`), and that you may write there (or pick a directory you own, "
            f"such as {default_work_dir(environ)}).") from None


def _check_authority(work_dir: str, scheme: str, authority: str,
                     environ: Mapping[str, str]) -> None:
    """hdfs://<name>/ must name the default file system, a configured name service or a
    NameNode's host:port; Slider's files say hdfs://default/, which clusters rarely define."""
    if not authority or ":" in authority:
        return  # the default file system, or an explicit NameNode address (checked by writing)
    known = _name_services(environ)
    try:
        default = environments.default_fs(environ)
    except environments.JobEnvironmentError:
        default = None
    if default and urlsplit(default).netloc == authority:
        return
    if authority not in known:
        offered = ", ".join(sorted({*(f"{scheme}://{n}" for n in known),
                                    *([default] if default else [])})) or "none configured"
        raise WorkDirError(
            f"{WORK_DIR_KEY} = {work_dir!r} names the file system {scheme}://{authority}, "
            f"which this cluster does not have (its default file system, fs.defaultFS, and "
            f"name services: {offered}). Fix: use {scheme}:///… for the default file system, "
            f"or {default or 'the cluster' + chr(39) + 's fs.defaultFS'}/….")


def _name_services(environ: Mapping[str, str]) -> set[str]:
    """dfs.nameservices (and viewfs mount tables) of the client configuration."""
    names: set[str] = set()
    for conf_dir in environments.hadoop_conf_dirs(environ):
        for site in ("hdfs-site.xml", "core-site.xml"):
            path = conf_dir / site
            if not path.is_file():
                continue
            text = path.read_text(errors="replace")
            for match in re.finditer(
                    r"<name>\s*dfs\.nameservices\s*</name>\s*<value>([^<]*)</value>", text):
                names.update(n.strip() for n in match.group(1).split(",") if n.strip())
            names.update(re.findall(r"<name>\s*fs\.viewfs\.mounttable\.([^.<]+)\.", text))
        if names:
            break
    return names


__all__ = ["WorkDirError", "check", "default_work_dir", "is_remote"]
