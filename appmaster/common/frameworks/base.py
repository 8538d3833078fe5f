"""What a framework's module declares (tensorflow.py, pytorch.py, jax.py): the one place where
tfyarn differs by framework. The job files' checks (tfyarn/jobconfig), the plan's own
validation (appmaster/common/jobplan.py), the model's failure rules, the agent and the views
ask it; none of them names a framework.

Adding a framework is one module declaring a :class:`FrameworkTraits` (its environment
contract as a function) and its line in ``__init__.py`` (docs/guide/frameworks.md, "Adding a
framework").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.settings import FRAMEWORK, GPUS, INSTANCES, PROCESSES, Setting
from appmaster.common.vocabulary import Framework, Role

# the roles of one process group: its ranks, the chief (else worker 0) rank 0
GROUP_ROLES = (Role.CHIEFWORKER, Role.WORKER)
SIDE_ROLES = (Role.TENSORBOARD, Role.EVALUATOR)  # containers beside the training cluster
GROUPLESS_ROLES = (Role.PS, Role.EVALUATOR)  # no place beside a group of ranks


class Component(Protocol):
    """A role as the checks see it (jobplan.RolePlan)."""

    name: str
    instances: int
    processes: int


# (spec, role, index, generation, max_restarts, run_id, environ, local_rank, local_world_size)
Environment = Callable[..., dict[str, str]]


@dataclass(frozen=True)
class Words:
    """How a job of this framework is spoken of in status, the page, the report, flex and the
    dry run."""

    cluster: str  # "TensorFlow cluster", "process group"
    checkpoint: str  # "checkpoint", "snapshot"
    task: str  # what one task of the group is: "task", "rank"
    chief: str  # "the chief", "rank 0"
    step: str  # what training counts its steps by: "global step", "step"

    @property
    def chief_label(self) -> str:
        """The chief's word as a label: "chief", "rank 0"."""
        return self.chief.removeprefix("the ")

    @property
    def chief_first(self) -> str:
        """The chief's word at a sentence's start: "The chief", "Rank 0"."""
        return self.chief[:1].upper() + self.chief[1:]


@dataclass(frozen=True)
class Misfit:
    """A job's roles that its framework has no place for: the user's Problem (the file's
    key, the fix) and the plan's SpecError, from one rule."""

    role: str
    setting: Setting
    message: str
    fix: str
    value: str


def world_size_text(containers: int, processes: int) -> str:
    """A group's ranks in all: "4 ranks (2 containers x 2 processes)"."""
    ranks = containers * processes
    return (f"{ranks} rank{'s' * (ranks != 1)} ({containers} container"
            f"{'s' * (containers != 1)} x {processes} process{'es' * (processes != 1)})")


def processes_misfit(role: str, processes: int, gpus: int) -> Misfit | None:
    """A role's processes per container that cannot be, whatever the framework: several
    outside a group's roles, or more than its GPUs can be shared by evenly."""
    if processes > 1 and role not in GROUP_ROLES:
        return Misfit(role, PROCESSES, f"a {role} runs one process per container",
                      'remove it (or give "1"); it is for the chiefworker and workers of a '
                      'PyTorch or JAX job (if written in "global", write it in those components '
                      "instead).", str(processes))
    if processes > 0 and gpus % processes:
        return Misfit(role, PROCESSES,
                      f"{gpus} GPUs per container ({GPUS.key}) cannot be shared evenly by "
                      f"{processes} processes: each process gets {GPUS.key} / {PROCESSES.key} "
                      "GPUs", f'give a number that divides {gpus}, e.g. "{gpus}" (one GPU each), '
                      f'or change "{GPUS.key}".', str(processes))
    return None


@dataclass(frozen=True)
class FrameworkTraits:
    word: Framework  # site.global.framework's value
    title: str  # "TensorFlow", "PyTorch", "JAX"
    # the distribution (import name) the shipped env must have when the job names it; None:
    # its scripts say so by importing it (tfyarn/submission/frameworks.py)
    package: str | None
    # Its tasks are the ranks of one process group: no ps or evaluator beside them, several
    # processes per container allowed, any rank's failure restarts every rank, the cluster
    # is in each process's environment (``environment``), not in flags, and its snapshots
    # are the script's own files (every file of the work dir restored).
    ranks: bool
    words: Words
    flex_roles: tuple[str, ...]  # the roles whose count `tfyarn flex` may change
    environment: Environment | None = None  # a rank's variables (ranks only)
    # where training steps come from besides tfyarn.progress (the stall watchdog's signal)
    steps_also_from: str = ""
    # the flag its scripts are told their work dir in where the job names none
    # (site.global.user.scripts.work_dir_flag); "": in TFYARN_WORK_DIR only
    work_dir_flag: str = ""

    @property
    def replaces_workers_alone(self) -> bool:
        """A failed plain worker gets a new container and the others train on (TensorFlow);
        a group cannot go on with a rank missing."""
        return not self.ranks

    def misfits(self, components: Sequence[Component]) -> list[Misfit]:
        """Every role of the job this framework has no place for; none: the job fits."""
        found: list[Misfit] = []
        group = {c.name: c.processes for c in components
                 if c.name in GROUP_ROLES and c.instances > 0}
        for component in components:
            if self.ranks and component.name in GROUPLESS_ROLES and component.instances > 0:
                found.append(Misfit(
                    component.name, INSTANCES,
                    f'a {component.name} has no place in a job whose "{FRAMEWORK.key}" is '
                    f'"{self.word}": its tasks are the ranks of one process group',
                    f'remove the "{component.name}" component (or set its instances to "0"): '
                    "chiefworker and workers are the ranks, the chief (else worker 0) rank 0; "
                    "evaluate in the script, on rank 0.", str(component.instances)))
        several = [name for name, processes in group.items() if processes > 1]
        if several and not self.ranks:
            found.append(Misfit(
                several[0], PROCESSES,
                f'{self.title} runs one process per task ("{FRAMEWORK.key}" is "{self.word}")',
                f'remove it (here or in "global", or give "1") and raise "{INSTANCES.key}" '
                "instead; several processes per container are for a group of ranks "
                '("pytorch", "jax").', str(group[several[0]])))
        elif len(set(group.values())) > 1:
            found.append(Misfit(
                Role.WORKER, PROCESSES,
                f"the chiefworker runs {group[Role.CHIEFWORKER]} processes per container and "
                f"each worker {group[Role.WORKER]}: every container of the group runs as many",
                f'give the chiefworker and the workers the same "{PROCESSES.key}" (or write '
                'it once, in "global").', str(group[Role.WORKER])))
        return found

    def process_environment(self, spec: ClusterSpec, role: str, index: int, *,
                            generation: int, max_restarts: int, run_id: str,
                            environ: Mapping[str, str], local_rank: int = 0,
                            local_world_size: int = 1) -> dict[str, str]:
        """The variables one process of task ``role``/``index`` gets besides tfyarn's own;
        ``environ``: the container's, whose values of the tunable ones win. None for a
        framework whose cluster is in flags and TF_CONFIG."""
        if not 0 <= local_rank < local_world_size:
            raise ValueError(f"local rank {local_rank} of {local_world_size} processes")
        if self.environment is None:
            return {}
        return self.environment(spec, role, index, generation=generation,
                                max_restarts=max_restarts, run_id=run_id, environ=environ,
                                local_rank=local_rank, local_world_size=local_world_size)
