"""JAX and Keras 3: ``jax.distributed.initialize()`` with no arguments finds the coordinator,
the process count and id through tfyarn's cluster detector (tfyarn/jaxcluster.py), which the
``sitecustomize`` of JAX_STARTUP_DIR defines at each process's start; the same numbers are in
``JAX_*`` for scripts that pass them. Keras 3's ``keras.distribution.initialize()`` reads its
three ``KERAS_DISTRIBUTION_*`` variables. On CPU, cross-process collectives use gloo."""

from __future__ import annotations

import os
from collections.abc import Mapping

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.frameworks.base import FrameworkTraits, Words
from appmaster.common.rankenv import group, group_rank
from appmaster.common.vocabulary import Framework, Role

# In the container's dir (the tfyarn package shipped with the job): first on a JAX process's
# PYTHONPATH, its sitecustomize lets jax.distributed.initialize() find tfyarn's cluster
JAX_STARTUP_DIR = "tfyarn/jaxstartup"


def jax_environment(spec: ClusterSpec, role: str, index: int, *, generation: int,
                    max_restarts: int, run_id: str, environ: Mapping[str, str],
                    local_rank: int, local_world_size: int) -> dict[str, str]:
    addresses = group(spec)
    rank = group_rank(spec, role, index) * local_world_size + local_rank
    world = len(addresses) * local_world_size
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


JAX = FrameworkTraits(
    word=Framework.JAX, title="JAX", package="jax", ranks=True,
    words=Words(cluster="process group", checkpoint="snapshot", task="rank", chief="rank 0",
                step="step"),
    flex_roles=(Role.WORKER,), environment=jax_environment)
