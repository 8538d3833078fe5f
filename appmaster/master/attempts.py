"""What one AppMaster attempt leaves for the next: a failure tfyarn decided is final.

skein's AppMaster unregisters only on success or on the last attempt, so a job that
tfyarn fails on purpose (a threshold, a timeout) would otherwise run again from scratch
in the next attempt. The decision is written beside the checkpoints, in the work dir,
which every attempt shares wherever YARN starts it: on HDFS through the native client (no
JVM), or on a local path for a one-node cluster.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from appmaster.common.storage import RemoteDir, StorageError, bounded, is_remote

log = logging.getLogger("tfyarn.attempts")

OUTCOME_FILE = ".tfyarn-outcome.json"


def attempt_number() -> int:
    """YARN's attempt of this AppMaster, from its container id (..._<attempt>_<container>)."""
    parts = os.environ.get("CONTAINER_ID", "").split("_")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else 1


def read_outcome(work_dir: str) -> tuple[str, str] | None:
    """(status, diagnostics) an earlier attempt decided, if any."""
    if is_remote(work_dir):
        try:
            data = bounded(lambda: RemoteDir(work_dir).read_bytes(OUTCOME_FILE))
        except StorageError as exc:
            log.warning("could not read %s/%s: %s", work_dir, OUTCOME_FILE, exc)
            return None
        text = data.decode() if data else None
    else:
        path = Path(work_dir) / OUTCOME_FILE
        text = path.read_text() if path.is_file() else None
    if not text:
        return None
    data = json.loads(text)
    return data["status"], data["diagnostics"]


def write_outcome(work_dir: str, status: str, diagnostics: str) -> None:
    text = json.dumps({"status": status, "diagnostics": diagnostics})
    if not is_remote(work_dir):
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        (Path(work_dir) / OUTCOME_FILE).write_text(text)
        return
    try:
        bounded(lambda: RemoteDir(work_dir).write_bytes(OUTCOME_FILE, text.encode()))
    except StorageError as exc:
        log.warning("could not record the outcome in %s (%s): a later AppMaster attempt "
                    "would run the job again", work_dir, exc)
