#!/usr/bin/env python
"""TF2 ParameterServerStrategy with a ClusterCoordinator and a custom training loop.

Reads TF_CONFIG only (cluster with ``chief``, ``worker`` and ``ps``); the legacy
``--ps_hosts/--worker_hosts/--job_name/--task_index`` flags are accepted and ignored.
ps and worker tasks only serve (``server.join()``, ended by the launcher); the chief
schedules the steps, saves a checkpoint to ``<work_dir>/checkpoints`` every ``--save_every``
steps, from its own host (and resumes from it), writes ``<work_dir>/result.json`` and
exits. Keras 3 ``model.fit`` does not work with this strategy, so the model is a plain
``tf.Module``.
"""

from __future__ import annotations

import os
import sys
import time

from example_support import (
    make_params,
    serve_forever,
    sgd_step,
    teacher_weights,
    tf2_start,
    write_result,
)


def main(argv: list[str]) -> int:
    args, tf_config = tf2_start(argv, __doc__)
    task_type, task_index = tf_config["task"]["type"], int(tf_config["task"]["index"])

    if task_type in ("ps", "worker"):
        # Report a lost worker or ps to the coordinator instead of retrying forever.
        os.environ["GRPC_FAIL_FAST"] = "use_caller"
    import numpy as np  # after recording: importing TensorFlow takes seconds
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if task_type in ("ps", "worker"):
        serve_forever(tf, resolver, task_type, task_index)
        return 0

    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

    teacher = tf.constant(teacher_weights(np))
    with strategy.scope():  # variables are spread over the ps
        params = make_params(tf)
        global_step = tf.Variable(0, dtype=tf.int64, name="global_step")

    checkpoint = tf.train.Checkpoint(step=global_step, **params)
    manager = tf.train.CheckpointManager(
        checkpoint, os.path.join(args.work_dir, "checkpoints"), max_to_keep=3
    )
    # Read and write every variable from this (the chief's) host: by default each ps would
    # write its own variables into a directory of the same name on its own disk.
    on_chief = tf.train.CheckpointOptions(
        experimental_io_device="/job:chief/replica:0/task:0/device:CPU:0")
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint, options=on_chief)
    first_step = int(global_step.numpy())
    print(f"start global_step {first_step}", flush=True)

    @tf.function
    def train_step() -> tf.Tensor:
        def replica_fn() -> tf.Tensor:
            loss = sgd_step(tf, params, teacher, args.batch_size, args.learning_rate)
            global_step.assign_add(1)
            return loss

        return strategy.run(replica_fn)

    # Steps run asynchronously on the workers: schedule them --save_every at a time, wait
    # for them, save (from this host, see above), until train_steps.
    loss = None
    while (step := int(global_step.numpy())) < args.train_steps:
        last = None
        for _ in range(min(args.save_every, args.train_steps - step)):
            last = coordinator.schedule(train_step)
        coordinator.join()
        loss = float(last.fetch())
        step = int(global_step.numpy())
        print(f"step {step} loss {loss:.4f}", flush=True)
        if step < args.train_steps:
            manager.save(checkpoint_number=step, options=on_chief)
        time.sleep(args.step_sleep * args.save_every)
    final_step = int(global_step.numpy())
    print(f"step {final_step} loss {loss}", flush=True)

    manager.save(checkpoint_number=final_step, options=on_chief)
    write_result(args.work_dir, final_step, loss, first_step)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a normal exit spends 4-7 s tearing down the coordinator


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
