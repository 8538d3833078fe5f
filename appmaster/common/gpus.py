"""Which GPUs a task may use, found with `nvidia-smi` in its own container.

YARN counts GPUs (``yarn.io/gpu``) but isolates them only where the NodeManager runs the
LinuxContainerExecutor with cgroups (or Docker with the NVIDIA runtime). Elsewhere every
container sees every GPU of its node, and two tasks that each asked for one would both start
on GPU 0 (TensorFlow also takes memory on every GPU it can see). So the agent asks
`nvidia-smi` which GPUs its container sees and takes G of them for the task, G being what the
task's role asked YARN for:

- a container that sees exactly G GPUs (YARN isolated them, or they are the whole node's)
  uses them all;
- a container that sees more takes the first G that no other live task on the node holds.
  A task holds a GPU by an exclusive lock (flock) on a file named after its UUID in a
  directory every container of the node shares (/tmp/tfyarn-gpus). The kernel drops the lock
  when the agent ends, however it ends, so a replacement task gets what its predecessor
  freed, and tasks of other tfyarn jobs on the node are kept off it too.

The task is told through ``CUDA_VISIBLE_DEVICES`` (nvidia-smi's indices, with
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so that CUDA numbers the GPUs as nvidia-smi does); a task that
asked for no GPU gets ``CUDA_VISIBLE_DEVICES=""``, which hides every GPU. When nvidia-smi is
missing or fails for a task that asked for GPUs, nothing is guessed: the task fails and says
why (GpuError).

Standard library only: this runs in every task container.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from appmaster.common.settings import GPUS

QUERY_FIELDS = ("index", "uuid", "name", "memory.total", "pci.bus_id")
QUERY_COMMAND = ("nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}",
                 "--format=csv,noheader,nounits")
QUERY_TIMEOUT_S = 30.0
# The agent's exit code when the GPUs a task asked for cannot be found or held.
GPU_FAILED_EXIT = 73
LOCK_DIR = os.environ.get("TFYARN_GPU_LOCK_DIR", "/tmp/tfyarn-gpus")
HOLD_WAIT_S = 60.0  # a predecessor's agent may still be ending when its replacement starts


class GpuError(RuntimeError):
    """The task's GPUs cannot be known or held; the message says why and what to check."""


@dataclass(frozen=True)
class Gpu:
    index: int  # nvidia-smi's index, as seen in the container
    uuid: str
    name: str
    memory_mib: int
    bus_id: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Gpu:
        return cls(**data)


def _mib(text: str) -> int:
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else 0


def parse_query_csv(text: str) -> list[Gpu]:
    """``nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv``, with or
    without units; with a header line, its columns may come in any order among others."""
    columns = list(QUERY_FIELDS)
    gpus = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if not line.strip():
            continue
        if not cells[0].isdigit():  # the header: where each field is
            columns = [re.sub(r"\s*\[.*\]$", "", cell) for cell in cells]
            continue
        row = dict(zip(columns, cells, strict=False))
        missing = [name for name in QUERY_FIELDS if name not in row]
        if missing:
            raise GpuError(f"cannot read nvidia-smi's line {line.strip()!r}: no "
                           f"{', '.join(missing)}")
        gpus.append(Gpu(int(row["index"]), row["uuid"], row["name"],
                        _mib(row["memory.total"]), row["pci.bus_id"]))
    return sorted(gpus, key=lambda gpu: gpu.index)


