"""Tell tfyarn how far training got, in one line: ``tfyarn.progress.report_step(step)``.

tfyarn's stall watchdog (site.global.stall.timeout), `tfyarn status`, the job page and the
report read each rank's step from it: a rank whose step stands still past the timeout is
stalled, and a rank much slower than the others is a straggler. Call it as each training
step begins, once its batch is in hand (a loop's top, a Keras callback's
``on_train_batch_begin``): a rank stuck outside a collective (its data, a lock) is then
behind the ranks that wait for it inside one, and the watchdog names it.

The call only keeps the number (a few hundred nanoseconds); a daemon thread writes the
newest into the file the environment's ``TFYARN_PROGRESS_FILE`` names (one per process,
set by tfyarn's agent) every :data:`WRITE_INTERVAL_S` when it changed, whole (written aside,
then renamed), so the step of a rank whose main thread hangs is exact. A script that does
not import tfyarn may write the number into that file itself. Outside tfyarn (no such
variable) nothing is written. Only the standard library: it ships with every job.
"""

from __future__ import annotations

import os
import threading

from appmaster.common.registry import PROGRESS_FILE_ENV

WRITE_INTERVAL_S = 0.5  # the agent reads every site.global.progress.interval (5 s)


class _Writer:
    """The newest step, and the thread that writes it."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.written: int | None = None
        self.started = False
        self.wake = threading.Event()

    def start(self) -> None:
        self.started = True
        path = os.environ.get(PROGRESS_FILE_ENV)
        if path:
            threading.Thread(target=self.loop, args=(path,), daemon=True,
                             name="tfyarn-progress").start()

    def loop(self, path: str) -> None:
        aside = f"{path}.{os.getpid()}.tmp"
        while True:
            self.wake.clear()  # before reading: a flush() from here on wakes the next wait
            step = self.step
            if step != self.written:
                with open(aside, "w") as out:
                    out.write(f"{step}\n")
                os.replace(aside, path)
                self.written = step
            self.wake.wait(WRITE_INTERVAL_S)

    def flush(self) -> None:
        """Write now (at the end of training, say), without waiting for the interval."""
        self.wake.set()


_writer = _Writer()
# A forked child (a data loader's worker) has no writer thread: it starts its own if it
# reports steps.
os.register_at_fork(after_in_child=lambda: _writer.__init__())


def report_step(step: int) -> None:
    """This process is at training step ``step`` (any whole number that grows)."""
    _writer.step = int(step)
    if not _writer.started:
        _writer.start()


def flush() -> None:
    """Have the newest step written at once."""
    _writer.flush()
