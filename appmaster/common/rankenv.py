"""A PyTorch or JAX job's group: its tasks are the ranks of one group, in the order of
TensorFlow's worker list: the chief (else worker 0) first, rank 0, whose exported
``host:port`` (the port its agent holds for it) is where the group meets (torch.distributed's
store, JAX's coordinator). Each framework's variables are in its module
(appmaster/common/frameworks/). Several processes per container (torchrun's
``--nproc_per_node``) are counted by ``local_world_size``, each process its ``local_rank``.
Only the standard library: agents import it.
"""

from __future__ import annotations

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.vocabulary import Role


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
