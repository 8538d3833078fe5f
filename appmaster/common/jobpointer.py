"""Where a job's work dir is, findable after the job ended: a small pointer file on HDFS.

The AppMaster writes ``<HDFS home of the job's user>/.tfyarn/jobs/<app_id>.json`` holding
``{"work_dir": "<url>"}`` when the job starts; the client (`tfyarn tensorboard`, `tfyarn
report`) reads it for any job, running or long finished, without the AppMaster's log.

Standard library and appmaster.common.storage only: the AppMaster imports this inside its YARN
container, where the client's packages (click, requests) need not be.
"""

from __future__ import annotations

import json

from appmaster.common.storage import RemoteDir, StorageError, bounded

# What the AppMaster itself writes into the job's work dir (the report that outlives the job):
# not the script's files, so a restarted generation restores none of them and its restart
# line never names one as the checkpoint it restored.
REPORT_HTML_FILE = "tfyarn-report.html"
REPORT_JSON_FILE = "tfyarn-report.json"
APPMASTER_FILES = frozenset({REPORT_HTML_FILE, REPORT_JSON_FILE})

POINTER_DIR = ".tfyarn/jobs"  # under the user's HDFS home, beside .tfyarn/envs (packed envs)
READ_TIMEOUT_S = 10.0


def pointer_dir(user: str, default_fs: str | None = None) -> str:
    """``<default_fs>/user/<user>/.tfyarn/jobs``; without ``default_fs``, ``hdfs:///...``:
    the configuration's default file system (HADOOP_CONF_DIR), as hdfs-native reads it."""
    base = default_fs.rstrip("/") if default_fs else "hdfs://"
    return f"{base}/user/{user}/{POINTER_DIR}"


def pointer_name(app_id: str) -> str:
    return f"{app_id}.json"


def pointer_path(user: str, app_id: str, default_fs: str | None = None) -> str:
    """The URL of ``app_id``'s pointer file, e.g. hdfs:///user/alice/.tfyarn/jobs/application_1_0001.json."""
    return f"{pointer_dir(user, default_fs)}/{pointer_name(app_id)}"


def write_pointer(user: str, app_id: str, work_dir: str, default_fs: str | None = None) -> None:
    """Write (or replace) the pointer file; StorageError if HDFS refuses. The directory is
    private to its owner (0700): it lists every job of the user."""
    directory = RemoteDir(pointer_dir(user, default_fs))
    directory.make_private()
    directory.write_bytes(pointer_name(app_id), json.dumps({"work_dir": work_dir}).encode())


def read_pointer(user: str, app_id: str, default_fs: str | None = None,
                 timeout_s: float = READ_TIMEOUT_S) -> str | None:
    """The work dir the pointer file names; None when there is none, it cannot be read
    (HDFS unreachable, no permission) or it is not what write_pointer writes."""
    def read() -> bytes | None:
        return RemoteDir(pointer_dir(user, default_fs)).read_bytes(pointer_name(app_id))

    try:
        data = bounded(read, timeout_s, what="HDFS (the job's pointer file)")
        work_dir = json.loads(data)["work_dir"] if data else None
    except (StorageError, OSError, ValueError, KeyError, TypeError):
        return None
    return work_dir if isinstance(work_dir, str) and work_dir else None
