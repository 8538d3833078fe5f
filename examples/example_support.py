"""What the example scripts share: recording what a task received, the synthetic task, results,
the steps a Keras `fit` reports.

Kept beside the scripts, so it travels with them to every container (the scripts
directory is shipped whole). TensorFlow is passed in, never imported here: recording
must happen before the seconds-long TensorFlow import.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from types import ModuleType

N_FEATURES = 784  # MNIST-shaped inputs
N_CLASSES = 10
HIDDEN = 64


def write_json_atomic(path: str, data: dict) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def record_flags(work_dir: str, name: str, flags: dict) -> None:
    """Save argv, flags and environment to <work_dir>/flags/<name>.json and print them.

    A restarted task (TFYARN_ATTEMPT > 0) writes <name>.attempt<N>.json instead, so its
    record never passes for the first attempt's.
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
    suffix = f".attempt{attempt}" if attempt > 0 else ""
    path = os.path.join(flags_dir, f"{name}{suffix}.json")
    write_json_atomic(path, record)
    print("tfyarn-example flags " + json.dumps(record), flush=True)


def legacy_flags(argv: list[str]) -> dict:
    """The Slider flags as given (TF2 scripts record them for tests, otherwise unused)."""
    parser = argparse.ArgumentParser(add_help=False)
    for name in ("--ps_hosts", "--worker_hosts", "--job_name", "--work_dir"):
        parser.add_argument(name)
    parser.add_argument("--task_index", type=int)
    return vars(parser.parse_known_args(argv)[0])


def tf2_start(argv: list[str], description: str,
              add_options: Callable[[argparse.ArgumentParser], None] | None = None,
              ) -> tuple[argparse.Namespace, dict]:
    """A TF2 script's options (the common ones, and those ``add_options`` adds) and
    TF_CONFIG; records what the task received.

    TF_CONFIG says everything about the cluster: the Slider flags are accepted, recorded
    for the tests and otherwise ignored.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--work_dir", required=True,
                        help="checkpoints and results (kept on HDFS by tfyarn)")
    parser.add_argument("--train_steps", type=int, default=100, help="last global step")
    parser.add_argument("--save_every", type=int, default=50,
                        help="global steps between checkpoints")
    parser.add_argument("--step_sleep", type=float, default=0.0,
                        help="seconds to pause per step (to make a short job last)")
    parser.add_argument("--batch_size", type=int, default=100, help="per task")
    parser.add_argument("--learning_rate", type=float, default=0.3)
    if add_options is not None:
        add_options(parser)
    args, _legacy = parser.parse_known_args(argv)
    tf_config = json.loads(os.environ["TF_CONFIG"])
    task = tf_config["task"]
    record_flags(args.work_dir, f"{task['type']}_{task['index']}", legacy_flags(argv))
    return args, tf_config


def is_chief(tf_config: dict) -> bool:
    """The chief is its own task type; without one, worker 0 plays the chief."""
    task = tf_config["task"]
    return task["type"] == "chief" or (
        task["type"] == "worker" and int(task["index"]) == 0
        and "chief" not in tf_config["cluster"])


def teacher_weights(np: ModuleType):
    """A fixed random "teacher" that labels random inputs, the same on every task, so the
    workers learn one function and the loss really falls."""
    return np.random.default_rng(0).normal(size=(N_FEATURES, N_CLASSES)).astype(np.float32)


def make_params(tf: ModuleType, aggregation=None) -> dict:
    """The MLP's variables (create them in the strategy's scope)."""
    init = tf.initializers.GlorotUniform(seed=1)  # the same start on every task
    extra = {} if aggregation is None else {"aggregation": aggregation}
    return {
        "w1": tf.Variable(init([N_FEATURES, HIDDEN]), name="w1", **extra),
        "b1": tf.Variable(tf.zeros([HIDDEN]), name="b1", **extra),
        "w2": tf.Variable(init([HIDDEN, N_CLASSES]), name="w2", **extra),
        "b2": tf.Variable(tf.zeros([N_CLASSES]), name="b2", **extra),
    }


def sgd_step(tf: ModuleType, params: dict, teacher, batch_size: int, learning_rate: float):
    """One plain-SGD step on a fresh synthetic batch (replica context); returns the loss."""
    x = tf.random.normal([batch_size, N_FEATURES])
    labels = tf.argmax(tf.matmul(x, teacher), axis=1)
    with tf.GradientTape() as tape:
        hidden = tf.nn.relu(tf.matmul(x, params["w1"]) + params["b1"])
        logits = tf.matmul(hidden, params["w2"]) + params["b2"]
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
    variables = list(params.values())
    for var, grad in zip(variables, tape.gradient(loss, variables), strict=True):
        var.assign_sub(learning_rate * grad)
    return loss


def serve_forever(tf: ModuleType, resolver, task_type: str, task_index: int) -> None:
    """A ParameterServerStrategy ps or worker: only serves the chief's steps, until the
    launcher ends it (a ps never exits by itself)."""
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=task_type,
        task_index=task_index,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    server.join()


def write_result(work_dir: str, final_step: int, loss: float | None, first_step: int) -> None:
    """The chief's summary for tests: where training ended and where this run began."""
    write_json_atomic(
        os.path.join(work_dir, "result.json"),
        {"global_step": final_step, "loss": loss, "first_global_step": first_step},
    )
    print(f"tfyarn-example done global_step={final_step}", flush=True)


def step_progress(keras: ModuleType, next_step: Callable[[], int], stall_at: int | None,
                  stalls_here: bool, pause_s: float = 0.0):
    """A callback that reports each step (``next_step()``) as its batch begins
    (``tfyarn.progress.report_step``: tfyarn's stall watchdog and `tfyarn status` read it),
    pauses ``pause_s`` after each step and, with ``stall_at``, where ``stalls_here``, sleeps
    after that step in the job's first generation, as a task stuck on its data would (the
    others wait for it in their next collective)."""
    try:
        from tfyarn import progress
    except ImportError:  # alone, without tfyarn installed
        progress = None
    first_generation = os.environ.get("TFYARN_GENERATION", "0") == "0"

    class StepProgress(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
            self.step = next_step()
            if progress is not None:
                progress.report_step(self.step)

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            time.sleep(pause_s)
            if self.step == stall_at and stalls_here and first_generation:
                print(f"stalling after step {self.step} at {time.time()}", flush=True)
                time.sleep(3600)

    return StepProgress()
