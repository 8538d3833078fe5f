"""The job as the AppMaster and the agents read it: written by `tfyarn submit`, shipped as a file.

Only the standard library here: this module runs inside YARN containers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NoReturn

from appmaster.common import frameworks, settings
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.frameworks.base import Misfit, processes_misfit
from appmaster.common.jobrules import (
    failure_policy_misfit,
    instances_misfit,
    is_plain_name,
    is_work_dir_flag,
    priority_misfit,
    repeated_names,
    stall_timeout_misfit,
)
from appmaster.common.storage import is_remote
from appmaster.common.vocabulary import (
    TF_ROLES,
    FailurePolicy,
    Framework,
    Role,
    SuccessPolicy,
    Word,
)

PLAN_FILE = "tfyarn-job.json"
LOCALIZED_SCRIPTS_DIR = "app"  # the name the user's scripts directory is localized under
SECRET_FILE_PREFIX = ".tfyarn-secret-"  # a secret's file name in each task's directory
# Each task's data dir, localized by YARN into its directory: Slider's site.global.user.data.dir
# itself, or site.global.data's entries under their names
DATA_DIR_NAME = "data"
# skein takes no "/" in a file's name: each entry is localized as data-<name>, and the agent
# links it into the data dir as <name>
DATA_ENTRY_PREFIX = "data-"
# Each task's local work dir in its directory, when the job's work dir is on HDFS: the node's
# own fast disk, kept in step with HDFS by the agent (appmaster/agent/mirror.py)
LOCAL_WORK_DIR = "work"



class SpecError(ValueError):
    """A spec that breaks its own rules: raised where it is built (the job files' checks say
    the same to users first, with the file and the fix)."""


def _refuse(misfit: Misfit) -> NoReturn:
    """The rule's SpecError: its role (none for the job's own), the key through its
    declaration, the value, why."""
    where = f"{misfit.role}: " if misfit.role else ""
    raise SpecError(f"{where}{misfit.setting.key} {misfit.value}: {misfit.message}")


# The kinds of value a declaration checks by itself (settings.Setting.refusal).
_CHECKED_KINDS = ("whole", "seconds", "choice", "policy")


def declared_in(scopes: tuple[str, ...], spec: type) -> tuple[settings.Setting, ...]:
    """The declarations of ``scopes`` that check a field of the class ``spec`` (or a setting
    it carries in ``extra``) by their bounds or choices. A field several keys make up (the
    failure window's three) is checked by the spec itself."""
    given = [s for s in settings.SETTINGS if s.scope in scopes]
    names = {f.name for f in fields(spec)}
    return tuple(s for s in given if s.kind in _CHECKED_KINDS
                 and (s.field in names or not s.field and "extra" in names)
                 and (not s.field or sum(other.field == s.field for other in given) == 1))


def check_declared(spec: Any, declared: tuple[settings.Setting, ...], where: str = "") -> None:
    """Each declared setting's value in ``spec`` as its declaration admits it: the same bounds
    and choices the job files are checked against, named by key. None where the spec's field
    (or, carried in ``extra``, the declaration) has no default: the setting left out."""
    optional = {f.name for f in fields(spec) if f.default is None}
    for s in declared:
        value = getattr(spec, s.field) if s.field else spec.extra.get(s.key, s.default)
        if value is None and (s.field in optional or not s.field and s.default is None):
            continue
        if refusal := "must be given" if value is None else s.refusal(value):
            raise SpecError(f"{where}{s.key} ({s.field or 'extra'}) {refusal}, not {value!r}")


@dataclass(frozen=True)
class DataEntry:
    """One entry of site.global.data (or --data): a file or archive on HDFS, ``url#name``."""

    url: str  # hdfs://… or viewfs://…, without the #name
    name: str  # where it appears in the task's data dir
    archive: bool  # YARN unpacks it into a directory called name

    def __post_init__(self) -> None:
        if not self.url or not is_plain_name(self.name):
            raise SpecError(f"{settings.DATA.key} {self.url!r}#{self.name!r}: a URL and a plain "
                            "name")

    def __str__(self) -> str:
        return f"{self.url}#{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "name": self.name, "archive": self.archive}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataEntry:
        return cls(**data)


@dataclass(frozen=True)
class RolePlan:
    """One component of resources.json: its containers and its failure rules."""

    name: str  # a Role: ps | chiefworker | worker | evaluator | tensorboard
    instances: int
    priority: int
    memory_mb: int
    vcores: int
    gpus: int = settings.GPUS.default
    label: str | None = None
    failure_threshold: int = settings.FAILURE_THRESHOLD.default  # -1 = unlimited
    failure_policy: str = settings.FAILURE_POLICY.default  # a FailurePolicy
    # Slider's placement bit mask (settings.STRICT, ANYWHERE, ANTI_AFFINITY_REQUIRED)
    placement_policy: int = settings.PLACEMENT_POLICY.default
    # failures of its containers on one node before the job uses the node no more; None: never
    node_failure_threshold: int | None = None
    # how long a request for particular hosts waits before it is relaxed to any host
    placement_escalate_seconds: float = settings.PLACEMENT_ESCALATE.default
    # processes each container runs (a PyTorch or JAX rank each), G/processes GPUs each
    processes: int = settings.PROCESSES.default
    # its own stall timeout; None: the job's (JobPlan.stall_timeout_for)
    stall_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.name not in set(Role):
            raise SpecError(f"{self.name!r} is no role: one of {', '.join(Role)}")
        check_declared(self, ROLE_SETTINGS, f"{self.name}: ")
        if misfit := failure_policy_misfit(self.name, self.failure_policy):
            _refuse(misfit)
        if misfit := processes_misfit(self.name, self.processes, self.gpus):
            _refuse(misfit)
        object.__setattr__(self, "name", Role(self.name))
        object.__setattr__(self, "failure_policy", FailurePolicy(self.failure_policy))

    def may_restart(self, failures: int) -> bool:
        """Whether the task may be started again after its role's ``failures``-th failure."""
        if self.failure_policy != FailurePolicy.RESTART:
            return False
        return self.failure_threshold < 0 or failures <= self.failure_threshold

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolePlan:
        return cls(**data)


ROLE_SETTINGS = declared_in((settings.COMPONENT_SCOPE,), RolePlan)


@dataclass(frozen=True)
class JobPlan:
    """The job, one typed spec from the job files to the AppMaster and every agent: checked
    and built by the client (tfyarn/jobconfig/), completed by the plan at submit (the
    interpreter, the work dir, the principal: tfyarn/submission/plan.py), written as
    ``tfyarn-job.json`` and read back in every container (``from_container``).

    Each appConfig setting is a field named by its declaration's ``field``
    (appmaster/common/settings.py), its default the declaration's. What only the submitting
    machine knows (local paths) is beside it, in tfyarn's ``ClientFacts``.
    """

    name: str
    entry: str  # path of the script inside the shipped scripts dir
    python: str | None  # the interpreter the tasks run (the same path on every node); None:
    # the shipped env's, decided when the plan is made
    work_dir: str | None  # may hold ${APP_ID}, filled in inside YARN; None: the default,
    # decided when the plan is made
    roles: tuple[RolePlan, ...]  # the TensorFlow cluster's, with tasks, in priority order
    script_args: tuple[str, ...] = ()
    registration_timeout_s: float = settings.REGISTRATION_TIMEOUT.default
    env: dict[str, str] = field(default_factory=dict)
    success_policy: str = settings.SUCCESS_POLICY.default  # a SuccessPolicy
    allocation_timeout_s: float | None = None  # None: as long as the queue needs
    deadline_s: float | None = None
    am_max_attempts: int = settings.AM_MAX_ATTEMPTS.default
    secrets: tuple[str, ...] = ()  # names only; the files travel as YARN local resources
    tensorboard: RolePlan | None = None  # a TensorBoard beside the tasks, on the work dir
    # an evaluator beside the tasks: evaluates each checkpoint the chief mirrors to HDFS
    evaluator: RolePlan | None = None
    # once the chief finished: how long the evaluator may take over the last checkpoint
    evaluation_timeout_s: float = settings.EVALUATION_TIMEOUT.default
    # the chief's local work dir -> HDFS, this often
    mirror_interval_s: float = settings.MIRROR_INTERVAL.default
    # Slider's site.global.user.data.dir on HDFS: YARN localizes it as DATA_DIR_NAME and the
    # script gets --data_dir; None: no --data_dir
    data_dir: str | None = None
    # site.global.user.scripts.work_dir_flag: the flag that names the task's local work dir;
    # "": none. Its default is the framework's (frameworks.work_dir_flag: Slider's --ckp_dir
    # with site.global.user.checkpoint.prefix)
    work_dir_flag: str = frameworks.work_dir_flag({})
    # an agent silent this long: its task is lost
    heartbeat_timeout_s: float = settings.HEARTBEAT_TIMEOUT.default
    # how often agents report their processes' steps; a step standing still this long: stalled
    progress_interval_s: float = settings.PROGRESS_INTERVAL.default
    stall_timeout_s: float = settings.STALL_TIMEOUT.default
    # site.global.data: HDFS files and archives, each seen as DATA_DIR_NAME/<name>
    data: tuple[DataEntry, ...] = ()
    # who submitted with --principal/--keytab: the master gets new HDFS tokens as them
    # (appmaster/common/hdfstokens.py); None: a ticket cache or no Kerberos
    principal: str | None = None
    queue: str = settings.QUEUE.default
    am_memory_mb: int = settings.AM_MEMORY.default
    am_vcores: int = settings.AM_VCORES.default
    # the application's node label (YARN gives it to the AppMaster and to every request
    # without its own); None: the default partition
    am_label: str | None = None
    docker_image: str | None = None
    docker_mounts: tuple[str, ...] = ()  # source:dest[:mode] for the tasks' Docker containers
    # the shipped env's layers in a directory all users share (None: the user's HDFS home),
    # and whose layers there a job runs besides the user's own (None: the directory's owner)
    layers_dir: str | None = None
    layers_trust: tuple[str, ...] | None = None
    # Slider's: the work dir is <prefix>/<application name>.<application id>
    checkpoint_prefix: str | None = None
    # YARN access lists ("users groups") besides the owner and YARN's admins; None: nobody
    view_acl: str | None = None
    modify_acl: str | None = None
    # resources.json's global: every role's failure count starts again at 0 each window
    # (0: never), and YARN's log aggregation of the containers while the job runs
    failure_window_seconds: float = settings.failure_window_seconds({})
    log_include_patterns: tuple[str, ...] = ()  # regular expressions, any of them
    log_exclude_patterns: tuple[str, ...] = ()
    log_interval_seconds: float | None = None  # None: YARN aggregates once, at the end
    # site.global.framework: what the tasks are told of their cluster (a Framework)
    framework: str = settings.FRAMEWORK.default
    # the settings declared without a field of their own, by key (JSON values): read
    # through their declarations, `value(setting)`
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not self.entry:
            raise SpecError("a job has a name and an entry script")
        check_declared(self, JOB_SETTINGS)
        object.__setattr__(self, "success_policy", SuccessPolicy(self.success_policy))
        if any(role.name not in TF_ROLES or role.instances < 1 for role in self.roles):
            raise SpecError("roles are the TensorFlow cluster's (ps, chiefworker, worker), "
                            "each with tasks")
        if [r.priority for r in self.roles] != sorted(r.priority for r in self.roles):
            raise SpecError("roles come in priority order")
        for role in self.components:
            if misfit := instances_misfit(role.name, role.instances):
                _refuse(misfit)
        for name, role in ((Role.TENSORBOARD, self.tensorboard), (Role.EVALUATOR, self.evaluator)):
            if role is not None and (role.name != name or role.instances < 1):
                raise SpecError(f"the {name} beside the tasks is a {name} with a container")
        everyone = [*self.roles, *self.side_roles]
        if len({r.name for r in everyone}) < len(everyone):
            raise SpecError("each role once")
        priorities: dict[int, str] = {}
        for role in everyone:
            if misfit := priority_misfit(role.name, role.priority, priorities):
                _refuse(misfit)
        if not is_work_dir_flag(self.work_dir_flag):
            raise SpecError(f"{settings.WORK_DIR_FLAG.key} {self.work_dir_flag!r}: --name, or "
                            '"" for none')
        if repeated := repeated_names(self.data):
            entry, earlier = repeated[0]
            raise SpecError(f"{settings.DATA.key} {entry}: the name {entry.name!r} is "
                            f"{earlier}'s too")
        self._check_stall_timeouts()
        if not self.failure_window_seconds >= 0:  # three keys' sum (settings.FAILURE_WINDOW)
            raise SpecError("the failure window is >= 0 seconds")
        object.__setattr__(self, "framework", Framework(self.framework))
        if misfits := frameworks.of(self.framework).misfits(self.components):
            _refuse(misfits[0])

    def _check_stall_timeouts(self) -> None:
        """The job's stall timeout and each role's own span two progress reports at least."""
        own = [(role.name, settings.STALL_TIMEOUT_ROLE, role.stall_timeout_s)
               for role in self.components if role.stall_timeout_s is not None]
        for role, declared, timeout in [("", settings.STALL_TIMEOUT, self.stall_timeout_s), *own]:
            if misfit := stall_timeout_misfit(role, declared, timeout, self.progress_interval_s):
                _refuse(misfit)

    @property
    def processes_per_container(self) -> int:
        """How many ranks each of the group's containers runs (1 in a TensorFlow job)."""
        return max((role.processes for role in self.roles), default=1)

    def value(self, setting: settings.Setting) -> Any:
        """A setting of appConfig or the AppMaster as the job has it, by its declaration (its
        default where the plan does not hold it: one written by an older client)."""
        if setting.field:
            return getattr(self, setting.field)
        return self.extra.get(setting.key, setting.default)

    @property
    def planned(self) -> bool:
        """Whether the plan named the interpreter and the work dir: what containers need."""
        return self.python is not None and self.work_dir is not None

    def stall_timeout_for(self, role: str) -> float:
        """A role's stall timeout: its own (yarn.stall.timeout.seconds), else the job's."""
        plan = self.role(role)
        own = plan.stall_timeout_s if plan else None
        return self.stall_timeout_s if own is None else own

    @property
    def heartbeat_interval_s(self) -> float:
        """How often agents say they are alive: six beats fit in the timeout."""
        return max(0.5, self.heartbeat_timeout_s / 6)

    @property
    def chief(self) -> tuple[str, int]:
        """The task that drives training and saves checkpoints: the chief worker, or worker 0
        in a job without one (Slider's own package)."""
        return (Role.CHIEFWORKER, 0) if self.role(Role.CHIEFWORKER) else (Role.WORKER, 0)

    @property
    def side_roles(self) -> tuple[RolePlan, ...]:
        """The containers beside the TensorFlow cluster (not in its spec)."""
        return tuple(role for role in (self.tensorboard, self.evaluator) if role)

    @property
    def components(self) -> tuple[RolePlan, ...]:
        """Every role with containers, the cluster's and those beside it, in priority order."""
        return tuple(sorted((*self.roles, *self.side_roles), key=lambda role: role.priority))

    def role(self, name: str) -> RolePlan | None:
        return next((role for role in (*self.roles, *self.side_roles) if role.name == name),
                    None)

    def task_keys(self) -> list[tuple[str, int]]:
        return [(role.name, i) for role in self.roles for i in range(role.instances)]

    def total_tasks(self) -> int:
        return sum(role.instances for role in self.roles)

    def resolved_work_dir(self, app_id: str) -> str:
        assert self.work_dir is not None, "a planned job's work dir"
        return self.work_dir.replace("${APP_ID}", app_id)

    def tensorboard_command(self, port: int, work_dir: str, flag_file: str) -> list[str]:
        """On loopback, its path prefix (a secret: appmaster/common/pageguard.py) in a flag file."""
        assert self.python is not None, "a planned job's interpreter"
        return [self.python, "-m", "tensorboard.main", "--logdir", work_dir,
                "--host", "127.0.0.1", "--port", str(port), "--flagfile", flag_file]

    def task_work_dir(self, app_id: str, container_dir: str) -> str:
        """The directory a task works in, as its script is told (``work_dir_flag``,
        TFYARN_WORK_DIR): in its container's directory when the job's work dir is on HDFS
        (the agent restores and mirrors it), else the job's work dir itself (a path every
        node mounts)."""
        job_dir = self.resolved_work_dir(app_id)
        return f"{container_dir}/{LOCAL_WORK_DIR}" if is_remote(job_dir) else job_dir

    def task_command(self, spec: ClusterSpec, role: str, index: int, container_dir: str,
                     app_id: str = "${APP_ID}") -> list[str]:
        """The exact command line one task runs in its container's directory
        ``container_dir``: the agent's, and the dry run's with placeholders."""
        assert self.python is not None, "a planned job's interpreter"
        script = f"{LOCALIZED_SCRIPTS_DIR}/{self.entry}"
        data = f"{container_dir}/{DATA_DIR_NAME}" if self.data_dir or self.data else None
        work = self.task_work_dir(app_id, container_dir)
        if frameworks.of(self.framework).ranks:  # the cluster is in its environment
            flags = [f"{self.work_dir_flag}={work}"] if self.work_dir_flag else []
        else:
            flags = spec.flags(role, index, work, data_dir=data, work_dir_flag=self.work_dir_flag)
        return [self.python, script, *flags, *self.script_args]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobPlan:
        given = dict(data)
        given["roles"] = tuple(RolePlan.from_dict(role) for role in given["roles"])
        for side in ("tensorboard", "evaluator"):
            if given.get(side):
                given[side] = RolePlan.from_dict(given[side])
        given["data"] = tuple(DataEntry.from_dict(entry) for entry in given.get("data", ()))
        for name in ("script_args", "secrets", "docker_mounts", "log_include_patterns",
                     "log_exclude_patterns"):
            given[name] = tuple(given.get(name, ()))
        if given.get("layers_trust") is not None:
            given["layers_trust"] = tuple(given["layers_trust"])
        return cls(**given)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> JobPlan:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_container(cls) -> JobPlan:
        """The plan YARN localized into this container's working directory."""
        plan = cls.from_json(Path(os.environ.get("TFYARN_JOB_FILE", PLAN_FILE)).read_text())
        if not plan.planned:
            raise SpecError(f"{PLAN_FILE} names no interpreter or work dir: not a planned job")
        return plan


JOB_SETTINGS = declared_in(
    (settings.APP_SCOPE, settings.APPMASTER_SCOPE, settings.JOB_SCOPE), JobPlan)


def _plain(value: Any) -> Any:
    """A field's value as JSON holds it: words as their text, tuples as lists, nested specs
    as their dicts."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Word):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
