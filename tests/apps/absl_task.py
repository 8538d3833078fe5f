"""A script as TensorFlow's own mnist_replica.py parses its flags: absl, Slider's four flags
and no other, so absl stops at once on any flag tfyarn adds (e.g. --work_dir). No TensorFlow.

It writes what it received (argv, its directory, TFYARN_WORK_DIR) as received/<job>_<index>.json
in TFYARN_WORK_DIR; the ps then blocks until tfyarn ends it, the others exit 0.
"""

import json
import os
import sys
import time

from absl import app, flags

flags.DEFINE_string("ps_hosts", "", "comma-separated host:port of the ps tasks")
flags.DEFINE_string("worker_hosts", "", "comma-separated host:port of the workers")
flags.DEFINE_string("job_name", "", "ps or worker")
flags.DEFINE_integer("task_index", 0, "the task's index within its job")
FLAGS = flags.FLAGS


def record(job_name: str, task_index: int) -> None:
    """What this task received, where the test reads it (its container's work dir)."""
    work_dir = os.environ["TFYARN_WORK_DIR"]
    path = os.path.join(work_dir, "received", f"{job_name}_{task_index}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as out:
        json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "work_dir_env": work_dir}, out)
    os.replace(path + ".tmp", path)


def main(argv: list[str]) -> None:
    record(FLAGS.job_name, FLAGS.task_index)
    if FLAGS.job_name == "ps":
        while True:  # ended by tfyarn when the chief ends
            time.sleep(1)
    time.sleep(2)  # the chief: every task has started (the spec came once all registered)


if __name__ == "__main__":
    app.run(main)
