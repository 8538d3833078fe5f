#!/usr/bin/env python
"""TF2 MultiWorkerMirroredStrategy (synchronous all-reduce) with a custom training loop.

Reads TF_CONFIG only (cluster with ``chief`` and ``worker``, no ps); the legacy
``--ps_hosts/--worker_hosts/--job_name/--task_index`` flags are accepted and ignored.
Every task trains; variables are mirrored and gradients averaged across tasks. Every
``--save_every`` steps all tasks save (the save is collective), but only the chief keeps its
checkpoint, in ``<work_dir>/checkpoints`` (tfyarn mirrors the chief's to HDFS and restores
it into every task's work dir before a restart, so all tasks resume from it); the chief
writes ``<work_dir>/result.json``. Keras 3 ``model.fit`` does not work with this strategy, so the
model is a set of plain variables.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

from example_support import (
    is_chief,
    make_params,
    sgd_step,
    teacher_weights,
    tf2_start,
    write_result,
)


def main(argv: list[str]) -> int:
    args, tf_config = tf2_start(argv, __doc__)
    chief = is_chief(tf_config)

    import numpy as np  # after recording: importing TensorFlow takes seconds
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG

    teacher = tf.constant(teacher_weights(np))
    with strategy.scope():
        # MEAN: an update made in replica context is averaged over all replicas, which
        # makes plain `assign_sub(lr * grad)` synchronous SGD on the mean gradient.
        params = make_params(tf, aggregation=tf.VariableAggregation.MEAN)
        global_step = tf.Variable(
            0,
            dtype=tf.int64,
            name="global_step",
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
        )

    checkpoint = tf.train.Checkpoint(step=global_step, **params)
    checkpoint_dir = os.path.join(args.work_dir, "checkpoints")
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest:
        checkpoint.restore(latest)  # every task restores the chief's last checkpoint
    # Saving is collective: every task must save, but only the chief's copy is kept.
    save_dir = checkpoint_dir if chief else tempfile.mkdtemp(prefix="mwms-ckpt-")
    manager = tf.train.CheckpointManager(checkpoint, save_dir, max_to_keep=3)
    first_step = int(global_step.numpy())
    print(f"start global_step {first_step}", flush=True)

    @tf.function
    def train_step() -> tf.Tensor:
        def replica_fn() -> tf.Tensor:
            loss = sgd_step(tf, params, teacher, args.batch_size, args.learning_rate)
            global_step.assign_add(1)
            return loss

        losses = strategy.run(replica_fn)
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

    loss = None
    for i in range(max(args.train_steps - first_step, 0)):
        loss = float(train_step())
        step = int(global_step.numpy())
        if i % 50 == 0:
            print(f"step {step} loss {loss:.4f}", flush=True)
        if step % args.save_every == 0 and step < args.train_steps:
            manager.save(step)
        time.sleep(args.step_sleep)
    final_step = int(global_step.numpy())
    print(f"step {final_step} loss {loss}", flush=True)

    manager.save(final_step)
    if not chief:
        shutil.rmtree(save_dir, ignore_errors=True)
    else:
        write_result(args.work_dir, final_step, loss, first_step)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
