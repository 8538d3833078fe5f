#!/usr/bin/env python
"""TF2 ParameterServerStrategy with a ClusterCoordinator and a custom training loop.

Reads TF_CONFIG only (cluster with ``chief``, ``worker`` and ``ps``); the legacy
``--ps_hosts/--worker_hosts/--job_name/--task_index`` flags are accepted and ignored.
ps and worker tasks only serve (``server.join()``, ended by the launcher); the chief
schedules the steps, saves a checkpoint to ``<work_dir>/checkpoints`` (and resumes from
it), writes ``<work_dir>/result.json`` and exits. Keras 3 ``model.fit`` does not work with
this strategy, so the model is a plain ``tf.Module``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys

N_FEATURES = 784
N_CLASSES = 10
HIDDEN = 64


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work_dir", required=True, help="shared by all tasks")
    parser.add_argument("--train_steps", type=int, default=100, help="last global step")
    parser.add_argument("--batch_size", type=int, default=100)
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

    if task_type in ("ps", "worker"):
        # Report a lost worker or ps to the coordinator instead of retrying forever.
        os.environ["GRPC_FAIL_FAST"] = "use_caller"
    import numpy as np  # after recording: importing TensorFlow takes seconds
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if task_type in ("ps", "worker"):
        server = tf.distribute.Server(
            resolver.cluster_spec(),
            job_name=task_type,
            task_index=task_index,
            protocol=resolver.rpc_layer or "grpc",
            start=True,
        )
        server.join()  # forever: the launcher ends ps and workers
        return 0

    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

    # A fixed random "teacher" labels random inputs, so the loss really falls.
    teacher = tf.constant(
        np.random.default_rng(0).normal(size=(N_FEATURES, N_CLASSES)).astype(np.float32)
    )
    init = tf.initializers.GlorotUniform(seed=1)
    with strategy.scope():  # variables are spread over the ps
        params = {
            "w1": tf.Variable(init([N_FEATURES, HIDDEN]), name="w1"),
            "b1": tf.Variable(tf.zeros([HIDDEN]), name="b1"),
            "w2": tf.Variable(init([HIDDEN, N_CLASSES]), name="w2"),
            "b2": tf.Variable(tf.zeros([N_CLASSES]), name="b2"),
        }
        global_step = tf.Variable(0, dtype=tf.int64, name="global_step")

    checkpoint = tf.train.Checkpoint(step=global_step, **params)
    manager = tf.train.CheckpointManager(
        checkpoint, os.path.join(args.work_dir, "checkpoints"), max_to_keep=3
    )
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint)
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

        return strategy.run(replica_fn)

    # Steps run asynchronously on the workers; schedule what is left to reach train_steps.
    last = marked = None
    for i in range(max(args.train_steps - first_step, 0)):
        last = coordinator.schedule(train_step)
        if i % 50 == 0:
            if marked is not None:  # scheduled 50 steps ago, so fetching rarely waits
                loss = float(marked.fetch())
                print(f"step {int(global_step.numpy())} loss {loss:.4f}", flush=True)
            marked = last
    coordinator.join()
    loss = float(last.fetch()) if last is not None else None
    final_step = int(global_step.numpy())
    print(f"step {final_step} loss {loss}", flush=True)

    manager.save(checkpoint_number=final_step)
    write_json_atomic(
        os.path.join(args.work_dir, "result.json"),
        {"global_step": final_step, "loss": loss, "first_global_step": first_step},
    )
    print(f"tfyarn-example done global_step={final_step}", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a normal exit spends 4-7 s tearing down the coordinator


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
