"""What YARN decided when it ended a container, and what that means for the job.

YARN ends a container with an exit status that says why: the task's own exit, or one of
YARN's verdicts (ContainerExitStatus): PREEMPTED (-102), KILLED_EXCEEDED_PMEM/VMEM
(-104/-103), ABORTED (-100: released, its node lost), DISKS_FAILED (-101),
KILLED_BY_RESOURCEMANAGER (-106), KILLED_AFTER_APP_COMPLETION (-107). The number does not
reach tfyarn: skein's AppMaster hands on only a container's state and a message, YARN's own
diagnostics for statuses of 0 or less (its memory verdicts reworded as "714.2 MB of 256 MB
physical memory used"), "see logs" for a task's own exit. So the verdict is read from those
words, which are Hadoop's constants (SchedulerUtils, ContainersMonitorImpl,
NodeStatusUpdaterImpl), unchanged since Hadoop 2.

Standard library only: this runs in the AppMaster's container, on any Python from 3.10.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from appmaster.common.settings import PYTHON
from appmaster.common.vocabulary import Word


class Verdict(Word):
    """Why a task's container ended, as the job counts it."""

    FAILED = "failed"  # the task's own failure: counted against its role's threshold
    MEMORY = "memory-killed"  # YARN killed it for memory: a failure, counted, with the fix
    PREEMPTED = "preempted"  # another queue took its share back: asked for again, uncounted
    LOST = "lost"  # its node was lost or its disks failed: a lost host, counted as one
    YARN_KILLED = "yarn-killed"  # killed by the ResourceManager: asked for again, uncounted
    STALLED = "stalled"  # no training progress for the stall timeout: tfyarn ended it, counted

    @property
    def counted(self) -> bool:
        """Whether it counts against the role's yarn.container.failure.threshold."""
        return self in (Verdict.FAILED, Verdict.MEMORY, Verdict.LOST, Verdict.STALLED)


# The order `tfyarn status` and the page show a task's counts in.
SHOWN = (Verdict.FAILED, Verdict.MEMORY, Verdict.PREEMPTED, Verdict.LOST, Verdict.YARN_KILLED,
         Verdict.STALLED)

_MEMORY = re.compile(r"([\d.]+) ?([KMGTP]?)B of ([\d.]+) ?([KMGTP]?)B (physical|virtual) "
                     r"memory used", re.IGNORECASE)
_UNITS = {"": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 2**20, "P": 2**30}
# Hadoop's words for each verdict, lower-cased (skein passes them on as they are).
_PREEMPTED = ("container preempted by scheduler",)
_LOST = ("released on a *lost* node", "lost node", "disks failed", "disk(s) failed",
         "dirs are bad", "local-dirs are bad", "log-dirs are bad")
_YARN_KILLED = ("killed by resourcemanager", "container killed by the resourcemanager",
            "killed on application-finish", "of a completed application")


