"""The rendezvous' cluster as a PyTorch or JAX process reads it: its environment.

TensorFlow's tasks get flags and TF_CONFIG (cluster_spec.py). A PyTorch or JAX job's tasks are
the ranks of one group, in the order of TensorFlow's worker list: the chief (else worker 0)
first, rank 0, whose exported ``host:port`` (the port its agent holds for it) is where the
group meets: torch.distributed's store, JAX's coordinator.

- PyTorch: what torchrun (torch 2.15's ``LocalElasticAgent._start_workers``) gives every
  process, so that a script written for ``torchrun`` and ``init_process_group("gloo"|"nccl")``
  on env:// runs as it is. tfyarn runs no agent store: rank 0's process hosts it.
- JAX: ``jax.distributed.initialize()`` (jax 0.10.2) reads the coordinator from
  ``JAX_COORDINATOR_ADDRESS`` but the process count and id only from Slurm, Open MPI,
  Kubernetes or Cloud TPU, none of which tfyarn pretends to be: they are in
  ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` for the script to pass. Keras 3's
  ``keras.distribution.initialize()`` reads its three ``KERAS_DISTRIBUTION_*`` variables with
  no arguments. On CPU, cross-process collectives use gloo.

Several processes per container (torchrun's ``--nproc_per_node``) are counted by
``local_world_size``, each process its ``local_rank``. Only the standard library: agents
import it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.vocabulary import Framework, Role

TORCHRUN_ROLE = "default"  # torchrun's --role when none is given
# In the container's dir (the tfyarn package shipped with the job): first on a JAX process's
# PYTHONPATH, its sitecustomize lets jax.distributed.initialize() find tfyarn's cluster
# (tfyarn/jaxcluster.py)
JAX_STARTUP_DIR = "tfyarn/jaxstartup"


def group(spec: ClusterSpec) -> tuple[str, ...]:
    """The group's tasks' addresses in rank order: the chief, then the workers."""
    return spec.chief + spec.workers


def group_rank(spec: ClusterSpec, role: str, index: int) -> int:
    """The task's place in the group (torchrun's node rank)."""
    if role == Role.CHIEFWORKER:
        return index
    if role == Role.WORKER:
        return len(spec.chief) + index
    raise ValueError(f"a {role} is no rank of a process group")


def process_environment(framework: str, spec: ClusterSpec, role: str, index: int, *,
                        generation: int, max_restarts: int, run_id: str,
                        environ: Mapping[str, str], local_rank: int = 0,
                        local_world_size: int = 1) -> dict[str, str]:
    """The variables one process of task ``role``/``index`` gets besides tfyarn's own;
    ``environ``: the container's, whose values of the tunable ones (threads, collectives,
    Keras' backend) win. A TensorFlow task gets none here (its TF_CONFIG is elsewhere)."""
    if not 0 <= local_rank < local_world_size:
        raise ValueError(f"local rank {local_rank} of {local_world_size} processes")
    if framework == Framework.TENSORFLOW:
        return {}
    addresses = group(spec)
    node = group_rank(spec, role, index)
    rank, world = node * local_world_size + local_rank, len(addresses) * local_world_size
    if framework == Framework.PYTORCH:
        return _torchrun(addresses[0], rank, world, node, len(addresses), local_rank,
                         local_world_size, generation, max_restarts, run_id, environ)
    if framework == Framework.JAX:
        return _jax(addresses, rank, world, local_world_size, environ)
    raise ValueError(f"unknown framework {framework!r}")


def _torchrun(master: str, rank: int, world: int, node: int, nodes: int, local_rank: int,
              local_world_size: int, generation: int, max_restarts: int, run_id: str,
              environ: Mapping[str, str]) -> dict[str, str]:
    host, _, port = master.rpartition(":")
    env = {
        "MASTER_ADDR": host, "MASTER_PORT": port,
        "RANK": str(rank), "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(local_rank), "LOCAL_WORLD_SIZE": str(local_world_size),
        "GROUP_RANK": str(node), "GROUP_WORLD_SIZE": str(nodes),
        # one role, as torchrun without --role: its ranks are the group's
        "ROLE_NAME": TORCHRUN_ROLE, "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "TORCHELASTIC_RESTART_COUNT": str(generation),
        "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_USE_AGENT_STORE": "False",  # rank 0 hosts the store on MASTER_PORT
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
    }
    if "OMP_NUM_THREADS" in environ:
        env["OMP_NUM_THREADS"] = environ["OMP_NUM_THREADS"]
    elif local_world_size > 1:  # torchrun's default: processes sharing a node, one thread each
        env["OMP_NUM_THREADS"] = "1"
    return env


def _jax(addresses: tuple[str, ...], rank: int, world: int, local_world_size: int,
         environ: Mapping[str, str]) -> dict[str, str]:
    coordinator = addresses[0]
    startup = os.path.abspath(JAX_STARTUP_DIR)
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, (startup, environ.get("PYTHONPATH")))),
        "JAX_COORDINATOR_ADDRESS": coordinator,
        "JAX_NUM_PROCESSES": str(world),
        "JAX_PROCESS_ID": str(rank),
        # Keras takes the first address as the coordinator and wants one per process, or
        # the coordinator's alone
        "KERAS_DISTRIBUTION_JOB_ADDRESSES": (
            ",".join(addresses) if local_world_size == 1 else coordinator),
        "KERAS_DISTRIBUTION_NUM_PROCESSES": str(world),
        "KERAS_DISTRIBUTION_PROCESS_ID": str(rank),
        "KERAS_BACKEND": environ.get("KERAS_BACKEND", "jax"),
        "JAX_CPU_COLLECTIVES_IMPLEMENTATION": environ.get(
            "JAX_CPU_COLLECTIVES_IMPLEMENTATION", "gloo"),
    }
