"""A script with argparse's parse_args(), Slider's four flags and an optional --model_dir (as
scripts written for tf.estimator have): argparse stops at once on any other flag, such as
tfyarn's default --work_dir. No TensorFlow; otherwise as absl_task.py."""

import argparse
import time

from absl_task import record

parser = argparse.ArgumentParser()
for flag in ("--ps_hosts", "--worker_hosts", "--job_name"):
    parser.add_argument(flag, required=True)
parser.add_argument("--task_index", type=int, required=True)
parser.add_argument("--model_dir", default=None)
args = parser.parse_args()
record(args.job_name, args.task_index)
if args.job_name == "ps":
    while True:  # ended by tfyarn when the chief ends
        time.sleep(1)
time.sleep(2)
