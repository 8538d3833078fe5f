"""A task's work dir in its container, and how the agent keeps it in step with the job's work
dir on HDFS (appmaster/agent/mirror.py): restored before the script, mirrored while the chief runs,
pulled for TensorBoard, followed by the evaluator. Used by appmaster/agent/main.py."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from appmaster.agent.mirror import MirrorStatus, WorkDirMirror
from appmaster.common import frameworks, registry
from appmaster.common.agentlink import AgentLink
from appmaster.common.jobplan import JobPlan
from appmaster.common.storage import NoAnswer, RemoteDir, StorageError, bounded, is_remote
from appmaster.common.vocabulary import Role

if TYPE_CHECKING:  # the evaluator's alone: imported where it is used
    from appmaster.agent.evaluation import CheckpointFollower

T = TypeVar("T")
log = logging.getLogger("tfyarn.agent")

RESTORE_TIMEOUT_S = 300.0
# A task's first contact with HDFS: a NameNode busy or failing over, or an authentication
# cut short on a loaded node, costs seconds, not the task (a counted failure).
FIRST_CONTACT_PAUSES_S = (5.0, 10.0)
LAST_MIRROR_TIMEOUT_S = 120.0
# the longest a restarted task waits for the stopped chief's last copy (the master gives it
# 150 s, then kills it and says settled)
SETTLE_TIMEOUT_S = 180.0


class CannotStart(Exception):
    """The task cannot start its script: the reason goes to its log and the diagnostics."""


def cannot_reach(name: str, job_dir: str, exc: Exception) -> Exception:
    """A work dir that cannot be made or restored as :class:`CannotStart`, with the fix;
    any other error as it is."""
    if isinstance(exc, ImportError):
        return CannotStart(f"{name} cannot reach the job's work dir on HDFS: {exc} in "
                           f"{sys.executable}. Fix: install hdfs-native in the job's Python "
                           "(pip install hdfs-native; in a packed env, pack it again with "
                           "it).")
    if isinstance(exc, (StorageError, OSError)):
        return CannotStart(f"{name} cannot start: the job's work dir {job_dir}: {exc}")
    return exc


def first_contact(call: Callable[[], T], reconnect: Callable[[], None], what: str,
                  pause: Callable[[float], None] = time.sleep) -> T:
    """``call`` (bounded by RESTORE_TIMEOUT_S), tried again on a new connection after each
    of FIRST_CONTACT_PAUSES_S when HDFS refused it; one that never answered is not retried."""
    for pause_s in FIRST_CONTACT_PAUSES_S:
        try:
            return bounded(call, RESTORE_TIMEOUT_S, what)
        except NoAnswer:
            raise
        except StorageError as exc:
            log.warning("%s: %s; trying again in %.0f s on a new connection", what, exc,
                        pause_s)
        pause(pause_s)
        reconnect()
    return bounded(call, RESTORE_TIMEOUT_S, what)


class TaskWorkDir:
    """The directory the script works in, and how it is kept in step with the job's work
    dir when that is on HDFS: restored before the start (every task but the ps), mirrored
    up while the chief runs, pulled down for TensorBoard (appmaster/agent/mirror.py)."""

    def __init__(self, plan: JobPlan, app_id: str, role: str, index: int) -> None:
        self.job_dir = plan.resolved_work_dir(app_id)
        self.role, self.mirror = role, None
        self.follower: CheckpointFollower | None = None  # the evaluator's
        self.is_chief = (role, index) == plan.chief
        # what the script is told (plan.task_command): in this container's directory, or a
        # path every node mounts (or a one-node cluster)
        self.path = plan.task_work_dir(app_id, os.getcwd())
        # a PyTorch or JAX script's snapshots are its own files: all of them restored
        self.plain_files = frameworks.of(plan.framework).ranks
        Path(self.path).mkdir(parents=True, exist_ok=True)
        if not is_remote(self.job_dir):
            return
        self.mirror = WorkDirMirror(Path(self.path), RemoteDir(self.job_dir),
                                    plan.mirror_interval_s)

    def prepare(self, report) -> None:
        """Restore, then start mirroring or following; ``report(status)`` on each round."""
        if self.mirror is None:
            return
        what = f"HDFS ({self.job_dir})"
        if self.role == Role.TENSORBOARD:
            bounded(self.mirror.pull, RESTORE_TIMEOUT_S, what)
            self.mirror.start("pull", report)
            return
        if self.role != Role.PS:  # a ps holds no files: the chief restores its variables
            first_contact(partial(self.mirror.restore, self.plain_files),
                          self.mirror.remote.reconnect, what)
            log.info("restored %s from %s", self.mirror.status.restored or "nothing",
                     self.job_dir)
        if self.role == Role.EVALUATOR:
            from appmaster.agent.evaluation import CheckpointFollower

            self.follower = CheckpointFollower(Path(self.path), self.job_dir,
                                               self.mirror.interval_s)
            self.follower.start(report)
        if self.is_chief:
            bounded(self.mirror.remote.make, RESTORE_TIMEOUT_S, what)
            # copies an earlier chief's end cut short: never finished, never to be read
            removed = bounded(self.mirror.remote.remove_temporaries, RESTORE_TIMEOUT_S, what)
            if removed:
                log.info("removed %d unfinished copies from %s", removed, self.job_dir)
            self.mirror.start("sync", report)
        report(self.mirror.status)

    @property
    def reports_progress(self) -> bool:
        """Whose event files say how far the job got: the chief's and the evaluator's."""
        return self.is_chief or self.role == Role.EVALUATOR

    @property
    def done_file(self) -> Path:
        """Where the evaluator learns that training ended (appmaster/agent/evaluation.py)."""
        from appmaster.agent.evaluation import DONE_FILE

        return self.follower.done_file if self.follower else Path(self.path) / DONE_FILE

    def wait_for_training(self, link: AgentLink) -> None:
        if self.follower:
            self.follower.wait_for_training(link)
        else:  # one work dir every node mounts: the last checkpoint is already there
            def wait() -> None:
                link.wait(registry.TRAINING_DONE_KEY)
                self.done_file.touch()

            threading.Thread(target=wait, daemon=True, name="training-done").start()

    def finish(self, report) -> None:
        """The chief's last copy up (the evaluator's summaries), after its script ended."""
        if self.follower and not self.follower.finish(LAST_MIRROR_TIMEOUT_S):
            log.error("the evaluator's last summaries did not reach %s", self.job_dir)
        if self.mirror is None or not self.is_chief:
            return
        if self.mirror.finish(LAST_MIRROR_TIMEOUT_S):
            log.info("work dir mirrored to %s (%s)", self.job_dir,
                     self.mirror.status.last_checkpoint or "no checkpoint")
        else:
            log.error("the last copy to %s failed: %s", self.job_dir, self.mirror.status.error)
        report(self.mirror.status)


def wait_until_settled(link: AgentLink, generation: int,
                       timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    """A restarted generation restores once the chief it replaces has copied its work dir up
    (registry.settled_key): what it saved just before the restart is then on HDFS."""
    if generation == 0:
        return
    waiter = threading.Thread(target=link.wait, args=(registry.settled_key(generation),),
                              daemon=True, name="settled")
    waiter.start()
    waiter.join(timeout_s)
    if waiter.is_alive():
        log.warning("the previous generation's chief did not copy its work dir up within "
                    "%.0f s: restoring what HDFS has", timeout_s)


class Restore(threading.Thread):
    """The work dir restored (:meth:`TaskWorkDir.prepare`) in a thread of its own while the
    agent exports and waits for the spec (``start``), or in the agent's own (``run``).
    ``done`` waits for it, then raises :class:`CannotStart` (or whatever else it raised)."""

    def __init__(self, work: TaskWorkDir, name: str,
                 report: Callable[[MirrorStatus], None],
                 settled: Callable[[], None] | None = None) -> None:
        """``settled``: blocks until HDFS holds the last generation's files
        (wait_until_settled)."""
        super().__init__(daemon=True, name="restore")
        self.work, self.name, self.report = work, name, report
        self.settled = settled
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            if self.settled is not None and self.work.mirror is not None:
                self.settled()
            self.work.prepare(self.report)
        except Exception as exc:  # raised again by done(), in the agent's thread
            self.error = cannot_reach(self.name, self.work.job_dir, exc)

    def done(self) -> None:
        if self.is_alive():
            self.join()
        if self.error is not None:
            raise self.error
