"""What an agent on the lean link does from its start to its exported port, then its own cost.

Run by bench/link_cost.py in a fresh interpreter, in a directory holding the job's token file,
with TFYARN_RENDEZVOUS set: the imports agent.py needs without skein (the registry's key
names, the plan, GPUs, the heartbeat's clock), the `started` status, its task, a reserved
port, the export and the `registered` status. Prints one JSON line: CPU seconds
(user+system, the interpreter's start included) and VmHWM/VmRSS in MB.
"""

import json
import logging  # noqa: F401 (the agent logs)
import os
import resource
import socket
import subprocess  # noqa: F401 (the agent runs the script)
import sys

from appmaster.common import gpus, registry  # noqa: F401
from appmaster.common.agentlink import AgentLink
from appmaster.common.jobplan import JobPlan  # noqa: F401

container = sys.argv[1]
link = AgentLink.from_container()
link.put(registry.status_key(container), json.dumps({"state": "started"}).encode())
task = registry.TaskAssignment.from_json(link.get(registry.task_key(container)))
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("0.0.0.0", 0))
address = f"127.0.0.1:{sock.getsockname()[1]}"
link.put(registry.export_key(task.role, task.index),
         registry.Export(address, container, task.generation).to_json().encode())
link.put(registry.status_key(container),
         json.dumps({"state": "registered", "address": address}).encode())
self_usage = resource.getrusage(resource.RUSAGE_SELF)
with open(f"/proc/{os.getpid()}/status") as f:
    memory = {k: int(v.split()[0]) / 1024 for k, v in
              (line.split(":", 1) for line in f if line.startswith(("VmRSS", "VmHWM")))}
print(json.dumps({"cpu_s": self_usage.ru_utime + self_usage.ru_stime,
                  "rss_mb": memory["VmRSS"], "peak_rss_mb": memory["VmHWM"]}))
