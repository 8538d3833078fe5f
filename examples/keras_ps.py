#!/usr/bin/env python
"""Keras `model.fit` with TF2 ParameterServerStrategy (chief + workers + ps, from TF_CONFIG).

Needs tf-keras beside TensorFlow (checked first; see keras_support.py): on TensorFlow 2.21
Keras 3's `fit` does not run with this strategy. ps and worker tasks only serve; the chief
runs `fit` in epochs of ``--save_every`` steps up to ``--train_steps``, and after each epoch
`ModelCheckpoint` saves the weights (and optimizer state) to ``<work_dir>/checkpoints``
from the chief's own host (each ps would otherwise write its variables on its own disk).
A restarted chief loads the newest one and goes on from its epoch. The `TensorBoard`
callback writes summaries to ``<work_dir>/tensorboard`` (`tfyarn status` reads the step there);
the chief writes ``<work_dir>/result.json``.
"""

from __future__ import annotations

import os
import re
import sys

from example_support import serve_forever, tf2_start, write_result
from keras_support import (
    build_model,
    epochs_of,
    global_step,
    load_tf_keras,
    step_pause,
    step_tensorboard,
    synthetic_dataset,
)

CHECKPOINT_NAME = "ckpt-{epoch}"  # the epoch: fit's initial_epoch on a restart
CHIEF_CPU = "/job:chief/replica:0/task:0/device:CPU:0"


def main(argv: list[str]) -> int:
    args, tf_config = tf2_start(argv, __doc__)
    task_type, task_index = tf_config["task"]["type"], int(tf_config["task"]["index"])
    if task_type in ("ps", "worker"):
        # Report a lost worker or ps to the coordinator instead of retrying forever.
        os.environ["GRPC_FAIL_FAST"] = "use_caller"
    tf, keras = load_tf_keras()  # before anything imports TensorFlow
    import numpy as np

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if task_type in ("ps", "worker"):
        serve_forever(tf, resolver, task_type, task_index)
        return 0

    strategy = tf.distribute.ParameterServerStrategy(resolver)
    with strategy.scope():  # variables are spread over the ps
        model = build_model(keras, args.learning_rate)
    on_chief = tf.train.CheckpointOptions(experimental_io_device=CHIEF_CPU)
    checkpoint_dir = os.path.join(args.work_dir, "checkpoints")
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    initial_epoch = 0
    if latest:  # restored by tfyarn from HDFS before this script started
        model.load_weights(latest, options=on_chief)
        initial_epoch = int(re.search(r"ckpt-(\d+)$", latest).group(1))
    first_step = global_step(keras, model)
    print(f"start global_step {first_step} (epoch {initial_epoch})", flush=True)

    history = model.fit(
        synthetic_dataset(tf, np, args.batch_size),
        epochs=epochs_of(args.train_steps, args.save_every),
        initial_epoch=initial_epoch,
        steps_per_epoch=args.save_every,
        callbacks=[
            keras.callbacks.ModelCheckpoint(
                os.path.join(checkpoint_dir, CHECKPOINT_NAME), save_weights_only=True,
                options=on_chief),
            step_tensorboard(keras, os.path.join(args.work_dir, "tensorboard")),
            *step_pause(keras, args.step_sleep, args.save_every),
        ],
        verbose=2,
    )
    final_step = global_step(keras, model)
    losses = history.history.get("loss") or [None]
    write_result(args.work_dir, final_step, losses[-1], first_step)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a normal exit spends seconds tearing down the coordinator


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
