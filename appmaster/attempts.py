"""What one AppMaster attempt leaves for the next: a failure tfyarn decided is final.

skein's AppMaster unregisters only on success or on the last attempt, so a job that
tfyarn fails on purpose (a threshold, a timeout) would otherwise run again from scratch
in the next attempt. The decision is written beside the checkpoints, in the work dir,
which every attempt shares: on local disk directly, elsewhere (HDFS, ...) with `hadoop fs`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger("tfyarn.attempts")

OUTCOME_FILE = ".tfyarn-outcome.json"


def attempt_number() -> int:
    """YARN's attempt of this AppMaster, from its container id (..._<attempt>_<container>)."""
    parts = os.environ.get("CONTAINER_ID", "").split("_")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else 1


def read_outcome(work_dir: str) -> tuple[str, str] | None:
    """(status, diagnostics) an earlier attempt decided, if any."""
    target = f"{work_dir.rstrip('/')}/{OUTCOME_FILE}"
    if "://" not in work_dir:
        path = Path(target)
        text = path.read_text() if path.is_file() else None
    else:
        text = _hadoop_fs("-cat", target)
    if not text:
        return None
    data = json.loads(text)
    return data["status"], data["diagnostics"]


def write_outcome(work_dir: str, status: str, diagnostics: str) -> None:
    text = json.dumps({"status": status, "diagnostics": diagnostics})
    target = f"{work_dir.rstrip('/')}/{OUTCOME_FILE}"
    if "://" not in work_dir:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        Path(target).write_text(text)
    elif _hadoop_fs("-mkdir", "-p", work_dir) is None or \
            _hadoop_fs("-put", "-f", "-", target, stdin=text) is None:
        log.warning("could not record the outcome in %s: a later AppMaster attempt would run "
                    "the job again", work_dir)


def _hadoop_fs(*args: str, stdin: str | None = None) -> str | None:
    """`hadoop fs ARGS` output, or None when it fails or no `hadoop` is on the node."""
    home = os.environ.get("HADOOP_HOME")
    hadoop = shutil.which("hadoop") or (
        f"{home}/bin/hadoop" if home and os.path.isfile(f"{home}/bin/hadoop") else None)
    if hadoop is None:
        log.warning("no `hadoop` command on this node's PATH (%s)", os.environ.get("PATH"))
        return None
    result = subprocess.run([hadoop, "fs", *args], input=stdin, capture_output=True, text=True)
    if result.returncode != 0:
        log.warning("`hadoop fs %s` failed: %s", " ".join(args), result.stderr.strip()[-500:])
        return None
    return result.stdout