@dataclass(frozen=True)
class ContainerEnd:
    """YARN's verdict on one ended container, with what the user needs to act on it."""

    verdict: Verdict
    message: str = ""  # YARN's (or skein's) words
    used_mb: float | None = None  # for a memory verdict: what the process tree held
    limit_mb: float | None = None  # and what the container was given
    memory_kind: str = ""  # "physical" or "virtual"

    def suggested_memory_mb(self, asked_mb: int, step_mb: int = 256) -> int:
        """A yarn.memory that holds what was used, with a quarter to spare, in steps of
        256 MB, and at least a step above what was asked (YARN's usage is a sample: the
        peak may have been higher)."""
        used = self.used_mb if self.used_mb is not None else 2 * asked_mb
        return max(math.ceil(used * 1.25 / step_mb), asked_mb // step_mb + 1) * step_mb


def counts(verdicts: dict[str, int]) -> dict[str, int]:
    """Counts by verdict in the order shown, the zeros left out: for views and JSON."""
    return {str(v): verdicts[v] for v in SHOWN if verdicts.get(v)}


def counts_text(verdicts: dict[str, int]) -> str:
    """``preempted 2, memory-killed 1``: a task's (or the job's) container ends."""
    return ", ".join(f"{name} {count}" for name, count in counts(verdicts).items())


def judge(state: str, message: str) -> ContainerEnd:
    """The verdict on a container skein reports ended in ``state`` with ``message``.

    ``state`` is skein's (SUCCEEDED, FAILED, KILLED); a FAILED one is a task's own failure
    unless YARN's words say otherwise.
    """
    text = (message or "").strip()
    lowered = text.lower()
    memory = _MEMORY.search(text)
    if memory:
        used, used_unit, limit, limit_unit, kind = memory.groups()
        return ContainerEnd(Verdict.MEMORY, text, _mb(used, used_unit), _mb(limit, limit_unit),
                            kind.lower())
    if any(words in lowered for words in _PREEMPTED):
        return ContainerEnd(Verdict.PREEMPTED, text)
    if any(words in lowered for words in _LOST):
        return ContainerEnd(Verdict.LOST, text)
    if any(words in lowered for words in _YARN_KILLED):
        return ContainerEnd(Verdict.YARN_KILLED, text)
    return ContainerEnd(Verdict.FAILED, text)


# YARN's words when a NodeManager could not localize a container's files (FSDownload,
# ResourceLocalizationService, DiskChecker, the shell's gzip and tar), lower-cased, with
# what the user can do. The container never ran: its files are the job's env layers
# (tfyarn/submission/envlayers.py), code packs and data.
_LOCALIZATION = (
    (("no space left on device", "no space available in any of the local directories",
      "could not find any valid local directory", "usable space is below configured"),
     "the node's local dirs (yarn.nodemanager.local-dirs) have no room to unpack the job's "
     "files (its Python env is the largest). Fix: free space there or give the "
     "NodeManagers larger disks; or ship less (a node-wide interpreter with "
     f"{PYTHON.key} ships nothing)"),
    # Hadoop 3.5's FSDownload keeps the cause (no room, a cut archive) out of the container's
    # diagnostics: only its NodeManager's log has it. Out of room is the usual one for a
    # large env (tests/test_no_room_yarn.py, recorded from a node with too small a disk).
    (("download and unpack failed",),
     "downloading or unpacking one of them failed, most often because the node's "
     "local dirs (yarn.nodemanager.local-dirs) have no room for the job's Python env (its "
     "layers unpack at their size on HDFS); else the file on HDFS is not whole. That node's "
     "NodeManager log has the cause. Fix: free space there or give the NodeManagers larger "
     f"disks, or ship less ({PYTHON.key} ships nothing); for a damaged file, remove it "
     "from HDFS (the diagnostics name it) and submit again"),
    (("changed on src filesystem",),
     "a file the job named on HDFS was replaced after it was submitted (an env layer or "
     "code pack rewritten by hand?). Fix: submit again; leave .tfyarn/ on HDFS to tfyarn"),
    (("not in gzip format", "unexpected end of file", "error is not recoverable",
      "invalid or corrupted", "zip end header not found"),
     "an archive the job named on HDFS is not whole. Fix: remove it from HDFS (the "
     "diagnostics name it) and submit again: tfyarn uploads it anew"),
)


def localization_failure(message: str) -> str | None:
    """Why YARN could not localize a container's files and the fix, from its diagnostics;
    None when the message says nothing of the kind."""
    lowered = (message or "").lower()
    for words, meaning in _LOCALIZATION:
        if any(w in lowered for w in words):
            return f"YARN could not localize this container's files: {meaning}."
    return None


def killed_by_signal(exit_code: int | None) -> bool:
    """Whether a script's exit code says a signal ended it (128+N as a shell reports it):
    YARN's kills (memory, preemption) start with SIGTERM, so its verdict is worth waiting
    for before the exit is judged."""
    return exit_code is not None and (exit_code < 0 or 128 < exit_code < 160)


def _mb(number: str, unit: str) -> float:
    return float(number) * _UNITS[unit.upper()]
