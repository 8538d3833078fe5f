#!/usr/bin/env python
"""A training script in the style of Apache Slider's TensorFlow package, for TensorFlow 2.21.

It takes exactly the flags Slider's package gave its scripts: ``--ps_hosts --worker_hosts
--job_name --task_index --data_dir --ckp_dir``. tfyarn passes ``--data_dir`` when
``site.global.user.data.dir`` is set (a local copy of that HDFS directory, which YARN
localized into the container) and ``--ckp_dir`` when ``site.global.user.checkpoint.prefix``
is set (a local directory that tfyarn restores from, and mirrors to,
``<prefix>/<application name>.<application id>`` on HDFS).

As in Slider's package, there is no chiefworker: worker 0 is the chief and ``--worker_hosts``
lists only the workers. What differs from a TF 1.x script (README, "Coming from Slider's
TensorFlow package"): ``tensorflow.compat.v1`` with eager execution off, absl flags instead
of ``tf.app.flags``, ``tf.data`` instead of queue runners, and the chief saves every variable
from its own host (``Saver(sharded=False)``), because the hosts share no disk.

The training data is ``train.tfrecords`` in the data dir: ``tf.train.Example`` records with
``image_raw`` (784 bytes) and ``label`` (int64), as the package's mnist.py read them;
``python mnist.py --make_data=DIR`` writes a small synthetic one. The chief writes
``<ckp_dir>/result.json`` at its end (for the tests).
"""

from __future__ import annotations

import json
import os
import sys
import time

from absl import app, flags

IMAGE_PIXELS = 784
NUM_CLASSES = 10
TRAIN_FILE = "train.tfrecords"

flags.DEFINE_string("job_name", None, "job name: worker or ps")
flags.DEFINE_integer("task_index", 0, "task index; worker 0 is the chief")
flags.DEFINE_string("ps_hosts", "", "comma-separated host:port of the ps")
flags.DEFINE_string("worker_hosts", "", "comma-separated host:port of the workers")
flags.DEFINE_string("data_dir", None, "directory holding train.tfrecords")
flags.DEFINE_string("ckp_dir", None, "directory for the checkpoints")
flags.DEFINE_integer("hidden1", 32, "units in the first hidden layer")
flags.DEFINE_integer("hidden2", 16, "units in the second hidden layer")
flags.DEFINE_integer("batch_size", 50, "training batch size")
flags.DEFINE_float("learning_rate", 0.05, "learning rate")
flags.DEFINE_integer("train_steps", 200, "the last global step")
flags.DEFINE_integer("save_checkpoint_steps", 20, "global steps between checkpoints")
flags.DEFINE_float("step_sleep", 0.0, "seconds slept after each step (tests)")
flags.DEFINE_string("make_data", None, "write a synthetic train.tfrecords here and exit")
flags.DEFINE_integer("examples", 2000, "records --make_data writes")
FLAGS = flags.FLAGS


def make_data(tf, directory: str, count: int) -> None:
    """Synthetic MNIST-shaped records: the label is the brightest of ten pixel bands."""
    import numpy as np

    rng = np.random.default_rng(0)
    os.makedirs(directory, exist_ok=True)
    with tf.io.TFRecordWriter(os.path.join(directory, TRAIN_FILE)) as writer:
        for _ in range(count):
            label = int(rng.integers(NUM_CLASSES))
            image = rng.integers(0, 128, IMAGE_PIXELS, dtype=np.uint8)
            band = IMAGE_PIXELS // NUM_CLASSES
            image[label * band:(label + 1) * band] += 100
            example = tf.train.Example(features=tf.train.Features(feature={
                "image_raw": tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[image.tobytes()])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            }))
            writer.write(example.SerializeToString())


def inputs(tf, batch_size: int):
    """Batches of (images, labels) from <data_dir>/train.tfrecords (tf.data, not queues)."""
    def parse(serialized):
        features = tf.io.parse_single_example(serialized, {
            "image_raw": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        })
        image = tf.io.decode_raw(features["image_raw"], tf.uint8)
        image.set_shape([IMAGE_PIXELS])
        image = tf.cast(image, tf.float32) * (1.0 / 255) - 0.5
        return image, tf.cast(features["label"], tf.int32)

    dataset = (tf.data.TFRecordDataset(os.path.join(FLAGS.data_dir, TRAIN_FILE))
               .map(parse).shuffle(1000).repeat().batch(batch_size))
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


