"""The agent's report of how far training has got, from its task's event files.

The chief (and the evaluator) write TensorFlow summaries into their local work dir; a
daemon thread reads them as they grow (appmaster/agent/tfevents.py, no TensorFlow) and puts the
newest figures under ``progress/<container>`` in the registry whenever they change. The
master shows them in the job's view; a last scan after the script ends gives the final
figures, so `tfyarn status` on a finished job still has them.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from appmaster.agent.tfevents import Progress

log = logging.getLogger("tfyarn.progress")

SCAN_INTERVAL_S = 5.0


class ProgressReporter:
    def __init__(self, work_dir: str, report: Callable[[dict], None],
                 interval_s: float = SCAN_INTERVAL_S) -> None:
        self.progress = Progress(Path(work_dir))
        self.report = report
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the last scan and the loop's may meet
        self._thread = threading.Thread(target=self._loop, daemon=True, name="progress")

    def start(self) -> ProgressReporter:
        self._thread.start()
        return self

    def finish(self) -> None:
        """After the script ended: stop, and report what its last summaries said."""
        self._stop.set()
        self.scan()

    def scan(self) -> None:
        with self._lock:
            try:
                changed = self.progress.scan()
            except OSError as exc:  # a file removed while read: the next round sees
                log.debug("progress scan: %s", exc)
                return
            summary = self.progress.summary()
        if changed and summary:
            try:
                self.report(summary)
            except Exception as exc:  # the master may be gone at the very end
                log.warning("could not report progress: %s", exc)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.scan()


def report_to(link, key: str) -> Callable[[dict], None]:
    """A reporter that puts each summary, as JSON, under ``key`` on the master's rendezvous."""
    return lambda summary: link.put(key, json.dumps(summary).encode())
