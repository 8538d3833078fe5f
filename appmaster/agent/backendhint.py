"""A PyTorch script that asked for nccl in a container without GPUs, found in its stderr:
what to do. torch says ``nccl2 requires at least one CUDA device`` (2.15) or
``ProcessGroupNCCL is only supported with GPUs, no GPUs found!`` (earlier releases). Only the
standard library here: it runs in the containers."""

from __future__ import annotations

from appmaster.common.settings import GPUS

NO_GPU_SIGNS = ("nccl2 requires at least one CUDA device",
                "ProcessGroupNCCL is only supported with GPUs")


def nccl_without_gpus_hint(stderr: str, gpus: int) -> str:
    """The fix when the script's process group needs GPUs its role did not ask for; "" else."""
    if gpus or not any(sign in stderr for sign in NO_GPU_SIGNS):
        return ""
    return ("tfyarn: the script asked torch.distributed for the nccl backend, which needs "
            f'GPUs, and its role has none ("{GPUS.key}" 0): use gloo on CPU nodes '
            '(init_process_group("nccl" if torch.cuda.is_available() else "gloo")), or give '
            f'the role GPUs ("{GPUS.key}": "1") and a label of nodes that have them.')
