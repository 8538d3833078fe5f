"""What a job's two files say, once checked: components, app settings, problems."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appmaster.common.jobplan import DataEntry, JobPlan
from appmaster.common.settings import (
    APPMASTER_COMPONENT,
    FAILURE_POLICIES,
    FAILURE_THRESHOLD_MEANING,
    SUCCESS_POLICIES,
)
from appmaster.common.vocabulary import TF_ROLES, Role
from tfyarn.errors import TfyarnError

APPMASTER = APPMASTER_COMPONENT
COMPONENT_NAMES = (APPMASTER, *TF_ROLES, Role.EVALUATOR, Role.TENSORBOARD)

__all__ = ["FAILURE_POLICIES", "FAILURE_THRESHOLD_MEANING", "SUCCESS_POLICIES",  # declared
           "DataEntry"]  # the spec's, appmaster/common/jobplan.py


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


class JobConfigError(TfyarnError, ValueError):
    """The job files have problems; `problems` lists all of them."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(describe_problems(self.problems))


@dataclass(frozen=True)
class ClientFacts:
    """What only the submitting machine knows of a job, beside its spec: its files' paths,
    the local files it ships. None of it travels to the cluster as written here."""

    resources_path: Path
    app_config_path: Path
    scripts_dir: Path  # absolute: shipped to every container as the script's own
    entry_path: Path  # absolute, an existing file inside scripts_dir
    python_env: Path | None = None  # a packed env archive (absolute) every container runs
    # name -> local file; each task gets the file, its path in TFYARN_SECRET_<name>
    secret_files: dict[str, Path] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()  # Slider-only keys that were accepted but have no effect


@dataclass(frozen=True)
class JobConfig:
    """A checked job: its spec (the one the AppMaster runs, before the plan completes it),
    the client's facts beside it, and every setting with where it came from."""

    spec: JobPlan
    client: ClientFacts
    # every setting the job got, with where it came from (defaults.effective)
    settings: dict[str, SettingValue] = field(default_factory=dict, compare=False)
