"""light_task.py that first records which GPUs it was given and which its host shows.

Writes gpu/<job_name>_<task_index>.attempt<N>.json in its work dir: CUDA_VISIBLE_DEVICES (None
when unset), CUDA_DEVICE_ORDER, the nvidia-smi on its PATH (None when there is none) and the
GPUs it lists (index, uuid). Then it behaves as light_task.py (same flags).
"""

import json
import os
import runpy
import shutil
import subprocess
import sys

flags = dict(arg[2:].split("=", 1) for arg in sys.argv[1:] if arg.startswith("--") and "=" in arg)
smi = shutil.which("nvidia-smi")
listed = None
if smi:
    out = subprocess.run([smi, "--query-gpu=index,uuid", "--format=csv,noheader"],
                         capture_output=True, text=True)
    listed = [line.split(", ") for line in out.stdout.splitlines() if line.strip()]
attempt = os.environ.get("TFYARN_ATTEMPT", "0")
record = {
    "job_name": flags.get("job_name"), "task_index": flags.get("task_index"),
    "role": os.environ.get("TFYARN_ROLE"), "attempt": attempt,
    "host": os.environ.get("NM_HOST"),
    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
    "nvidia_smi": smi, "listed": listed,
}
directory = os.path.join(flags.get("work_dir", "."), "gpu")
os.makedirs(directory, exist_ok=True)
name = f"{flags.get('job_name')}_{flags.get('task_index')}.attempt{attempt}.json"
with open(os.path.join(directory, name), "w") as f:
    json.dump(record, f)
print(f"gpu task: CUDA_VISIBLE_DEVICES={record['cuda_visible_devices']!r}", flush=True)
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "light_task.py"),
               run_name="__main__")
