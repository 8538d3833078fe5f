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

from appmaster.common import settings
from appmaster.common.storage import REMOTE_SCHEMES, RemoteDir, StorageError, bounded, is_remote
from tfyarn.errors import TfyarnError
from tfyarn.hadoop import hadoopconf
from tfyarn.security import kerberos
from tfyarn.submission import environments

WORK_DIR_KEY = settings.WORK_DIR.key
CHECKPOINT_PREFIX_KEY = settings.CHECKPOINT_PREFIX.key  # Slider's: <prefix>/<name>.<app id>
DATA_DIR_KEY = settings.DATA_DIR.key  # Slider's: training data, localized by YARN
DATA_KEY = settings.DATA.key  # hdfs:///path#name entries, localized by YARN
KEYS = (WORK_DIR_KEY, CHECKPOINT_PREFIX_KEY, DATA_DIR_KEY, DATA_KEY)  # what check_plan judges
LOCAL_DEFAULT = str(Path.home() / "tfyarn" / "jobs" / "${APP_ID}")
CHECK_TIMEOUT_S = 20.0


class WorkDirError(TfyarnError, ValueError):
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


def check_plan(plan, environ: Mapping[str, str] | None = None,
               named: Mapping[str, str] | None = None, checkpoint_prefix: bool = False) -> None:
    """The work dir (or Slider's checkpoint prefix, ``checkpoint_prefix``) and the data of a
    JobPlan; ``named``: how messages name a setting whose value the command line gave (its
    key -> the option, e.g. --data), the others by their keys."""
    named = named or {}
    if checkpoint_prefix:  # <prefix>/<name>.${APP_ID}: the prefix was written
        check(fixed_part(plan.work_dir), environ, key=CHECKPOINT_PREFIX_KEY,
              name=named.get(CHECKPOINT_PREFIX_KEY))
    else:
        check(plan.work_dir, environ, name=named.get(WORK_DIR_KEY))
    if plan.data_dir:
        check_data_dir(plan.data_dir, environ, named.get(DATA_DIR_KEY, DATA_DIR_KEY))
    if plan.data:
        check_data({entry.name: entry.url for entry in plan.data}, environ,
                   named.get(DATA_KEY, DATA_KEY))


def qualified(url: str, environ: Mapping[str, str] | None = None) -> str:
    """hdfs:///path on the default file system, with its authority (for YARN's localizer)."""
    parts = urlsplit(url)
    if parts.netloc or parts.scheme not in REMOTE_SCHEMES:
        return url
    try:
        default = environments.default_fs(os.environ if environ is None else environ)
    except environments.JobEnvironmentError:
        return url
    if urlsplit(default).scheme != parts.scheme:
        return url
    return default.rstrip("/") + parts.path


def _check_url(url: str, environ: Mapping[str, str], key: str, example: str) -> None:
    """A URL of the cluster's file system, well formed, whose name service the cluster has."""
    parts = urlsplit(url)
    if parts.scheme not in REMOTE_SCHEMES:
        raise WorkDirError(
            f"{key} = {url!r}: tfyarn's tasks reach the cluster's file system "
            f"over HDFS's protocol ({', '.join(s + '://' for s in REMOTE_SCHEMES)}), not "
            f"{parts.scheme}://. Fix: use a directory on the cluster's file system, e.g. "
            f"{example}.")
    if not url.startswith(f"{parts.scheme}://") or not parts.path.startswith("/") or \
            re.search(r"\s", url):
        raise WorkDirError(
            f"{key} = {url!r} is not a URL of the form "
            f"{parts.scheme}://namenode:port/path (or {parts.scheme}:///path for the default "
            f"file system). Fix: write it so, e.g. {example}.")
    _check_authority(url, parts.scheme, parts.netloc, environ, key)


def check(work_dir: str, environ: Mapping[str, str] | None = None,
          key: str = WORK_DIR_KEY, name: str | None = None) -> None:
    """Refuse, before anything is submitted, a work dir the job could not use; messages
    name it ``name`` (the option that gave it), else by its ``key``."""
    environ = os.environ if environ is None else environ
    parts = urlsplit(work_dir)
    if not parts.scheme or parts.scheme == "file":
        return  # the node's own disk: shared only on a one-node cluster (README)
    example = default_work_dir(environ)
    if key == CHECKPOINT_PREFIX_KEY:
        example = example.replace("/tfyarn/jobs/${APP_ID}", "/checkpoints")
    key = name or key
    _check_url(work_dir, environ, key, example)
    directory = fixed_part(work_dir)
    try:
        bounded(lambda: RemoteDir(directory).check_writable(), CHECK_TIMEOUT_S,
                what=f"The NameNode of {directory}")
    except StorageError as exc:
        kerberos.check_cluster_wants_no_kerberos(  # the likelier cause, where it is
            qualified(directory, environ), hadoopconf.client_configuration(environ),
            hadoopconf.site_file("core-site.xml", environ))
        raise WorkDirError(
            f"{key} = {work_dir!r}: cannot write in {directory}: {exc}. Fix: check "
            "that the NameNode is up and reachable from here (`hdfs dfs -ls "
            f"{directory}`), and that you may write there (or pick a directory you own, "
            f"such as {example}).") from None