def query(runner=subprocess.run, timeout_s: float = QUERY_TIMEOUT_S) -> list[Gpu]:
    """The GPUs this container sees, as nvidia-smi lists them; GpuError when it cannot say."""
    try:
        result = runner(list(QUERY_COMMAND), capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError as exc:
        raise GpuError(
            "nvidia-smi is not on this container's PATH, so which GPUs it may use is unknown "
            f"(PATH={os.environ.get('PATH', '')}). Fix: install the NVIDIA driver's nvidia-smi "
            f"on the node (or in the Docker image), or ask for no GPU ({GPUS.key} 0)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GpuError(f"nvidia-smi gave no answer in {timeout_s:.0f} s") from exc
    except OSError as exc:
        raise GpuError(f"nvidia-smi could not run: {exc}") from exc
    if result.returncode != 0:
        said = (result.stdout + result.stderr).strip()[-500:]
        raise GpuError(f"nvidia-smi failed (exit code {result.returncode}): {said}")
    return parse_query_csv(result.stdout)


@dataclass
class GpuHold:
    """The GPUs a task holds for its life, by a lock on each (released when the agent ends)."""

    wanted: int
    gpus: list[Gpu] = field(default_factory=list)
    seen: int = 0  # how many GPUs the container saw
    _files: list = field(default_factory=list, repr=False)

    @property
    def isolated(self) -> bool:
        """The container sees only its own GPUs (YARN isolated them, or the node has no more)."""
        return self.wanted > 0 and self.seen == self.wanted

    def environment(self) -> dict[str, str]:
        env = {"CUDA_VISIBLE_DEVICES": ",".join(str(gpu.index) for gpu in self.gpus)}
        if self.gpus:
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA's numbering = nvidia-smi's
        return env

    def process_environment(self, local_rank: int, processes: int) -> dict[str, str]:
        """What process ``local_rank`` of the container's ``processes`` is told: the
        ``local_rank``-th contiguous share of the held GPUs (torchrun's one per process)."""
        share = len(self.gpus) // processes
        own = GpuHold(share, self.gpus[local_rank * share:(local_rank + 1) * share], self.seen)
        return own.environment()

    def summary(self) -> dict:
        """What `tfyarn status` and the job page show."""
        return {"wanted": self.wanted, "seen": self.seen, "isolated": self.isolated,
                "visible": self.environment()["CUDA_VISIBLE_DEVICES"],
                "devices": [gpu.to_dict() for gpu in self.gpus]}

    def release(self) -> None:
        for handle in self._files:
            handle.close()
        self._files.clear()


def _try_lock(lock_dir: Path, gpu: Gpu):
    path = lock_dir / re.sub(r"[^A-Za-z0-9_.-]", "_", gpu.uuid or f"index-{gpu.index}")
    handle = open(path, "a+")  # noqa: SIM115 - held open for the task's life
    with contextlib.suppress(OSError):
        os.chmod(path, 0o666)  # any user's tasks may lock it
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.environ.get('CONTAINER_ID', '')} pid {os.getpid()}\n")
    handle.flush()
    return handle


def hold(wanted: int, seen: list[Gpu], lock_dir: str | Path = LOCK_DIR,
         wait_s: float = HOLD_WAIT_S, log=None) -> GpuHold:
    """Lock ``wanted`` of the ``seen`` GPUs; waits up to ``wait_s`` for ones still held."""
    result = GpuHold(wanted, seen=len(seen))
    if wanted <= 0:
        return result
    if len(seen) < wanted:
        raise GpuError(f"the task asked for {wanted} GPU(s), but nvidia-smi in its container "
                       f"lists {len(seen)}: {', '.join(g.uuid for g in seen) or 'none'}")
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        lock_dir.chmod(0o1777)
    deadline = time.monotonic() + wait_s
    while True:
        held_elsewhere = set()
        for gpu in sorted(seen, key=lambda g: g.index):
            if len(result.gpus) == wanted:
                break
            handle = _try_lock(lock_dir, gpu)
            if handle is None:
                held_elsewhere.add(gpu.uuid)
                continue
            result._files.append(handle)
            result.gpus.append(gpu)
        if len(result.gpus) == wanted:
            return result
        if time.monotonic() > deadline:
            result.release()
            raise GpuError(
                f"the task asked for {wanted} GPU(s); of the {len(seen)} its container sees, "
                f"{len(held_elsewhere)} stayed held by other tasks on this node for "
                f"{wait_s:.0f} s ({lock_dir}). YARN counted them free: a task outside YARN's "
                "count, or another launcher, uses them")
        if log is not None:
            log.info("waiting for GPU(s) still held by another task: %s",
                     ", ".join(sorted(held_elsewhere)))
        time.sleep(0.5)


def take(wanted: int, log=None, lock_dir: str | Path = LOCK_DIR,
         wait_s: float = HOLD_WAIT_S, runner=subprocess.run) -> GpuHold:
    """The task's GPUs: none for ``wanted`` 0 (no nvidia-smi needed), else nvidia-smi, then
    ``wanted`` of what it lists, held. GpuError when that cannot be done."""
    if wanted <= 0:
        return GpuHold(0)
    seen = query(runner)
    result = hold(wanted, seen, lock_dir, wait_s, log)
    if log is not None:
        log.info("GPUs: %d of %d seen (%s): %s", wanted, len(seen),
                 "only its own" if result.isolated else "the node's, held by lock",
                 "; ".join(f"{g.index} {g.uuid} {g.name} {g.memory_mib} MiB"
                           for g in result.gpus))
    return result


# ---------------------------------------------------------------- how the GPUs are shown

def worth_showing(summary: dict | None) -> bool:
    """Whether a task's GPUs deserve a column: it holds some, or could not have them."""
    return bool(summary) and bool(summary.get("devices") or summary.get("error"))


def short_text(summary: dict | None) -> str:
    """A task's GPUs in a table cell: nvidia-smi's indices, "none", or "error"."""
    if not summary:
        return "-"
    if summary.get("error"):
        return "error"
    return summary.get("visible") or "none"


def device_text(device: dict) -> str:
    return (f"GPU {device['index']}: {device['name']}, {device['memory_mib']} MiB, "
            f"{device['uuid']}")


def page_text(summary: dict | None) -> str:
    """A task's GPUs on the job page: each one's index, model, memory and UUID."""
    if not summary:
        return ""
    if summary.get("error"):
        return f"failed: {summary['error']}"
    devices = summary.get("devices") or []
    # The UUID shortened (the whole of it on hover): the table must fit a laptop's screen.
    return "; ".join(f"GPU {d['index']}: {d['name']}, {d['memory_mib']} MiB "
                     f"({d['uuid'][:12]}…)" for d in devices) or "none"
