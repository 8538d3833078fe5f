#!/usr/bin/env python
"""Classic between-graph replicated training (TF1 style) on synthetic MNIST-shaped data.

Driven only by Slider's flags: ``--ps_hosts --worker_hosts --job_name --task_index`` and
``--work_dir``. ``worker_hosts`` lists the chief first; the chief is worker task 0.
Parameter servers hold the variables and block in ``server.join()`` until the launcher
ends them. Checkpoints go to ``<work_dir>/checkpoints``, so a restarted job resumes at
the saved global step.

With ``--train_data`` it trains on TFRecords (examples/make_tfrecords.py) instead, each
worker on its own share of the files: an ``hdfs://`` glob is streamed by tfyarn.data, a
relative one is read from ``--data_dir`` (site.global.data, localized by YARN); see
examples/hdfs_data/.

With an ``evaluator`` component (``--job_name=evaluator``) it evaluates each checkpoint
that appears in ``<work_dir>/checkpoints`` (tfyarn brings each new one down from HDFS) on a
held-out batch, writes the loss and accuracy as summaries under ``<work_dir>/eval`` (tfyarn
sends them to HDFS, where TensorBoard shows them) and ends once tfyarn says training is done
(``TFYARN_TRAINING_DONE_FILE`` exists) and the last checkpoint is evaluated.

For tests it records what it received in ``<work_dir>/flags/<job>_<index>.json`` (with the
files it trains on) and the chief writes ``<work_dir>/result.json`` at the end; the
evaluator lists what it evaluated in ``<work_dir>/eval/evaluations.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from types import ModuleType

import example_data
from example_support import (
    HIDDEN,
    N_CLASSES,
    N_FEATURES,
    record_flags,
    teacher_weights,
    write_result,
)

from tfyarn.preemption import notice_received

LOG_EVERY = 50  # local steps between progress lines
SUMMARY_EVERY = 20  # global steps between summaries (loss, global_step/sec): tfyarn status
EVAL_BATCH = 1000  # held-out examples the evaluator scores each checkpoint on


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ps_hosts", default="", help="comma-separated host:port of the ps")
    parser.add_argument("--worker_hosts", required=True, help="chief first, then workers")
    parser.add_argument("--job_name", required=True, choices=["ps", "worker", "evaluator"])
    parser.add_argument("--task_index", type=int, required=True)
    parser.add_argument("--work_dir", required=True,
                        help="checkpoints and results (kept on HDFS by tfyarn)")
    parser.add_argument("--train_steps", type=int, default=300, help="last global step")
    parser.add_argument("--batch_size", type=int, default=100)
    parser.add_argument("--learning_rate", type=float, default=0.3)
    parser.add_argument("--step_sleep", type=float, default=0.0, help="seconds slept per step")
    parser.add_argument("--save_checkpoint_steps", type=int, default=50)
    parser.add_argument("--train_data", default="",
                        help="TFRecords to train on (examples/make_tfrecords.py): an hdfs:// "
                             "glob, streamed by tfyarn.data, or a glob in --data_dir "
                             "(site.global.data, localized by YARN); default: synthetic")
    parser.add_argument("--data_dir", default=None, help="where tfyarn put site.global.data")
    return parser.parse_args(argv)


def worker_session_creator(tf: ModuleType, master: str, config: object) -> object:
    """A non-chief session creator that polls for the chief's variables every 0.5 s.

    tf.compat.v1's WorkerSessionCreator waits 30 s (SessionManager's recovery_wait_secs)
    each time it finds the variables uninitialised: when a worker starts before the chief
    has initialised or restored them, and again after a ps restart.
    """

    class WorkerSessionCreator(tf.compat.v1.train.SessionCreator):
        def __init__(self) -> None:
            self.scaffold = tf.compat.v1.train.Scaffold()

        def create_session(self):
            self.scaffold.finalize()
            manager = tf.compat.v1.train.SessionManager(
                local_init_op=self.scaffold.local_init_op,
                ready_op=self.scaffold.ready_op,
                ready_for_local_init_op=self.scaffold.ready_for_local_init_op,
                graph=tf.compat.v1.get_default_graph(),
                recovery_wait_secs=0.5,
            )
            return manager.wait_for_session(master, config=config, max_wait_secs=3600)

    return WorkerSessionCreator()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    files = []  # this worker's share of --train_data (the ps read none)
    if args.train_data and args.job_name == "worker":
        files = example_data.shard_files(args.train_data, args.data_dir)
    record_flags(
        args.work_dir,
        f"{args.job_name}_{args.task_index}",
        {
            "ps_hosts": args.ps_hosts,
            "worker_hosts": args.worker_hosts,
            "job_name": args.job_name,
            "task_index": args.task_index,
            "work_dir": args.work_dir,
            "train_files": files,
        },
    )
    ps_hosts = [h for h in args.ps_hosts.split(",") if h]
    worker_hosts = [h for h in args.worker_hosts.split(",") if h]
    if not ps_hosts:
        print("mnist1.py needs at least one ps task", file=sys.stderr)
        return 2

    import numpy as np  # after recording: importing TensorFlow takes seconds
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    if args.job_name == "ps":
        server = tf.compat.v1.train.Server(cluster, job_name="ps", task_index=args.task_index)
        server.join()  # forever: the launcher ends parameter servers
        return 0
    if args.job_name == "evaluator":  # outside the cluster: it reads checkpoints only
        return evaluate(tf, np, args.work_dir)

    is_chief = args.task_index == 0
    # Only talk to the ps and ourselves: otherwise a worker waits for (or on) every other
    # worker, and hangs once the chief has exited.
    config = tf.compat.v1.ConfigProto(
        device_filters=["/job:ps", f"/job:worker/task:{args.task_index}"]
    )
    server = tf.compat.v1.train.Server(
        cluster, job_name="worker", task_index=args.task_index, config=config
    )

    teacher = teacher_weights(np)
    worker_device = f"/job:worker/task:{args.task_index}"
    with tf.compat.v1.device(
        tf.compat.v1.train.replica_device_setter(worker_device=worker_device, cluster=cluster)
    ):
        global_step = tf.compat.v1.train.get_or_create_global_step()
        if files:
            x, labels = example_data.batches(tf, files, args.batch_size)
        else:
            x = tf.random.normal([args.batch_size, N_FEATURES])
            labels = tf.argmax(tf.matmul(x, tf.constant(teacher)), axis=1)
        init = tf.compat.v1.glorot_uniform_initializer()
        w1 = tf.compat.v1.get_variable("w1", [N_FEATURES, HIDDEN], initializer=init)
        b1 = tf.compat.v1.get_variable("b1", [HIDDEN], initializer=tf.zeros_initializer())
        w2 = tf.compat.v1.get_variable("w2", [HIDDEN, N_CLASSES], initializer=init)
        b2 = tf.compat.v1.get_variable("b2", [N_CLASSES], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        tf.compat.v1.summary.scalar("loss", loss)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(args.learning_rate)
        train_op = optimizer.minimize(loss, global_step=global_step)
        with tf.control_dependencies([train_op]):
            step_after = global_step.read_value()  # the global step after this update

    checkpoint_dir = os.path.join(args.work_dir, "checkpoints")
    hooks = [tf.compat.v1.train.StopAtStepHook(last_step=args.train_steps)]
    first_step = last_step = 0
    last_loss: float | None = None  # stays None when a finished job is started again
    local_steps = 0
    if is_chief:
        # Save and restore every variable from this host (the chief's): the default sharded
        # saver runs a save op on each ps, writing into a directory of the same name on the
        # ps's own disk, which on another machine does not exist or is not mirrored.
        with tf.compat.v1.device(worker_device):
            saver = tf.compat.v1.train.Saver(sharded=False, max_to_keep=3)
        session = tf.compat.v1.train.MonitoredTrainingSession(
            master=server.target,
            is_chief=True,
            scaffold=tf.compat.v1.train.Scaffold(saver=saver),
            checkpoint_dir=checkpoint_dir,  # restored from here on (re)start
            hooks=hooks,
            save_checkpoint_steps=args.save_checkpoint_steps,
            save_summaries_steps=SUMMARY_EVERY,  # the loss, in checkpoint_dir's event file
            log_step_count_steps=SUMMARY_EVERY,  # global_step/sec there too
            config=config,
        )
    else:
        # What MonitoredTrainingSession builds for a non-chief worker, but with a session
        # creator that does not sleep 30 s when the chief has not initialised the variables.
        session = tf.compat.v1.train.MonitoredSession(
            session_creator=worker_session_creator(tf, server.target, config), hooks=hooks
        )
    with session as sess:
        first_step = last_step = int(sess.run(global_step))
        print(f"start global_step {first_step}", flush=True)
        noticed = False
        while not sess.should_stop():
            _, last_step, last_loss = sess.run([train_op, step_after, loss])
            local_steps += 1
            if is_chief and not noticed and notice_received():
                # YARN will preempt a task of this job: save now, so that a restart
                # resumes from here rather than from the last periodic checkpoint.
                noticed = True
                saved = sess.run_step_fn(lambda step_context: saver.save(
                    step_context.session, os.path.join(checkpoint_dir, "model.ckpt"),
                    global_step=global_step))
                print(f"preemption notice at global_step {last_step}: saved {saved}",
                      flush=True)
            if local_steps % LOG_EVERY == 1:
                print(f"step {last_step} loss {last_loss:.4f}", flush=True)
            if args.step_sleep:
                time.sleep(args.step_sleep)
    print(f"step {last_step} loss {last_loss} (local steps {local_steps})", flush=True)

    if is_chief:
        # The session stops once the global step reached --train_steps, which another
        # worker's update may have done: the chief's own last update can be older. Its final
        # checkpoint, saved as the session ended, holds the global step training ended at.
        latest = tf.train.latest_checkpoint(checkpoint_dir)
        final_step = int(latest.rsplit("-", 1)[1]) if latest else int(last_step)
        loss = None if last_loss is None else float(last_loss)
        write_result(args.work_dir, max(final_step, int(last_step)), loss, first_step)
    return 0


def evaluate(tf: ModuleType, np: ModuleType, work_dir: str) -> int:
    """Score each new checkpoint on a held-out batch until training is done."""
    checkpoint_dir = os.path.join(work_dir, "checkpoints")
    eval_dir = os.path.join(work_dir, "eval")
    done_file = os.environ.get("TFYARN_TRAINING_DONE_FILE", "")
    rng = np.random.default_rng(7)  # the same held-out batch every time
    x = rng.standard_normal((EVAL_BATCH, N_FEATURES)).astype(np.float32)
    labels = np.argmax(x @ teacher_weights(np), axis=1)
    graph = tf.Graph()
    with graph.as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        w1 = tf.compat.v1.get_variable("w1", [N_FEATURES, HIDDEN])
        b1 = tf.compat.v1.get_variable("b1", [HIDDEN])
        w2 = tf.compat.v1.get_variable("w2", [HIDDEN, N_CLASSES])
        b2 = tf.compat.v1.get_variable("b2", [N_CLASSES])
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        saver = tf.compat.v1.train.Saver([global_step, w1, b1, w2, b2])
        writer = tf.compat.v1.summary.FileWriter(eval_dir)
        evaluations = []
        with tf.compat.v1.Session() as sess:
            for path in tf.train.checkpoints_iterator(
                    checkpoint_dir, min_interval_secs=1, timeout=2,
                    timeout_fn=lambda: bool(done_file) and os.path.exists(done_file)):
                saver.restore(sess, path)
                step, eval_loss, eval_accuracy = sess.run([global_step, loss, accuracy])
                writer.add_summary(tf.compat.v1.Summary(value=[
                    tf.compat.v1.Summary.Value(tag="loss", simple_value=eval_loss),
                    tf.compat.v1.Summary.Value(tag="accuracy", simple_value=eval_accuracy)]),
                    int(step))
                writer.flush()
                evaluations.append({"step": int(step), "loss": float(eval_loss),
                                    "accuracy": float(eval_accuracy)})
                print(f"evaluated step {step}: loss {eval_loss:.4f} accuracy "
                      f"{eval_accuracy:.3f}", flush=True)
                with open(os.path.join(eval_dir, "evaluations.json"), "w") as out:
                    json.dump(evaluations, out)
        writer.close()
    print(f"training done: {len(evaluations)} checkpoint(s) evaluated", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
