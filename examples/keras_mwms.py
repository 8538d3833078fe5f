#!/usr/bin/env python
"""Keras `model.fit` with TF2 MultiWorkerMirroredStrategy (chief + workers, no ps).

Needs tf-keras beside TensorFlow (checked first; see keras_support.py): on TensorFlow 2.21
Keras 3's `fit` does not run with this strategy. Every task trains (synchronous all-reduce)
in epochs of ``--save_every`` steps up to ``--train_steps``. `BackupAndRestore` saves the
training state after each epoch: the chief into ``<work_dir>/backup/chief`` (mirrored to HDFS
by tfyarn), the others into temporary dirs (the save is collective). A restarted cluster
finds the chief's backup in every task's work dir (tfyarn restores it from HDFS) and `fit`
goes on from its epoch. The `TensorBoard` callback writes summaries to
``<work_dir>/tensorboard``; the chief writes ``<work_dir>/result.json``. Each task reports its
step as each batch begins; ``--stall_at STEP --stall_task TYPE:INDEX`` (TF_CONFIG's names) makes
that task stop after that step in the job's first generation and sleep.
"""

from __future__ import annotations

import argparse
import os
import sys

from example_support import is_chief, step_progress, tf2_start, write_result
from keras_support import (
    build_model,
    epochs_of,
    global_step,
    load_tf_keras,
    step_pause,
    step_tensorboard,
    synthetic_dataset,
)


def stall_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stall_at", type=int, default=None,
                        help="the step after which --stall_task sleeps (first generation)")
    parser.add_argument("--stall_task", default="worker:1", help="TYPE:INDEX, as TF_CONFIG")


def main(argv: list[str]) -> int:
    args, tf_config = tf2_start(argv, __doc__, add_options=stall_options)
    task = tf_config["task"]
    chief = is_chief(tf_config)
    tf, keras = load_tf_keras()  # before anything imports TensorFlow
    import numpy as np

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG
    with strategy.scope():
        model = build_model(keras, args.learning_rate)
    # The global batch is split over the tasks: each computes --batch_size examples.
    dataset = synthetic_dataset(tf, np, args.batch_size * strategy.num_replicas_in_sync)

    history = model.fit(
        dataset,
        epochs=epochs_of(args.train_steps, args.save_every),
        steps_per_epoch=args.save_every,
        callbacks=[
            # Kept after the end too (delete_checkpoint=False): tfyarn mirrors the final one.
            keras.callbacks.BackupAndRestore(os.path.join(args.work_dir, "backup"),
                                             delete_checkpoint=False),
            # on the other tasks Keras writes into a temporary dir of its own
            step_tensorboard(keras, os.path.join(args.work_dir, "tensorboard")),
            *step_pause(keras, args.step_sleep, args.save_every),
            step_progress(keras, lambda: global_step(keras, model) + 1, args.stall_at,
                          args.stall_task == f"{task['type']}:{task['index']}"),
        ],
        verbose=2 if chief else 0,
    )
    final_step = global_step(keras, model)
    if chief:
        losses = history.history.get("loss") or [None]
        steps_run = len(history.epoch) * args.save_every
        write_result(args.work_dir, final_step, losses[-1], final_step - steps_run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
