"""``jax.distributed.initialize()`` with no arguments in a tfyarn job, through JAX's own
cluster detection.

JAX finds its coordinator, process count and id by asking each subclass of its
``jax._src.clusters.ClusterEnv`` (Slurm, Open MPI, Kubernetes, Cloud TPU...) whether it is
present; a subclass registers itself by being defined (``__init_subclass__``, jax 0.10.2).
:class:`install` defines tfyarn's the moment JAX imports that module, not before: importing
JAX ahead of the script would read its settings (``JAX_PLATFORMS``, ``XLA_FLAGS``) before the
script sets them. tfyarn's own is asked first: in a tfyarn job, tfyarn launched the process.

It reads what tfyarn gives each process of a JAX job (appmaster/common/frameworks/jax.py):
``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``. Each process's GPUs are
already its own (``CUDA_VISIBLE_DEVICES``): it sees all of them (no local process id).
Shipped with the job and run at every JAX process's start (tfyarn/jaxstartup/sitecustomize.py).
Only the standard library until JAX imports it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

CLUSTERS_MODULE = "jax._src.clusters"
PRESENT_WHEN = ("TFYARN_GENERATION", "JAX_PROCESS_ID")  # a process tfyarn launched for JAX


def is_tfyarn_process() -> bool:
    return all(name in os.environ for name in PRESENT_WHEN)


def define(clusters: ModuleType) -> type:
    """tfyarn's ClusterEnv, first among JAX's detectors."""

    class TfyarnCluster(clusters.ClusterEnv):
        name = "tfyarn"

        @classmethod
        def is_env_present(cls) -> bool:
            return is_tfyarn_process()

        @classmethod
        def get_coordinator_address(cls, timeout_secs: int | None = None,
                                    override_coordinator_port: str | None = None) -> str:
            address = os.environ["JAX_COORDINATOR_ADDRESS"]
            if override_coordinator_port:
                address = f"{address.rpartition(':')[0]}:{override_coordinator_port}"
            return address

        @classmethod
        def get_process_count(cls) -> int:
            return int(os.environ["JAX_NUM_PROCESSES"])

        @classmethod
        def get_process_id(cls) -> int:
            return int(os.environ["JAX_PROCESS_ID"])

        @classmethod
        def get_local_process_id(cls) -> int | None:
            return None  # CUDA_VISIBLE_DEVICES already gives the process its own GPUs

    kinds = clusters.ClusterEnv._cluster_types
    kinds.insert(0, kinds.pop(kinds.index(TfyarnCluster)))
    return TfyarnCluster


class _WhenJaxImportsClusters(MetaPathFinder):
    """Finds JAX's clusters module as Python would, and defines tfyarn's detector right after
    the module runs."""

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if name != CLUSTERS_MODULE:
            return None
        sys.meta_path.remove(self)  # once, and not asked again by the lookup below
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            define(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """In a process tfyarn launched for JAX: tfyarn's detector, once JAX loads its own."""
    if not is_tfyarn_process():
        return
    if CLUSTERS_MODULE in sys.modules:  # JAX came first (a sitecustomize of the env's)
        define(sys.modules[CLUSTERS_MODULE])
    elif not any(isinstance(f, _WhenJaxImportsClusters) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenJaxImportsClusters())
