"""A task script with no TensorFlow: records what it received, then behaves like its role.

ps blocks until the launcher ends it; the chief and workers exit 0 after --sleep seconds (the
chief after --chief_sleep, if given), or as soon as --release_file exists (a path on HDFS,
hdfs://..., since the hosts share no disk). --fail
worker:2 makes that task (TF's job name and index) exit 3 at once on its first attempt;
--hog worker:2:700 makes it hold 700 MB of memory (touched, so resident) and wait;
--hog_on_release evaluator:0:700 does so once the release file exists.
--summaries makes the chief write a TensorFlow event file in its work dir, a loss and a step
every second, as TensorFlow's own writer frames them (what the job page's curves and
TensorBoard read), with no TensorFlow.
--step_every 0.5 makes the chief and workers report a step every half second into the file
TFYARN_PROGRESS_FILE names, as a script that does not import tfyarn may (--slow worker:2
makes that task step four times slower: a straggler).
With TFYARN_SECRET_* set, it records each secret's sha256 (never the secret itself).
"""

import argparse
import hashlib
import json
import os
import socket
import struct
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
parser.add_argument("--hog_on_release", default="",
                    help="as --hog, once --release_file exists (where the others end)")
parser.add_argument("--summaries", action="store_true",
                    help="the chief writes a loss and a step to an event file every second")
parser.add_argument("--step_every", type=float, default=0.0,
                    help="the chief and workers report a step this often (seconds)")
parser.add_argument("--slow", default="", help="job_name:task_index stepping 4 times slower")
args, _ = parser.parse_known_args()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def tf_record(data: bytes) -> bytes:
    """TFRecord framing: length, its masked CRC-32C, the data, its masked CRC-32C."""
    def masked(crc: int) -> bytes:
        return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)

    length = struct.pack("<Q", len(data))
    return length + masked(crc32c(length)) + data + masked(crc32c(data))


def varint(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def message(number: int, data: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(data)) + data


def event(step: int, extra: bytes) -> bytes:
    """Event {1: wall_time double, 2: step int64, ...}."""
    return (varint(1 << 3 | 1) + struct.pack("<d", time.time()) + varint(2 << 3) + varint(step)
            + extra)


class Summaries:
    """An event file of simple scalars: Summary {1: Value {1: tag, 2: simple_value}}."""

    def __init__(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.light"
        self.file = open(os.path.join(folder, name), "ab")  # noqa: SIM115 (open while it runs)
        self.file.write(tf_record(event(0, message(3, b"brain.Event:2"))))
        self.step = 0

    def scalar(self, tag: str, value: float) -> None:
        self.step += 10
        value_message = message(1, tag.encode()) + varint(2 << 3 | 5) + struct.pack("<f", value)
        self.file.write(tf_record(event(self.step, message(5, message(1, value_message)))))
        self.file.flush()


release_client = None  # made once: the loop below asks five times a second


def released() -> bool:
    global release_client
    if not args.release_file:
        return False
    from urllib.parse import urlsplit

    from hdfs_native import Client  # tfyarn's own HDFS client, in the same environment

    url = urlsplit(args.release_file)
    if release_client is None:
        release_client = Client(f"{url.scheme}://{url.netloc}") if url.netloc else Client()
    try:
        release_client.get_file_info(url.path)
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


def hog(spec: str) -> None:
    """Hold spec's MB (job_name:task_index:MB) if it names this task, until killed."""
    if not spec.startswith(f"{args.job_name}:{args.task_index}:"):
        return
    held = bytearray(int(spec.rsplit(":", 1)[1]) * 2**20)
    for page in range(0, len(held), 4096):  # resident, as a real model's tensors would be
        held[page] = 1
    print(f"light task {args.job_name} {args.task_index} holds {len(held) >> 20} MB", flush=True)
    while True:
        time.sleep(60)


hog(args.hog)
if args.job_name == "ps":
    while True:
        time.sleep(60)
is_chief = args.job_name == "worker" and args.task_index == 0
sleep = args.chief_sleep if is_chief and args.chief_sleep is not None else args.sleep
deadline = time.monotonic() + sleep
summaries = Summaries(os.path.join(args.work_dir, "train")) if (
    args.summaries and is_chief) else None
next_summary = time.monotonic()
step_every = args.step_every * (4 if args.slow == f"{args.job_name}:{args.task_index}" else 1)
step, next_step = 0, time.monotonic()


def report_step(number: int) -> None:
    """tfyarn's progress file, written aside and renamed (read whole by the agent)."""
    path = os.environ["TFYARN_PROGRESS_FILE"]
    with open(f"{path}.tmp", "w") as f:
        f.write(f"{number}\n")
    os.replace(f"{path}.tmp", path)


while time.monotonic() < deadline:
    if released():
        break
    if summaries and time.monotonic() >= next_summary:
        summaries.scalar("loss", 2.0 / (1 + summaries.step / 100))
        next_summary += 1.0
    if step_every and time.monotonic() >= next_step:
        step += 1
        report_step(step)
        next_step += step_every
    time.sleep(0.2)
hog(args.hog_on_release)
if args.exit_code:
    print(f"light task {args.job_name} {args.task_index} failing on purpose", file=sys.stderr)
sys.exit(args.exit_code)
