#!/usr/bin/env python
"""TF2 MultiWorkerMirroredStrategy (synchronous all-reduce) with a custom training loop.

Reads TF_CONFIG only (cluster with ``chief`` and ``worker``, no ps); the legacy
``--ps_hosts/--worker_hosts/--job_name/--task_index`` flags are accepted and ignored.
Every task trains; variables are mirrored and gradients averaged across tasks. All tasks
resume from ``<work_dir>/checkpoints`` (the work dir must be shared), all tasks save (the
save is collective) but only the chief keeps its checkpoint, and the chief writes
``<work_dir>/result.json``. Keras 3 ``model.fit`` does not work with this strategy, so the
model is a set of plain variables.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import tempfile

N_FEATURES = 784
N_CLASSES = 10
HIDDEN = 64


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work_dir", required=True, help="shared by all tasks")
    parser.add_argument("--train_steps", type=int, default=100, help="last global step")
    parser.add_argument("--batch_size", type=int, default=100, help="per task")
    parser.add_argument("--learning_rate", type=float, default=0.3)
    args, _legacy = parser.parse_known_args(argv)  # --ps_hosts etc.: TF_CONFIG says it all
    return args


def write_json_atomic(path: str, data: dict) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def record_flags(work_dir: str, name: str, flags: dict) -> None:
    """Save argv, flags and environment to <work_dir>/flags/<name>.json and print them.

    A restarted task (TFYARN_ATTEMPT > 0) keeps the first attempt's file and writes
    <name>.attempt<N>.json instead.
    """
    attempt = int(os.environ.get("TFYARN_ATTEMPT") or 0)
    task_index = os.environ.get("TFYARN_TASK_INDEX")
    record = {
        "argv": sys.argv[1:],
        "flags": flags,
        "tf_config": json.loads(os.environ["TF_CONFIG"]) if os.environ.get("TF_CONFIG") else None,
        "tfyarn_role": os.environ.get("TFYARN_ROLE"),
        "tfyarn_task_index": int(task_index) if task_index else None,
        "tfyarn_attempt": attempt,
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
    }
    flags_dir = os.path.join(work_dir, "flags")
    os.makedirs(flags_dir, exist_ok=True)
    path = os.path.join(flags_dir, f"{name}.json")
    if attempt > 0 and os.path.exists(path):
        path = os.path.join(flags_dir, f"{name}.attempt{attempt}.json")
    write_json_atomic(path, record)
    print("tfyarn-example flags " + json.dumps(record), flush=True)


def legacy_flags(argv: list[str]) -> dict:
    """The Slider flags as given (recorded for tests, otherwise unused)."""
    parser = argparse.ArgumentParser(add_help=False)
    for name in ("--ps_hosts", "--worker_hosts", "--job_name", "--work_dir"):
        parser.add_argument(name)
    parser.add_argument("--task_index", type=int)
    return vars(parser.parse_known_args(argv)[0])


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    tf_config = json.loads(os.environ["TF_CONFIG"])
    task_type, task_index = tf_config["task"]["type"], int(tf_config["task"]["index"])
    record_flags(args.work_dir, f"{task_type}_{task_index}", legacy_flags(argv))
    # The chief is its own task type; without one, worker 0 plays the chief.
    is_chief = task_type == "chief" or (
        task_type == "worker" and task_index == 0 and "chief" not in tf_config["cluster"]
    )

    import numpy as np  # after recording: importing TensorFlow takes seconds
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG

    # A fixed random "teacher" labels random inputs, so the loss really falls.
    teacher = tf.constant(
        np.random.default_rng(0).normal(size=(N_FEATURES, N_CLASSES)).astype(np.float32)
    )
    init = tf.initializers.GlorotUniform(seed=1)  # same start on every task
    with strategy.scope():
        # MEAN: an update made in replica context is averaged over all replicas, which
        # makes plain `assign_sub(lr * grad)` synchronous SGD on the mean gradient.
        mean = tf.VariableAggregation.MEAN
        params = {
            "w1": tf.Variable(init([N_FEATURES, HIDDEN]), name="w1", aggregation=mean),
            "b1": tf.Variable(tf.zeros([HIDDEN]), name="b1", aggregation=mean),
            "w2": tf.Variable(init([HIDDEN, N_CLASSES]), name="w2", aggregation=mean),
            "b2": tf.Variable(tf.zeros([N_CLASSES]), name="b2", aggregation=mean),
        }
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
    first_step = int(global_step.numpy())
    print(f"start global_step {first_step}", flush=True)

    @tf.function
    def train_step() -> tf.Tensor:
        def replica_fn() -> tf.Tensor:
            x = tf.random.normal([args.batch_size, N_FEATURES])
            labels = tf.argmax(tf.matmul(x, teacher), axis=1)
            with tf.GradientTape() as tape:
                hidden = tf.nn.relu(tf.matmul(x, params["w1"]) + params["b1"])
                logits = tf.matmul(hidden, params["w2"]) + params["b2"]
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
                )
            variables = list(params.values())
            for var, grad in zip(variables, tape.gradient(loss, variables), strict=True):
                var.assign_sub(args.learning_rate * grad)
            global_step.assign_add(1)
            return loss

        losses = strategy.run(replica_fn)
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

    loss = None
    for i in range(max(args.train_steps - first_step, 0)):
        loss = float(train_step())
        if i % 50 == 0:
            print(f"step {int(global_step.numpy())} loss {loss:.4f}", flush=True)
    final_step = int(global_step.numpy())
    print(f"step {final_step} loss {loss}", flush=True)

    # Saving is collective: every task must save, but only the chief's copy is kept.
    save_dir = checkpoint_dir if is_chief else tempfile.mkdtemp(prefix="mwms-ckpt-")
    tf.train.CheckpointManager(checkpoint, save_dir, max_to_keep=3).save(final_step)
    if not is_chief:
        shutil.rmtree(save_dir, ignore_errors=True)
    else:
        write_json_atomic(
            os.path.join(args.work_dir, "result.json"),
            {"global_step": final_step, "loss": loss, "first_global_step": first_step},
        )
        print(f"tfyarn-example done global_step={final_step}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