def inference(tf, images):
    def layer(x, n_in, n_out, name):
        w = tf.compat.v1.get_variable(f"{name}_w", [n_in, n_out],
                                      initializer=tf.compat.v1.glorot_uniform_initializer())
        b = tf.compat.v1.get_variable(f"{name}_b", [n_out], initializer=tf.zeros_initializer())
        return tf.matmul(x, w) + b

    hidden1 = tf.nn.relu(layer(images, IMAGE_PIXELS, FLAGS.hidden1, "hidden1"))
    hidden2 = tf.nn.relu(layer(hidden1, FLAGS.hidden1, FLAGS.hidden2, "hidden2"))
    return layer(hidden2, FLAGS.hidden2, NUM_CLASSES, "softmax_linear")


def main(argv) -> int:
    del argv
    import tensorflow as tf

    if FLAGS.make_data:
        make_data(tf, FLAGS.make_data, FLAGS.examples)
        return 0
    if not FLAGS.data_dir:
        raise ValueError("Must specify an explicit `data_dir`")
    if not FLAGS.ckp_dir:
        raise ValueError("Must specify an explicit `ckp_dir`")
    print("argv: " + json.dumps(sys.argv[1:]), flush=True)
    print("data_dir holds: " + json.dumps(sorted(os.listdir(FLAGS.data_dir))), flush=True)

    tf.compat.v1.disable_eager_execution()
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    if FLAGS.job_name == "ps":
        tf.compat.v1.train.Server(cluster, job_name="ps", task_index=FLAGS.task_index).join()
        return 0

    is_chief = FLAGS.task_index == 0  # as in Slider's package: worker 0 is the chief
    worker_device = f"/job:worker/task:{FLAGS.task_index}"
    # Talk only to the ps and ourselves: a worker must not wait for the others.
    config = tf.compat.v1.ConfigProto(device_filters=["/job:ps", worker_device])
    server = tf.compat.v1.train.Server(cluster, job_name="worker",
                                       task_index=FLAGS.task_index, config=config)
    with tf.compat.v1.device(tf.compat.v1.train.replica_device_setter(
            worker_device=worker_device, cluster=cluster)):
        images, labels = inputs(tf, FLAGS.batch_size)
        logits = inference(tf, images)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        global_step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=global_step)
    # Every variable saved and restored from the chief's host: the hosts share no disk.
    with tf.compat.v1.device(worker_device):
        saver = tf.compat.v1.train.Saver(sharded=False, max_to_keep=3)

    first_step = last_step = 0
    last_loss = None
    with tf.compat.v1.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief, checkpoint_dir=FLAGS.ckp_dir,
            scaffold=tf.compat.v1.train.Scaffold(saver=saver),
            hooks=[tf.compat.v1.train.StopAtStepHook(last_step=FLAGS.train_steps)],
            save_checkpoint_steps=FLAGS.save_checkpoint_steps, save_summaries_steps=10,
            log_step_count_steps=0, config=config) as sess:
        first_step = last_step = int(sess.run(global_step))
        print(f"start global_step {first_step}", flush=True)
        while not sess.should_stop():
            _, last_step, last_loss = sess.run([train_op, global_step, loss])
            print(f"Step {last_step} loss {last_loss:.4f}", flush=True)
            if FLAGS.step_sleep:
                time.sleep(FLAGS.step_sleep)
    if is_chief:  # after the session closed: its last checkpoint is in ckp_dir
        # The other workers step too, so the chief's own last view can stop short of
        # --train_steps; the checkpoint saved as the session closed has the final step.
        final = tf.train.latest_checkpoint(FLAGS.ckp_dir)
        final_step = int(final.rsplit("-", 1)[1]) if final else int(last_step)
        result = {"first_global_step": first_step, "global_step": final_step,
                  "loss": None if last_loss is None else float(last_loss),
                  "data_files": sorted(os.listdir(FLAGS.data_dir)), "argv": sys.argv[1:],
                  "attempt": int(os.environ.get("TFYARN_ATTEMPT") or 0)}
        with open(os.path.join(FLAGS.ckp_dir, "result.json.tmp"), "w") as out:
            json.dump(result, out)
        os.replace(os.path.join(FLAGS.ckp_dir, "result.json.tmp"),
                   os.path.join(FLAGS.ckp_dir, "result.json"))
    return 0


if __name__ == "__main__":
    app.run(main)
