"""The evaluator's side of the work dir: checkpoints come down, its summaries go up.

The evaluator runs beside training. Its agent keeps its local work dir following the job's
work dir on HDFS: each newest checkpoint the chief mirrored comes down whole, its state
file last, so `tf.train.checkpoints_iterator(work_dir)` (or Keras's SidecarEvaluator) sees
only complete checkpoints. What the script writes under ``<work_dir>/eval`` goes up to
``<job work dir>/eval``, where TensorBoard shows it beside training.

When the chief has finished, the master writes ``training/done``: the agent brings the last
checkpoint down, then creates the file named in ``TFYARN_TRAINING_DONE_FILE``; the script
evaluates that checkpoint and ends (its end then ends the job).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from appmaster.agent.mirror import WorkDirMirror
from appmaster.common import registry
from appmaster.common.storage import RemoteDir, StorageError, bounded

log = logging.getLogger("tfyarn.evaluation")

EVAL_DIR = "eval"  # the evaluator's summaries, under its work dir and the job's
DONE_FILE = ".tfyarn-training-done"  # in its work dir, once the last checkpoint is there
LAST_FOLLOW_TIMEOUT_S = 300.0


class CheckpointFollower:
    def __init__(self, local: Path, job_dir: str, interval_s: float) -> None:
        self.local = local
        self.down = WorkDirMirror(local, RemoteDir(job_dir), interval_s)
        (local / EVAL_DIR).mkdir(parents=True, exist_ok=True)
        self.up = WorkDirMirror(local / EVAL_DIR, RemoteDir(f"{job_dir}/{EVAL_DIR}"), interval_s)
        self.done_file = local / DONE_FILE

    def start(self, report) -> None:
        """Follow HDFS and send the summaries up, each on its own interval."""
        self.down.start("follow", report)
        self.up.start("sync")

    def wait_for_training(self, link) -> None:
        """In a daemon thread: once the master says training is done, the last checkpoint
        comes down and the done file appears."""
        def wait() -> None:
            link.wait(registry.TRAINING_DONE_KEY)
            try:
                bounded(self.down.follow, LAST_FOLLOW_TIMEOUT_S, f"HDFS ({self.down.remote.url})")
            except (StorageError, OSError) as exc:  # it evaluates what it has
                log.error("could not fetch the last checkpoint: %s", exc)
            self.done_file.touch()
            log.info("training done: the last checkpoint is in %s", self.local)

        threading.Thread(target=wait, daemon=True, name="training-done").start()

    def finish(self, timeout_s: float) -> bool:
        """The summaries' last copy up, after the script ended."""
        return self.up.finish(timeout_s)
