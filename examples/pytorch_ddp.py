#!/usr/bin/env python
"""PyTorch DistributedDataParallel, written as PyTorch's multi-node DDP tutorial writes it.

Runs unchanged under ``torchrun`` on one machine::

    torchrun --standalone --nproc_per_node=2 examples/pytorch_ddp.py --epochs 5

and on YARN with ``site.global.framework: pytorch`` (examples/pytorch_ddp/): tfyarn gives
every rank torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK,
TORCHELASTIC_RESTART_COUNT...). Rank 0 saves a snapshot (model, optimizer, epoch) into the
work dir after every epoch; every rank loads it at its start, so a restarted group goes on
from the last epoch. The work dir is TFYARN_WORK_DIR under tfyarn (mirrored to HDFS, and
restored into every rank of a new group), else --snapshot_dir. gloo on CPU, nccl on GPUs.
Rank 0 writes ``result.json`` at the end. Each rank writes its step, as each step begins,
into the file TFYARN_PROGRESS_FILE names (tfyarn's stall watchdog reads it; a torchrun script
need not import tfyarn). When YARN announces it will take back a container of the group
(preemption: the file TFYARN_PREEMPTION_NOTICE_FILE names appears in that rank's container and
in rank 0's), rank 0 saves a snapshot after the step it is on, once, and trains on until the
group breaks; the new group goes on from that step. ``--stall_at STEP --stall_rank R``: rank
R stops after that step in the group's first run and sleeps, as a rank stuck on its data
would.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F  # noqa: N812 (PyTorch's own spelling)
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: N817
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def ddp_setup() -> torch.device:
    """The process group from torchrun's environment (env://); this rank's device."""
    if torch.cuda.is_available():
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group(backend="nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group(backend="gloo")
    return torch.device("cpu")


def report_step(step: int) -> None:
    """The step into tfyarn's progress file, whole (written aside, renamed); outside tfyarn,
    nothing."""
    path = os.environ.get("TFYARN_PROGRESS_FILE")
    if path:
        Path(f"{path}.tmp").write_text(f"{step}\n")
        os.replace(f"{path}.tmp", path)


def notice_received() -> bool:
    """Whether YARN announced a preemption (tfyarn's notice file exists); outside tfyarn,
    never. One stat: cheap enough for every step."""
    path = os.environ.get("TFYARN_PREEMPTION_NOTICE_FILE")
    return bool(path) and os.path.exists(path)


def dataset(size: int = 2048) -> TensorDataset:
    """A fixed synthetic regression: y = x · w + noise (every rank makes the same one)."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(size, 20, generator=generator)
    w = torch.randn(20, 1, generator=generator)
    return TensorDataset(x, x @ w + 0.01 * torch.randn(size, 1, generator=generator))


class Trainer:
    def __init__(self, model: torch.nn.Module, data: DataLoader,
                 optimizer: torch.optim.Optimizer, device: torch.device, snapshot: Path,
                 step_sleep: float, stall_at: int | None = None) -> None:
        self.rank = int(os.environ["RANK"])
        self.device = device
        self.model = model.to(device)
        self.data, self.optimizer = data, optimizer
        self.snapshot, self.step_sleep, self.stall_at = snapshot, step_sleep, stall_at
        self.epochs_run = 0
        self.batches_run = 0  # of epoch epochs_run, where a snapshot was saved mid-epoch
        self.saved_on_notice = False
        if snapshot.exists():
            self._load_snapshot()
        self.model = DDP(self.model, device_ids=[device.index] if device.type == "cuda" else None)

    def _load_snapshot(self) -> None:
        state = torch.load(self.snapshot, map_location=self.device)
        self.model.load_state_dict(state["MODEL_STATE"])
        self.optimizer.load_state_dict(state["OPTIMIZER_STATE"])
        self.epochs_run = state["EPOCHS_RUN"]
        self.batches_run = state.get("BATCHES_RUN", 0)
        print(f"rank {self.rank}: resuming from the snapshot at epoch {self.epochs_run}, "
              f"step {self.first_step}", flush=True)

    @property
    def first_step(self) -> int:
        return self.epochs_run * len(self.data) + self.batches_run

    def _save_snapshot(self, epoch: int, batches: int = 0) -> None:
        state = {"MODEL_STATE": self.model.module.state_dict(),
                 "OPTIMIZER_STATE": self.optimizer.state_dict(), "EPOCHS_RUN": epoch,
                 "BATCHES_RUN": batches}
        partial = self.snapshot.with_name(self.snapshot.name + ".tmp")
        torch.save(state, partial)
        partial.replace(self.snapshot)  # never a half-written snapshot
        print(f"epoch {epoch}, batch {batches}: snapshot saved at {self.snapshot}", flush=True)

    def _run_epoch(self, epoch: int, skip: int = 0) -> float:
        """One epoch, but its first ``skip`` batches (done before a mid-epoch snapshot: the
        sampler's order is the same for the same epoch)."""
        assert isinstance(self.data.sampler, DistributedSampler)
        self.data.sampler.set_epoch(epoch)
        total, done = 0.0, 0
        for batch, (source, targets) in enumerate(self.data, start=1):
            if batch <= skip:
                continue
            step = epoch * len(self.data) + batch
            report_step(step)
            source, targets = source.to(self.device), targets.to(self.device)
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(source), targets)
            loss.backward()
            self.optimizer.step()
            total, done = total + loss.item(), done + 1
            time.sleep(self.step_sleep)
            if self.rank == 0 and not self.saved_on_notice and notice_received():
                self._save_snapshot(epoch, batch)  # the new group goes on after this step
                print(f"preemption notice: snapshot saved after step {step}", flush=True)
                self.saved_on_notice = True
            if step == self.stall_at:
                print(f"rank {self.rank}: stalling after step {step} at {time.time()}",
                      flush=True)
                time.sleep(3600)
        return total / max(1, done)

    def train(self, max_epochs: int) -> float:
        loss = float("nan")
        for epoch in range(self.epochs_run, max_epochs):
            loss = self._run_epoch(epoch, self.batches_run if epoch == self.epochs_run else 0)
            print(f"rank {self.rank} epoch {epoch + 1}: loss {loss:.4f}", flush=True)
            if self.rank == 0:
                self._save_snapshot(epoch + 1)
        return loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--snapshot_dir", default=os.environ.get("TFYARN_WORK_DIR", "."))
    parser.add_argument("--step_sleep", type=float, default=0.0, help="seconds per step")
    parser.add_argument("--stall_at", type=int, default=None,
                        help="in the group's first run, rank --stall_rank sleeps after this step")
    parser.add_argument("--stall_rank", type=int, default=1)
    args = parser.parse_args()
    device = ddp_setup()
    restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} (master "
          f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}, restart {restarts})",
          flush=True)
    data = dataset()
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False,
                        sampler=DistributedSampler(data))
    snapshot = Path(args.snapshot_dir) / "snapshot.pt"
    stalls = restarts == 0 and int(os.environ["RANK"]) == args.stall_rank
    trainer = Trainer(model, loader, optimizer, device, snapshot, args.step_sleep,
                      args.stall_at if stalls else None)
    first_epoch, first_step = trainer.epochs_run, trainer.first_step
    loss = trainer.train(args.epochs)
    if trainer.rank == 0:
        result = {"epochs": args.epochs, "first_epoch": first_epoch, "first_step": first_step,
                  "loss": loss,
                  "world_size": dist.get_world_size(), "restart_count": restarts}
        (Path(args.snapshot_dir) / "result.json").write_text(json.dumps(result))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
