"""The suite's lanes (pytest-xdist workers) sharing one local cluster.

Every lane uses the same running cluster: the first to need it starts it, the last to finish
stops it (if a lane started it). A test marked `alone` has that cluster to itself: it waits
until the tests running in other lanes end, and no lane starts a test on it meanwhile (a gate
that a waiting `alone` test holds keeps new ones out, so it is not starved).

Without xdist there is one lane and nothing to share: every lock is taken at once.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # one id for all lanes of a run; None alone


def run_dir(base: Path) -> Path:
    """A directory every lane of this run shares (``base``: a lane's own temp root)."""
    shared = base.parent / f"lanes-{RUN}" if RUN else base / "lanes"
    shared.mkdir(parents=True, exist_ok=True)
    return shared


@contextmanager
def locked(path: Path, exclusive: bool = True) -> Iterator[None]:
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def on_the_cluster(shared: Path, alone: bool) -> Iterator[None]:
    """A test's turn on the shared cluster: beside others, or alone."""
    gate, use = shared / "gate.lock", shared / "use.lock"
    if alone:
        with locked(gate), locked(use):
            yield
        return
    with locked(gate):  # waits while an `alone` test waits or runs
        handle = use.open("a+")
        fcntl.flock(handle, fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def count_lanes(shared: Path, change: int) -> int:
    """Counts a lane in (+1) or out (-1) of what is shared; how many are in now. Called
    holding the lock of what is shared."""
    count = shared / "lanes"
    lanes = (int(count.read_text() or 0) if count.exists() else 0) + change
    count.write_text(str(lanes))
    return lanes



class AloneStretch:
    """A lane's `alone` tests, run one after another, keep the cluster to themselves for
    their whole stretch: the turn is taken before the first and given back after the last
    (when the lane's next test is not `alone`), so the other lanes run beside each other in
    between rather than waiting at every one of them."""

    def __init__(self) -> None:
        self.turn: ExitStack | None = None

    def before(self, shared: Path, alone: bool) -> None:
        if alone and self.turn is None:
            self.turn = ExitStack()
            self.turn.enter_context(on_the_cluster(shared, alone=True))

    def after(self, next_alone: bool) -> None:
        if self.turn is not None and not next_alone:
            self.turn.close()
            self.turn = None
