"""tfyarn's preemption hooks with the real TensorFlow, no YARN (tests/test_preemption_tf.py
runs it): a PreemptionCheckpointHandler whose termination watcher is tfyarn's saves a
checkpoint once the notice file appears mid-loop; tfyarn's Keras callback saves once and
fit trains on. Prints one JSON line of what happened."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from appmaster.common.registry import NOTICE_FILE_ENV
from tfyarn import preemption

NOTICE_AT_STEP = 5


def handler_run(notice: Path, checkpoints: Path) -> dict:
    os.environ[NOTICE_FILE_ENV] = str(notice)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # no TF_CONFIG: one worker
    with strategy.scope():
        step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(checkpoints),
                                         max_to_keep=1)
    exits: list[int] = []
    config = tf.distribute.experimental.TerminationConfig(
        termination_watcher_fn=preemption.termination_watcher_fn,
        exit_fn=lambda: exits.append(int(step.numpy())), grace_period=0)
    handler = tf.distribute.experimental.PreemptionCheckpointHandler(
        strategy.cluster_resolver, manager, termination_config=config)
    deadline = time.monotonic() + 30
    while not exits and time.monotonic() < deadline:
        handler.run(lambda: step.assign_add(1))
        if int(step.numpy()) == NOTICE_AT_STEP:
            notice.write_text("chiefworker_0")
        time.sleep(0.05)
    saved = manager.latest_checkpoint
    return {"exited_at": exits, "saved_step": saved and int(tf.train.load_variable(
        saved, "step/.ATTRIBUTES/VARIABLE_VALUE"))}


def keras_run(notice: Path) -> dict:
    os.environ[NOTICE_FILE_ENV] = str(notice)
    saves: list[int] = []
    batches: list[int] = []

    class Notice(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            batches.append(batch)
            if len(batches) == NOTICE_AT_STEP:
                notice.write_text("worker_1")

    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.zeros((40, 2), "float32"), np.zeros((40, 1), "float32")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[
        Notice(), preemption.keras_callback(lambda: saves.append(len(batches)))])
    return {"saves": saves, "batches": len(batches)}


if __name__ == "__main__":
    here = Path(sys.argv[1])
    result = handler_run(here / "handler-notice", here / "checkpoints")
    result.update(keras_run(here / "keras-notice"))
    print(json.dumps(result))
