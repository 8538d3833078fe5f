"""The job as the AppMaster and the agents read it: written by `tfyarn submit`, shipped as a file.

Only the standard library here: this module runs inside YARN containers.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.settings import default
from appmaster.common.storage import is_remote
from appmaster.common.vocabulary import Role

JOB_FILE = "tfyarn-job.json"
SCRIPTS_DIR = "app"  # the name the user's scripts directory is localized under
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

# Defaults of the job's settings (appmaster/common/settings.py declares them).
DEFAULT_REGISTRATION_TIMEOUT_S: float = default("site.global.registration.timeout")
DEFAULT_ALLOCATION_TIMEOUT_S: float = default("site.global.allocation.timeout")
DEFAULT_AM_ATTEMPTS: int = default("site.global.am.max.attempts")
DEFAULT_MIRROR_INTERVAL_S: float = default("site.global.checkpoint.mirror.interval")
DEFAULT_HEARTBEAT_TIMEOUT_S: float = default("site.global.task.heartbeat.timeout")
DEFAULT_EVALUATION_TIMEOUT_S: float = default("site.global.evaluation.timeout")


@dataclass(frozen=True)
class RolePlan:
    name: str  # ps | chiefworker | worker
    instances: int
    priority: int
    memory_mb: int
    vcores: int
    gpus: int = 0
    label: str | None = None
    failure_threshold: int = default("yarn.container.failure.threshold")  # -1 = unlimited
    failure_policy: str = default("yarn.container.failure.policy")  # restart | fatal | ignore

    def may_restart(self, failures: int) -> bool:
        """Whether the task may be started again after its role's ``failures``-th failure."""
        if self.failure_policy != "restart":
            return False
        return self.failure_threshold < 0 or failures <= self.failure_threshold


@dataclass(frozen=True)
class JobPlan:
    name: str
    entry: str  # path of the script inside the shipped scripts dir
    python: str  # interpreter the tasks run (the same path on every node)
    work_dir: str  # may hold ${APP_ID}, filled in inside YARN
    roles: tuple[RolePlan, ...]  # in priority order
    script_args: tuple[str, ...] = ()
    registration_timeout_s: float = DEFAULT_REGISTRATION_TIMEOUT_S
    env: dict[str, str] = field(default_factory=dict)
    success_policy: str = default("site.global.success.policy")  # chief | all-workers
    allocation_timeout_s: float = DEFAULT_ALLOCATION_TIMEOUT_S
    deadline_s: float | None = None
    am_max_attempts: int = DEFAULT_AM_ATTEMPTS
    secrets: tuple[str, ...] = ()  # names only; the files travel as YARN local resources
    tensorboard: RolePlan | None = None  # a TensorBoard beside the tasks, on the work dir
    # an evaluator beside the tasks: evaluates each checkpoint the chief mirrors to HDFS
    evaluator: RolePlan | None = None
    # once the chief finished: how long the evaluator may take over the last checkpoint
    evaluation_timeout_s: float = DEFAULT_EVALUATION_TIMEOUT_S
    # the chief's local work dir -> HDFS, this often
    mirror_interval_s: float = DEFAULT_MIRROR_INTERVAL_S
    # Slider's site.global.user.data.dir on HDFS: YARN localizes it as DATA_DIR_NAME and the
    # script gets --data_dir; None: no --data_dir
    data_dir: str | None = None
    # site.global.user.scripts.work_dir_flag: the flag that names the task's local work dir
    # ("--ckp_dir" by default with Slider's site.global.user.checkpoint.prefix); "": none
    work_dir_flag: str = "--work_dir"
    # an agent silent this long: its task is lost
    heartbeat_timeout_s: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    # site.global.data: name -> URL on HDFS, seen as DATA_DIR_NAME/<name>; --data_dir too
    data: dict[str, str] = field(default_factory=dict)
    # who submitted with --principal/--keytab: the master gets new HDFS tokens as them
    # (appmaster/common/hdfstokens.py); None: a ticket cache or no Kerberos
    principal: str | None = None

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

    def role(self, name: str) -> RolePlan | None:
        return next((role for role in (*self.roles, *self.side_roles) if role.name == name),
                    None)

    def task_keys(self) -> list[tuple[str, int]]:
        return [(role.name, i) for role in self.roles for i in range(role.instances)]

    def resolved_work_dir(self, app_id: str) -> str:
        return self.work_dir.replace("${APP_ID}", app_id)

    def tensorboard_command(self, port: int, work_dir: str, flag_file: str) -> list[str]:
        """On loopback, its path prefix (a secret: appmaster/common/pageguard.py) in a flag file."""
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
        script = f"{SCRIPTS_DIR}/{self.entry}"
        data = f"{container_dir}/{DATA_DIR_NAME}" if self.data_dir or self.data else None
        flags = spec.flags(role, index, self.task_work_dir(app_id, container_dir),
                           data_dir=data, work_dir_flag=self.work_dir_flag)
        return [self.python, script, *flags, *self.script_args]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> JobPlan:
        data = json.loads(text)
        data["roles"] = tuple(RolePlan(**role) for role in data["roles"])
        for side in ("tensorboard", "evaluator"):
            if data.get(side):
                data[side] = RolePlan(**data[side])
        data["script_args"] = tuple(data.get("script_args", ()))
        data["secrets"] = tuple(data.get("secrets", ()))
        return cls(**data)

    @classmethod
    def from_container(cls) -> JobPlan:
        """The plan YARN localized into this container's working directory."""
        return cls.from_json(Path(os.environ.get("TFYARN_JOB_FILE", JOB_FILE)).read_text())

