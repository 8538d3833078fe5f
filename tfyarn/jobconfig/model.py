"""What a job's two files say, once checked: components, app settings, problems."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appmaster.common.jobplan import RolePlan
from appmaster.common.settings import (
    APPMASTER_COMPONENT,
    FAILURE_POLICIES,
    FAILURE_THRESHOLD_MEANING,
    SUCCESS_POLICIES,
    default,
)
from appmaster.common.vocabulary import TF_ROLES, Role
from tfyarn.errors import TfyarnError

APPMASTER = APPMASTER_COMPONENT
TASK_KINDS = TF_ROLES  # without a chiefworker, worker 0 is the chief
TENSORBOARD = Role.TENSORBOARD
EVALUATOR = Role.EVALUATOR
COMPONENT_NAMES = (APPMASTER, *TASK_KINDS, EVALUATOR, TENSORBOARD)

__all__ = ["FAILURE_POLICIES", "FAILURE_THRESHOLD_MEANING", "SUCCESS_POLICIES"]  # declared


# Where a setting came from, weakest first.
BUILT_IN, CLUSTER, PERSONAL, JOB_FILE = "default", "cluster", "personal", "job file"


@dataclass(frozen=True)
class Source:
    """Where a setting came from: a file, of a level, or tfyarn itself (BUILT_IN)."""

    level: str
    path: str | None = None

    def __str__(self) -> str:
        return self.level if self.path is None else f"{self.path} ({self.level})"


# A setting's value and where it came from, keyed as in a defaults file (a component's own
# as <component>.<key>): what `tfyarn config` shows.
SettingValue = tuple[Any, Source]


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a job file, with the change that fixes it."""

    file: str  # the path as the user gave it
    key: str | None  # where in the document, e.g. components.worker."yarn.memory"; None: whole file
    value: str | None  # the offending value as JSON text; None when there is none to show
    message: str
    fix: str

    def __str__(self) -> str:
        head = self.file if self.key is None else f"{self.file}: {self.key}"
        if self.value is not None:
            head += f" = {self.value}"
        return f"{head}: {self.message}. Fix: {self.fix}"


def describe_problems(problems: Sequence[Problem]) -> str:
    """Every problem on a line of its own."""
    return "\n".join(str(p) for p in problems)


@dataclass(frozen=True)
class DataEntry:
    """One entry of site.global.data (or --data): hdfs:///path#name (jobconfig/datasets.py)."""

    url: str  # hdfs://… or viewfs://…, without the #name
    name: str  # where it appears in the task's data dir
    archive: bool  # YARN unpacks it into a directory called name

    def __str__(self) -> str:
        return f"{self.url}#{self.name}"


class JobConfigError(TfyarnError, ValueError):
    """The job files have problems; `problems` lists all of them."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(describe_problems(self.problems))


# One type for a component, from resources.json to the AppMaster's plan.
Component = RolePlan


@dataclass(frozen=True)
class AppConfig:
    entry: str  # as written, relative to scripts_dir
    scripts_dir: Path  # absolute
    entry_path: Path  # absolute, an existing file
    script_args: tuple[str, ...]
    env: dict[str, str]
    queue: str
    name: str
    work_dir: str | None  # None: the submitter picks a default; may contain ${APP_ID}
    registration_timeout_s: float
    python: str | None  # interpreter in containers; None: the submitting interpreter
    ignored: tuple[str, ...]  # Slider-only keys that were accepted but have no effect
    docker_image: str | None
    success_policy: str = default("site.global.success.policy")  # one of SUCCESS_POLICIES
    allocation_timeout_s: float = default("site.global.allocation.timeout")
    deadline_s: float | None = None  # the whole job's, from submission; None = none
    am_max_attempts: int = default("site.global.am.max.attempts")
    python_env: Path | None = None  # a packed env archive (absolute) every container runs
    docker_mounts: tuple[str, ...] = ()  # source:dest[:mode] for the tasks' Docker containers
    # the shipped env's layers in a directory all users share (None: the user's HDFS home),
    # and whose layers there a job runs besides the user's own (None: the directory's owner)
    layers_dir: str | None = None
    layers_trust: tuple[str, ...] | None = None
    # name -> local file; each task gets the file, and its path in TFYARN_SECRET_<name>
    secrets: dict[str, Path] = field(default_factory=dict)
    # seconds between copies of the chief's checkpoints to the work dir on HDFS
    mirror_interval_s: float = default("site.global.checkpoint.mirror.interval")
    # a task whose agent is silent this long is lost (its host died or was cut off)
    heartbeat_timeout_s: float = default("site.global.task.heartbeat.timeout")
    # once the chief finished: how long the evaluator may take over the last checkpoint
    evaluation_timeout_s: float = default("site.global.evaluation.timeout")
    # Slider's keys: training data on HDFS, which every task gets as a local --data_dir
    data_dir: str | None = None
    # the job's work dir is <prefix>/<application name>.<application id>; tasks get --ckp_dir
    checkpoint_prefix: str | None = None
    # the flag that gives each task its local work dir; "" for none; None: --work_dir, or
    # --ckp_dir with checkpoint_prefix (work_dir_flag() says which)
    work_dir_flag: str | None = None
    # site.global.data (or --data): HDFS files and archives YARN localizes into every task's
    # data dir, each under its #name
    data: tuple[DataEntry, ...] = ()
    # YARN access lists ("users groups") of who besides the owner and YARN's admins may view
    # the application and kill it; None: nobody else
    view_acl: str | None = None
    modify_acl: str | None = None


@dataclass(frozen=True)
class JobConfig:
    components: tuple[Component, ...]  # in priority order; the AppMaster is not among them
    am_memory_mb: int
    am_vcores: int
    app: AppConfig
    resources_path: Path
    app_config_path: Path
    # every setting the job got, with where it came from (defaults.effective)
    settings: dict[str, SettingValue] = field(default_factory=dict, compare=False)

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)

    def tasks(self) -> list[Component]:
        """TensorFlow tasks (ps, chiefworker, worker) that have containers, in priority order."""
        return [c for c in self.components if c.name in TASK_KINDS and c.instances > 0]

    def total_tasks(self) -> int:
        return sum(c.instances for c in self.tasks())

