"""On a machine with an NVIDIA GPU and PyTorch (no YARN needed): the agent's own process
group (appmaster/agent/processgroup.py) with the GPUs the agent holds (appmaster/common/gpus.py,
the real nvidia-smi) and each process's rank environment (appmaster/common/frameworks/pytorch.py).

- yarn.gpus=1, one process: the process sees exactly its GPU (torch.cuda.device_count() 1)
  and a one-rank nccl group all-reduces on it;
- no GPUs, two processes (yarn.processes.per.container=2): each sees none and the two
  all-reduce over gloo.

Prints what each process saw and the seconds each took; writes them as JSON to the
directory given (``python -m bench.gpu_processes OUT``). Nothing asserted here: read the
figures.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

from appmaster.agent.processgroup import ProcessGroup
from appmaster.common import gpus
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.frameworks.pytorch import PYTORCH

CHILD = r"""
import json, os, time
import torch, torch.distributed as dist
started = time.monotonic()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
seen = torch.cuda.device_count()
backend = "nccl" if seen else "gloo"
device = torch.device("cuda:0") if seen else torch.device("cpu")
dist.init_process_group(backend)
x = torch.ones(2, device=device) * (rank + 1)
dist.all_reduce(x)
dist.destroy_process_group()
said = {"rank": rank, "local_rank": int(os.environ["LOCAL_RANK"]), "world": world,
        "CUDA_VISIBLE_DEVICES": os.environ["CUDA_VISIBLE_DEVICES"], "cuda_devices": seen,
        "device_name": torch.cuda.get_device_name(0) if seen else "", "backend": backend,
        "all_reduce": x.tolist(), "seconds": round(time.monotonic() - started, 2)}
try:
    import jax
    said["jax_devices"] = [str(d) for d in jax.devices()]
except Exception as exc:  # JAX is optional here
    said["jax_devices"] = f"no jax: {exc}"
print(json.dumps(said), flush=True)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_case(name: str, wanted_gpus: int, processes: int, logs: Path) -> dict:
    """One container's processes as the agent starts them: its GPUs held, each process
    its rank and its share."""
    started = time.monotonic()
    held = gpus.take(wanted_gpus, lock_dir=logs / "locks")
    spec = ClusterSpec(chief=(f"127.0.0.1:{free_port()}",), workers=())
    envs = [{**os.environ, "PYTHONUNBUFFERED": "1",
             **PYTORCH.process_environment(spec, "chiefworker", 0, generation=0,
                                           max_restarts=0, run_id=name, environ=os.environ,
                                           local_rank=i, local_world_size=processes),
             **held.process_environment(i, processes)} for i in range(processes)]
    end = ProcessGroup([sys.executable, "-c", CHILD], envs, name, logs).wait()
    said = []
    for i in range(processes):
        stem = name if i == 0 else f"{name}.local{i}"
        lines = (logs / f"{stem}.stdout").read_text().splitlines()
        said.append(json.loads(lines[-1]) if lines else None)
    return {"case": name, "gpus": wanted_gpus, "processes": processes, "exit_code": end.code,
            "held": held.summary(), "processes_said": said, "tail": end.tail if end.code else "",
            "seconds": round(time.monotonic() - started, 2)}


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        logs = Path(scratch)
        results = [run_case("one-gpu-one-process", 1, 1, logs),
                   run_case("no-gpu-two-processes", 0, 2, logs)]
    for result in results:
        print(json.dumps(result, indent=1))
    (out / "gpu_processes.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