def check_data_dir(data_dir: str, environ: Mapping[str, str] | None = None,
                   key: str = DATA_DIR_KEY) -> None:
    """Slider's training data dir: on the cluster's file system, a directory holding files;
    messages name it ``key`` (or the option that gave it)."""
    environ = os.environ if environ is None else environ
    example = default_work_dir(environ).replace("/tfyarn/jobs/${APP_ID}", "/mnist-data")
    _check_url(data_dir, environ, key, example)

    def look() -> str | None:
        remote = RemoteDir(data_dir)
        try:
            info = remote.client.get_file_info(remote.root)
        except FileNotFoundError:
            return "no such directory"
        if not info.isdir:
            return "a file, not a directory"
        return None if remote.list_files() else "the directory holds no files"

    try:
        problem = bounded(look, CHECK_TIMEOUT_S, what=f"The NameNode of {data_dir}")
    except StorageError as exc:
        raise WorkDirError(
            f"{key} = {data_dir!r}: cannot read it: {exc}. Fix: check that the "
            f"NameNode is up and reachable from here (`hdfs dfs -ls {data_dir}`) and that you "
            "may read it.") from None
    if problem:
        raise WorkDirError(
            f"{key} = {data_dir!r}: {problem}; every task gets a copy of that "
            f"directory's files as --data_dir. Fix: put the training data there first "
            f"(`hdfs dfs -put <files> {data_dir}`), or name the directory that holds it.")


def check_data(data: Mapping[str, str], environ: Mapping[str, str] | None = None,
               key: str = DATA_KEY) -> None:
    """site.global.data's entries (name -> URL): on the cluster's file system, and there."""
    environ = os.environ if environ is None else environ
    for name, url in data.items():
        _check_url(url, environ, key, f"hdfs:///user/{environments.cluster_user(environ)}/"
                   f"{name}#{name}")

    def missing() -> list[str]:
        gone = []
        for name, url in data.items():
            remote = RemoteDir(url)
            try:
                remote.client.get_file_info(remote.root)
            except FileNotFoundError:
                gone.append(f"{url}#{name}")
        return gone

    try:
        gone = bounded(missing, CHECK_TIMEOUT_S, what="The NameNode of the data")
    except StorageError as exc:
        raise WorkDirError(
            f"{key}: cannot read {', '.join(data.values())}: {exc}. Fix: check that the "
            "NameNode is up and reachable from here and that you may read them.") from None
    if gone:
        raise WorkDirError(
            f"{key}: {', '.join(gone)}: no such file or directory on the cluster's file "
            "system, so YARN could not copy it into the tasks. Fix: copy the data there first "
            "(`hdfs dfs -put <local path> <path>`), or correct the path (`hdfs dfs -ls "
            "<its directory>` shows what is there).")


def _check_authority(work_dir: str, scheme: str, authority: str,
                     environ: Mapping[str, str], key: str = WORK_DIR_KEY) -> None:
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
            f"{key} = {work_dir!r} names the file system {scheme}://{authority}, "
            f"which this cluster does not have (its default file system, fs.defaultFS, and "
            f"name services: {offered}). Fix: use {scheme}:///… for the default file system, "
            f"or {default or 'the cluster' + chr(39) + 's fs.defaultFS'}/….")


def _name_services(environ: Mapping[str, str]) -> set[str]:
    """dfs.nameservices (and viewfs mount tables) of the client configuration."""
    conf = hadoopconf.client_configuration(environ)
    names = {n.strip() for n in conf.get("dfs.nameservices", "").split(",") if n.strip()}
    names.update(key.split(".")[3] for key in conf
                 if key.startswith("fs.viewfs.mounttable.") and key.count(".") >= 4)
    return names


__all__ = ["WorkDirError", "check", "check_data", "check_data_dir", "check_plan",
           "default_work_dir", "is_remote", "qualified"]
