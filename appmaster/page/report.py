"""The job's report: its page, curves and timeline as one self-contained HTML file, and the
view it was drawn from as JSON, written to the job's work dir so they outlive the job.

The AppMaster writes both now and then while the job runs (when the view changed) and once
more at the end; `tfyarn report` fetches the HTML, or renders it again from the JSON, and
`tfyarn status` on a finished job reads the JSON. The report has no script that fetches and
no external file: it opens from a file on a machine with no network.

Where a job's work dir is, for a job that has ended: the AppMaster also writes a small
pointer on HDFS (appmaster/common/jobpointer.py).
Only the standard library (and hdfs-native, through appmaster/common/storage.py): this module runs
inside YARN containers.
"""

from __future__ import annotations

import getpass
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from appmaster.common import jobpointer
from appmaster.common.storage import RemoteDir, StorageError, bounded, is_remote
from appmaster.page.jobpage import render_page

log = logging.getLogger("tfyarn.report")

HTML_FILE = jobpointer.REPORT_HTML_FILE
JSON_FILE = jobpointer.REPORT_JSON_FILE
FORMAT = 1
INTERVAL_S = 60.0  # while the job runs; each write is the whole view, so not every refresh
WRITE_TIMEOUT_S = 20.0

def render_report(view: dict, written: float | None = None, note: str = "") -> str:
    """The page as it stood, with nothing live: it opens from a file with no network."""
    return render_page(view, live=False, written=time.time() if written is None else written,
                       note=note)


def record(view: dict, final: bool, written: float | None = None) -> dict:
    """What the JSON file holds: the view, and whether it is the job's last word."""
    return {"format": FORMAT, "final": final,
            "written": time.time() if written is None else written, "view": view}


class ReportWriter:
    """Writes the report into the work dir: every INTERVAL_S while the job runs, and at the
    end (:meth:`final`). Each write replaces the last (a rename: never half a file)."""

    def __init__(self, work_dir: str, view: Callable[[], dict], app_id: str,
                 interval_s: float = INTERVAL_S) -> None:
        self.work_dir, self.view, self.app_id = work_dir, view, app_id
        # One client for every write (it renews its connections when tokens change).
        self._remote = RemoteDir(work_dir) if is_remote(work_dir) else None
        self.interval_s = interval_s
        self._lock = threading.Lock()  # the loop's write and the final one never interleave
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="report")

    def start(self) -> ReportWriter:
        self._thread.start()
        return self

    def final(self) -> None:
        """The job ended: the last report, marked final."""
        self._stop.set()
        self.write(final=True)

    def _loop(self) -> None:
        self._write_pointer()  # here, not in start(): HDFS must not hold the job up
        while not self._stop.wait(self.interval_s):
            self.write(final=False)

    def write(self, final: bool) -> bool:
        """Write both files; whether they were written."""
        with self._lock:
            view = self.view()
            written = time.time()
            files = {JSON_FILE: json.dumps(record(view, final, written)).encode(),
                     HTML_FILE: render_report(view, written).encode()}
            try:
                for name, data in files.items():  # the JSON first: `tfyarn status` reads it
                    self._put(name, data)
            except (OSError, StorageError) as exc:
                log.warning("could not write the job's report to %s: %s", self.work_dir, exc)
                return False
            return True

    def _put(self, name: str, data: bytes) -> None:
        if self._remote is not None:
            bounded(lambda: self._remote.write_bytes(name, data), WRITE_TIMEOUT_S,
                    f"HDFS ({self.work_dir})")
            return
        folder = Path(self.work_dir)
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{name}.partial"  # renamed into place: never half a file
        partial.write_bytes(data)
        partial.replace(folder / name)

    def _write_pointer(self) -> None:
        """So that `tfyarn report` and `status` find the work dir after the job ended."""
        user = getpass.getuser()
        where = jobpointer.pointer_path(user, self.app_id)
        try:
            bounded(lambda: jobpointer.write_pointer(user, self.app_id, self.work_dir),
                    WRITE_TIMEOUT_S, f"HDFS ({where})")
        except (OSError, StorageError) as exc:
            log.warning("could not record the work dir in %s: %s (`tfyarn report` will need "
                        "the job's log to find it)", where, exc)
