"""A task script with no TensorFlow: records what it received, then behaves like its role.

ps blocks until the launcher ends it; the chief and workers exit 0 after --sleep seconds (the
chief after --chief_sleep, if given), or as soon as --release_file exists (a path on HDFS,
hdfs://..., since the hosts share no disk). --fail
worker:2 makes that task (TF's job name and index) exit 3 at once on its first attempt;
--hog worker:2:700 makes it hold 700 MB of memory (touched, so resident) and wait.
With TFYARN_SECRET_* set, it records each secret's sha256 (never the secret itself).
"""

import argparse
import hashlib
import json
import os
import socket
import sys
import time

parser = argparse.ArgumentParser()
for flag in ("--ps_hosts", "--worker_hosts", "--job_name", "--work_dir"):
    parser.add_argument(flag, default="")
parser.add_argument("--task_index", type=int, default=0)
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--chief_sleep", type=float, default=None)
parser.add_argument("--exit_code", type=int, default=0)
parser.add_argument("--fail", default="", help="job_name:task_index failing on its first attempt")
parser.add_argument("--take_own_port", action="store_true",
                    help="worker task 1, first attempt: another listener takes its port first")
parser.add_argument("--release_file", default="",
                    help="the chief and workers end once this HDFS file exists (or after --sleep)")
parser.add_argument("--hog", default="",
                    help="job_name:task_index:MB holding that much memory, then waiting")
args, _ = parser.parse_known_args()


def released() -> bool:
    if not args.release_file:
        return False
    from urllib.parse import urlsplit

    from hdfs_native import Client  # tfyarn's own HDFS client, in the same environment

    url = urlsplit(args.release_file)
    client = Client(f"{url.scheme}://{url.netloc}") if url.netloc else Client()
    try:
        client.get_file_info(url.path)
    except FileNotFoundError:
        return False
    return True


secrets = {}
for name, path in os.environ.items():
    if name.startswith("TFYARN_SECRET_"):
        with open(path, "rb") as f:
            secrets[name] = {"path": path, "sha256": hashlib.sha256(f.read()).hexdigest(),
                             "mode": oct(os.stat(path).st_mode & 0o777)}
record = {
    "argv": sys.argv[1:], "tf_config": json.loads(os.environ.get("TF_CONFIG", "{}")),
    "role": os.environ.get("TFYARN_ROLE"), "index": os.environ.get("TFYARN_TASK_INDEX"),
    "attempt": os.environ.get("TFYARN_ATTEMPT"), "executable": sys.executable,
    "pid": os.getpid(), "secrets": secrets,
}
os.makedirs(os.path.join(args.work_dir, "light"), exist_ok=True)
with open(os.path.join(args.work_dir, "light", f"{args.job_name}_{args.task_index}.json"),
          "w") as f:
    json.dump(record, f)
print(f"light task {args.job_name} {args.task_index} started", flush=True)

attempt = int(os.environ.get("TFYARN_ATTEMPT") or 0)
if args.take_own_port and args.job_name == "worker" and args.task_index == 1 and attempt == 0:
    # Someone else listens on our port before our server binds it, as TensorFlow would.
    port = int(args.worker_hosts.split(",")[args.task_index].rsplit(":", 1)[1])
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("0.0.0.0", port))
    squatter.listen()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))  # raises: Address already in use

if args.fail == f"{args.job_name}:{args.task_index}" and attempt == 0:
    print(f"light task {args.fail} failing on purpose", file=sys.stderr, flush=True)
    sys.exit(3)
if args.hog.startswith(f"{args.job_name}:{args.task_index}:"):
    held = bytearray(int(args.hog.rsplit(":", 1)[1]) * 2**20)
    for page in range(0, len(held), 4096):  # resident, as a real model's tensors would be
        held[page] = 1
    print(f"light task {args.job_name} {args.task_index} holds {len(held) >> 20} MB", flush=True)
    while True:
        time.sleep(60)
if args.job_name == "ps":
    while True:
        time.sleep(60)
is_chief = args.job_name == "worker" and args.task_index == 0
sleep = args.chief_sleep if is_chief and args.chief_sleep is not None else args.sleep
deadline = time.monotonic() + sleep
while time.monotonic() < deadline:
    if released():
        break
    time.sleep(0.2)
if args.exit_code:
    print(f"light task {args.job_name} {args.task_index} failing on purpose", file=sys.stderr)
sys.exit(args.exit_code)
