"""PyTorch: what torchrun (torch 2.15's ``LocalElasticAgent._start_workers``) gives every
process, so that a script written for ``torchrun`` and ``init_process_group("gloo"|"nccl")``
on env:// runs as it is. tfyarn runs no agent store: rank 0's process hosts it on the port
its agent holds (MASTER_PORT)."""

from __future__ import annotations

from collections.abc import Mapping

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.frameworks.base import FrameworkTraits, Words
from appmaster.common.rankenv import group, group_rank
from appmaster.common.vocabulary import Framework, Role

TORCHRUN_ROLE = "default"  # torchrun's --role when none is given


def torchrun_environment(spec: ClusterSpec, role: str, index: int, *, generation: int,
                         max_restarts: int, run_id: str, environ: Mapping[str, str],
                         local_rank: int, local_world_size: int) -> dict[str, str]:
    addresses = group(spec)
    node = group_rank(spec, role, index)
    rank, world = node * local_world_size + local_rank, len(addresses) * local_world_size
    host, _, port = addresses[0].rpartition(":")
    env = {
        "MASTER_ADDR": host, "MASTER_PORT": port,
        "RANK": str(rank), "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(local_rank), "LOCAL_WORLD_SIZE": str(local_world_size),
        "GROUP_RANK": str(node), "GROUP_WORLD_SIZE": str(len(addresses)),
        # one role, as torchrun without --role: its ranks are the group's
        "ROLE_NAME": TORCHRUN_ROLE, "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "TORCHELASTIC_RESTART_COUNT": str(generation),
        "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_USE_AGENT_STORE": "False",  # rank 0 hosts the store on MASTER_PORT
        **nccl_watchdog(environ),
    }
    if "OMP_NUM_THREADS" in environ:
        env["OMP_NUM_THREADS"] = environ["OMP_NUM_THREADS"]
    elif local_world_size > 1:  # torchrun's default: processes sharing a node, one thread each
        env["OMP_NUM_THREADS"] = "1"
    return env


def nccl_watchdog(environ: Mapping[str, str]) -> dict[str, str]:
    """PyTorch's NCCL watchdog, for a hung collective to end in minutes and say what it
    waited on, each unless the job's environment sets it (docs/guide/stalls.md): a timed-out
    collective tears the process down (torchrun's 1), a stuck watchdog thread is killed
    after PyTorch's heartbeat timeout, and its flight recorder's last collectives are dumped into
    the container's log dir (`yarn logs` collects them), one file per rank."""
    logs = environ.get("LOG_DIRS", "").split(",")[0]
    defaults = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_NCCL_ENABLE_MONITORING": "1",
                "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
                **({"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": f"{logs}/nccl_trace_rank_"}
                   if logs else {})}
    return {name: environ.get(name, value) for name, value in defaults.items()}


PYTORCH = FrameworkTraits(
    word=Framework.PYTORCH, title="PyTorch", package="torch", ranks=True,
    words=Words(cluster="process group", checkpoint="snapshot", task="rank", chief="rank 0",
                step="step"),
    flex_roles=(Role.WORKER,), environment=torchrun_environment)
