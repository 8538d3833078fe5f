"""appConfig.json: the training script, its arguments and environment, and job settings."""

from __future__ import annotations

import getpass
import os
import re
import shlex
from pathlib import Path
from typing import Any

from appmaster.common import frameworks
from appmaster.common.jobrules import (
    STALLED_BETWEEN_REPORTS,
    is_work_dir_flag,
    stall_timeout_misfit,
)
from appmaster.common.settings import (
    ALLOCATION_TIMEOUT,
    AM_MAX_ATTEMPTS,
    APP_NAME,
    APP_PREFIX,
    APP_SCOPE,
    CHECKPOINT_PREFIX,
    DATA,
    DATA_DIR,
    DEADLINE,
    DOCKER_IMAGE,
    DOCKER_MOUNTS,
    ENTRY,
    ENV,
    EVALUATION_TIMEOUT,
    FRAMEWORK,
    HEARTBEAT_TIMEOUT,
    MIRROR_INTERVAL,
    MODIFY_ACL,
    PROGRESS_INTERVAL,
    PYTHON,
    PYTHON_ENV,
    QUEUE,
    REGISTRATION_TIMEOUT,
    SCRIPT_ARGS,
    SCRIPTS_DIR,
    SECRETS,
    STALL_TIMEOUT,
    SUCCESS_POLICY,
    VIEW_ACL,
    WORK_DIR,
    WORK_DIR_FLAG,
    built_in,
)
from appmaster.common.settings import settings as declared
from tfyarn.jobconfig import appvalues
from tfyarn.jobconfig.datasets import parse_entries
from tfyarn.jobconfig.documents import (
    Checker,
    as_int,
    key_path,
    kind_of,
    mapping,
    report_unknown,
    top_level,
)
from tfyarn.jobconfig.envvalues import archive_kind, docker_mount_problem, layers_settings

# appConfig.json's keys are its settings' declarations' (appmaster/common/settings.py).
_G = APP_PREFIX
APP_KEYS = tuple(s.key for s in declared(APP_SCOPE))
# Each job's own: a defaults file (tfyarn/jobconfig/defaults.py) cannot give them.
JOB_ONLY_KEYS = tuple(s.key for s in declared(APP_SCOPE) if s.job_only)
# Keys of which a job gives one or the other; a job file's hides a defaults file's rival.
RIVAL_KEYS = {DATA.key: DATA_DIR.key, DATA_DIR.key: DATA.key, CHECKPOINT_PREFIX.key: WORK_DIR.key,
              WORK_DIR.key: CHECKPOINT_PREFIX.key}
# tfyarn's own value where no file gives one (`tfyarn config` shows it as "default").
BUILT_IN: dict[str, Any] = built_in(APP_SCOPE)
# Slider needed these; tfyarn finds the same facts itself, so they are accepted and listed.
_SLIDER_ONLY_KEYS = (
    _G + "hadoop.conf",
    _G + "yarn.cgroup.root",
    _G + "user.name",
    _G + "zookeeper.quorum",
)
# Slider's ports, e.g. "site.global.ps.port", "site.global.tensor.board.port": tfyarn's agents
# reserve each task's port themselves.
_PORT_KEY = re.compile(r"site\.global\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.port")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_APP_NAME = 256
_WORK_DIR_PLACEHOLDERS = {"USER_NAME", "APP_ID"}


def parse_app(c: Checker, doc: dict[str, Any], path: Path, user: str | None
              ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """appConfig.json's settings, checked: (the spec's fields, the client's facts), each by
    the name JobPlan and ClientFacts give it; None when the problems leave no job."""
    settings, components = top_level(c, doc)
    if components:
        c.add(
            "components",
            "per-component settings are not supported",
            'move the settings into "global", or remove "components".',
        )
    if settings is None:
        return None
    ignored: list[str] = []
    for key in settings:
        if key in _SLIDER_ONLY_KEYS or _PORT_KEY.fullmatch(key):
            ignored.append(key)
        elif key not in APP_KEYS:
            report_unknown(c, key_path("global", key), key, APP_KEYS + _SLIDER_ONLY_KEYS, "key")
    base = Path(os.path.abspath(path)).parent
    scripts_dir = _scripts_dir(c, settings, base)
    entry = _entry(c, settings, scripts_dir)
    checked = check_settings(c, settings, base, user)
    if entry is None or scripts_dir is None:
        return None
    secret_files = checked.pop("secrets")
    client = dict(scripts_dir=scripts_dir, entry_path=entry[1], ignored=tuple(ignored),
                  python_env=checked.pop("python_env"), secret_files=secret_files)
    name = checked.pop("name") or "tfyarn-" + Path(entry[0]).stem
    spec = dict(checked, name=name, entry=entry[1].relative_to(scripts_dir).as_posix(),
                secrets=tuple(sorted(secret_files)))
    return spec, client


def check_settings(c: Checker, settings: dict[str, Any], base: Path,
                   user: str | None) -> dict[str, Any]:
    """Every setting but the script's, checked one by one, by their declarations' fields
    (the spec's, and the client's python_env and secrets). A defaults file's settings are
    checked here too, their paths relative to its ``base``."""
    script_args = _script_args(c, settings)
    env = _env(c, settings)
    queue = appvalues.text(c, settings, QUEUE.key, "default") or BUILT_IN[QUEUE.key]
    name = appvalues.text(c, settings, APP_NAME.key, "my-training")
    if name is not None and len(name) > _MAX_APP_NAME:
        c.add(
            key_path("global", APP_NAME.key),
            f"longer than {_MAX_APP_NAME} characters",
            "give a shorter name.",
            value=name,
        )
    work_dir = _work_dir(c, settings, user)
    data_dir = _hdfs_dir(c, settings, DATA_DIR.key, user)
    checkpoint_prefix = _hdfs_dir(c, settings, CHECKPOINT_PREFIX.key, user)
    data = () if DATA.key not in settings else parse_entries(
        c, key_path("global", DATA.key), settings[DATA.key], user or getpass.getuser())
    if data and data_dir is not None:  # both would be the tasks' --data_dir
        c.add(key_path("global", DATA.key), f'both this and "{DATA_DIR.key}" give the tasks\' data',
              f'keep one: list the directory as an entry, e.g. "{data_dir}#data", and read '
              "it as <--data_dir>/data.", value=settings[DATA.key])
    if checkpoint_prefix is not None and WORK_DIR.key in settings:
        c.add(key_path("global", CHECKPOINT_PREFIX.key),
              f'both this and "{WORK_DIR.key}" say where the checkpoints go',
              f'keep one: with "{CHECKPOINT_PREFIX.key}" the work dir is '
              "<prefix>/<application name>.<application id>, as in Slider.",
              value=settings[CHECKPOINT_PREFIX.key])
    success_policy = appvalues.by_kind(c, settings, SUCCESS_POLICY)
    layers_dir, layers_trust, problems = layers_settings(settings)
    for key, message, fix, value in problems:
        c.add(key_path("global", key), message, fix, value=value)
    attempts = as_int(settings.get(AM_MAX_ATTEMPTS.key, BUILT_IN[AM_MAX_ATTEMPTS.key]))
    if refusal := AM_MAX_ATTEMPTS.refusal(attempts):
        c.add(key_path("global", AM_MAX_ATTEMPTS.key), refusal,
              'write e.g. "2" (one retry of the AppMaster).',
              value=settings.get(AM_MAX_ATTEMPTS.key))
    return dict(
        script_args=script_args,
        env=env,
        queue=queue,
        name=name,
        work_dir=work_dir,
        registration_timeout_s=appvalues.seconds(c, settings, REGISTRATION_TIMEOUT.key),
        python=_python(c, settings),
        docker_image=_docker_image(c, settings),
        success_policy=success_policy,
        allocation_timeout_s=appvalues.seconds(c, settings, ALLOCATION_TIMEOUT.key),
        deadline_s=appvalues.seconds(c, settings, DEADLINE.key),
        am_max_attempts=attempts or BUILT_IN[AM_MAX_ATTEMPTS.key],
        python_env=_python_env(c, settings, base),
        docker_mounts=_docker_mounts(c, settings),
        layers_dir=layers_dir,
        layers_trust=layers_trust,
        secrets=_secrets(c, settings, base),
        mirror_interval_s=appvalues.seconds(c, settings, MIRROR_INTERVAL.key),
        heartbeat_timeout_s=appvalues.seconds(c, settings, HEARTBEAT_TIMEOUT.key),
        **_watchdog(c, settings),
        evaluation_timeout_s=appvalues.seconds(c, settings, EVALUATION_TIMEOUT.key),
        data_dir=data_dir,
        checkpoint_prefix=checkpoint_prefix,
        work_dir_flag=_work_dir_flag(c, settings),
        data=data,
        view_acl=appvalues.acl(c, settings, VIEW_ACL.key),
        modify_acl=appvalues.acl(c, settings, MODIFY_ACL.key),
        framework=appvalues.by_kind(c, settings, FRAMEWORK),
        extra={s.key: appvalues.by_kind(c, settings, s)
               for s in declared(APP_SCOPE) if not s.field},
    )


def _watchdog(c: Checker, settings: dict[str, Any]) -> dict[str, float | None]:
    """The progress interval and the stall timeout: a stall is seen only from reports, so
    the timeout must span at least two of them (a step just after a read is seen one
    interval late)."""
    interval = appvalues.seconds(c, settings, PROGRESS_INTERVAL.key)
    timeout = appvalues.seconds(c, settings, STALL_TIMEOUT.key)
    found = dict(progress_interval_s=interval, stall_timeout_s=timeout)
    if interval is None or timeout is None or not (
            misfit := stall_timeout_misfit("", STALL_TIMEOUT, timeout, interval)):
        return found
    if STALL_TIMEOUT.key not in settings:  # tfyarn's own: the interval given is wrong
        c.add(key_path("global", PROGRESS_INTERVAL.key),
              f"above half {STALL_TIMEOUT.key} ({timeout:g} s, its default): "
              f"{STALLED_BETWEEN_REPORTS}",
              f'give at most "{timeout / 2:g}" seconds, or a longer {STALL_TIMEOUT.key}.',
              value=settings[PROGRESS_INTERVAL.key])
    else:
        c.add(key_path("global", STALL_TIMEOUT.key), misfit.message, f"{misfit.fix}.",
              value=settings[STALL_TIMEOUT.key])
    return found


def with_paths_from(settings: dict[str, Any], base: Path) -> dict[str, Any]:
    """The settings with the local files they name (the packed env, the secrets) made
    absolute from ``base``, so that they mean the same merged into another file."""
    resolved = dict(settings)
    if isinstance(settings.get(PYTHON_ENV.key), str):
        resolved[PYTHON_ENV.key] = str(_local_path(base, settings[PYTHON_ENV.key]))
    if isinstance(settings.get(SECRETS.key), dict):
        resolved[SECRETS.key] = {name: str(_local_path(base, value)) if isinstance(value, str)
                              else value for name, value in settings[SECRETS.key].items()}
    return resolved


def _local_path(base: Path, text: str) -> Path:
    """A path on this machine as written in a file: relative to the file's directory."""
    return Path(os.path.abspath(base / Path(text.strip()).expanduser()))


def _python(c: Checker, settings: dict[str, Any]) -> str | None:
    """The interpreter every node has at this path: only an absolute path says that."""
    python = appvalues.text(c, settings, PYTHON.key, "/usr/bin/python3")
    if python is not None and not python.startswith("/"):
        c.add(key_path("global", PYTHON.key), "not an absolute path: it names the interpreter "
              "every node has at that path",
              "give the interpreter's absolute path on the nodes, e.g. /usr/bin/python3, or "
              "remove the key to ship your environment.", value=python)
        return None
    return python


def _python_env(c: Checker, settings: dict[str, Any], base: Path) -> Path | None:
    """The packed env's archive, relative to the file's directory; its contents are read
    when the plan is made (tfyarn.submission.environments.archive_python)."""
    text = appvalues.text(c, settings, PYTHON_ENV.key, "envs/tf2.tar.gz")
    if text is None:
        return None
    path = _local_path(base, text)
    if archive_kind(path) is None:
        c.add(key_path("global", PYTHON_ENV.key), "not an archive YARN can unpack",
              "pack the env with venv-pack or conda-pack into a .tar.gz (or .tgz, .tar, .zip).",
              value=text)
        return None
    if not path.is_file():
        c.add(key_path("global", PYTHON_ENV.key), f"no such file ({path})",
              f"pack the env there, or give its path relative to {base}.", value=text)
        return None
    return path


def _docker_image(c: Checker, settings: dict[str, Any]) -> str | None:
    image = appvalues.text(c, settings, DOCKER_IMAGE.key, "tensorflow/tensorflow:latest")
    if image is not None and any(ch.isspace() for ch in image):
        c.add(key_path("global", DOCKER_IMAGE.key), "not an image name",
              "give one such as tensorflow/tensorflow:2.16.1.", value=image)
        return None
    return image


def _docker_mounts(c: Checker, settings: dict[str, Any]) -> tuple[str, ...]:
    if DOCKER_MOUNTS.key not in settings:
        return ()
    value = settings[DOCKER_MOUNTS.key]
    where = key_path("global", DOCKER_MOUNTS.key)
    if isinstance(value, str):
        value = [m.strip() for m in value.split(",") if m.strip()]
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        c.add(where, "must be a list of strings or one comma-separated string",
              'write e.g. ["/etc/hadoop/conf:/etc/hadoop/conf:ro"].',
              value=settings[DOCKER_MOUNTS.key])
        return ()
    for mount in value:
        if problem := docker_mount_problem(mount):
            c.add(where, problem, "give each as /host/path:/container/path:ro (or :rw).",
                  value=mount)
    return tuple(value)


def _scripts_dir(c: Checker, settings: dict[str, Any], base: Path) -> Path | None:
    if SCRIPTS_DIR.key not in settings:
        return base
    text = appvalues.text(c, settings, SCRIPTS_DIR.key, "src")
    if text is None:
        return None
    # Relative to appConfig.json rather than the working directory, so the job can be
    # submitted from anywhere.
    path = _local_path(base, text)
    if not path.is_dir():
        c.add(
            key_path("global", SCRIPTS_DIR.key),
            f"no such directory ({path})",
            f"create it, or give a path relative to {base}.",
            value=text,
        )
        return None
    return path


def _entry(
    c: Checker, settings: dict[str, Any], scripts_dir: Path | None
) -> tuple[str, Path] | None:
    where = key_path("global", ENTRY.key)
    if ENTRY.key not in settings:
        c.add(
            where,
            "missing: the training script to run",
            f'add "{ENTRY.key}": "train.py", a path relative to the scripts directory.',
        )
        return None
    entry = appvalues.text(c, settings, ENTRY.key, "train.py")
    if entry is None or scripts_dir is None:
        return None
    # Only the scripts directory is shipped to the containers, so the entry must be inside it.
    path = Path(os.path.normpath(scripts_dir / entry))
    if Path(entry).is_absolute() or not path.is_relative_to(scripts_dir):
        c.add(
            where,
            f"outside the scripts directory {scripts_dir}",
            f'give a path inside it, e.g. "train.py", or set "{SCRIPTS_DIR.key}".',
            value=entry,
        )
        return None
    if not path.is_file():
        c.add(
            where,
            f"no such file ({path})",
            f"create it, or give its path relative to {scripts_dir}.",
            value=entry,
        )
        return None
    return entry, path


def _script_args(c: Checker, settings: dict[str, Any]) -> tuple[str, ...]:
    if SCRIPT_ARGS.key not in settings:
        return ()
    value = settings[SCRIPT_ARGS.key]
    where = key_path("global", SCRIPT_ARGS.key)
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as e:  # e.g. an unclosed quote
            fix = "close the quote, or give a list of strings."
            c.add(where, f"cannot be split into arguments: {e}", fix, value=value)
            return ()
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return tuple(value)
    c.add(
        where,
        "must be a list of strings or one string",
        'write e.g. ["--epochs", "5"] (numbers in quotes) or "--epochs 5".',
        value=value,
    )
    return ()


def _work_dir_flag(c: Checker, settings: dict[str, Any]) -> str:
    """The flag that names the task's local work dir: ``--name``, or "" for none; absent,
    its declaration's default for these settings."""
    if WORK_DIR_FLAG.key not in settings:
        return frameworks.work_dir_flag(settings)
    value = settings[WORK_DIR_FLAG.key]
    flag = value.strip() if isinstance(value, str) else None
    if flag is None or not is_work_dir_flag(flag):
        c.add(key_path("global", WORK_DIR_FLAG.key),
              "must be a flag such as \"--model_dir\" (two dashes, then letters, digits, _ "
              "or -), or \"\" for none",
              'write the flag your script reads its model or checkpoint dir from, e.g. '
              '"--model_dir", or "" if it has none (the path is in TFYARN_WORK_DIR).',
              value=value)
        return frameworks.work_dir_flag(settings)
    return flag


def _env(c: Checker, settings: dict[str, Any]) -> dict[str, str]:
    if ENV.key not in settings:
        return {}
    env = mapping(c, settings[ENV.key], key_path("global", ENV.key))
    if env is None:
        return {}
    for name, value in env.items():
        where = key_path("global", ENV.key, name)
        if not _ENV_NAME.fullmatch(name):
            fix = 'use letters, digits and "_", not starting with a digit, e.g. "DATA_DIR".'
            c.add(where, "not a valid environment variable name", fix)
        elif name.startswith("TFYARN_") or name == "TF_CONFIG":
            fix = "remove it, or use another name."
            c.add(where, "reserved: tfyarn sets this variable in every container", fix)
        if not isinstance(value, str):
            fix = f'put the value in quotes, e.g. "{value}".'
            c.add(where, f"must be a string, not {kind_of(value)}", fix, value=value)
    return env


def _secrets(c: Checker, settings: dict[str, Any], base: Path) -> dict[str, Path]:
    """Secret files by name. Only paths are read here: contents never enter any setting."""
    if SECRETS.key not in settings:
        return {}
    found = mapping(c, settings[SECRETS.key], key_path("global", SECRETS.key))
    secrets: dict[str, Path] = {}
    for name, value in (found or {}).items():
        where = key_path("global", SECRETS.key, name)
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            c.add(where, "not a valid secret name",
                  'use letters, digits and "_" (it becomes TFYARN_SECRET_<name>).')
            continue
        if not isinstance(value, str) or not value.strip():
            c.add(where, "must be the path of a file holding the secret",
                  'give a path, e.g. "~/.secrets/db-password".', value=value)
            continue
        path = _local_path(base, value)
        if not path.is_file():
            c.add(where, f"no such file ({path})",
                  f"create the file, or give its path relative to {base}.", value=value)
            continue
        secrets[name] = path
    return secrets


def _work_dir(c: Checker, settings: dict[str, Any], user: str | None) -> str | None:
    work_dir = appvalues.text(c, settings, WORK_DIR.key, "hdfs:///user/${USER_NAME}/tfyarn")
    if work_dir is None:
        return None
    unknown = sorted(set(re.findall(r"\$\{([^}]*)\}", work_dir)) - _WORK_DIR_PLACEHOLDERS)
    if unknown:
        c.add(
            key_path("global", WORK_DIR.key),
            "unknown placeholder " + ", ".join("${" + u + "}" for u in unknown),
            "use only ${USER_NAME} (the submitting user) and ${APP_ID} (the YARN application).",
            value=work_dir,
        )
    if "${USER_NAME}" in work_dir:
        # ${APP_ID} stays: only the AppMaster knows it.
        work_dir = work_dir.replace("${USER_NAME}", user or getpass.getuser())
    return work_dir


def _hdfs_dir(c: Checker, settings: dict[str, Any], key: str, user: str | None) -> str | None:
    """A directory URL of Slider's keys, ${USER_NAME} filled in; whether the cluster has it is
    checked before submitting (tfyarn/submission/workdir.py)."""
    text = appvalues.text(c, settings, key, "hdfs:///user/${USER_NAME}/mnist-data")
    if text is None:
        return None
    unknown = sorted(set(re.findall(r"\$\{([^}]*)\}", text)) - {"USER_NAME"})
    if unknown:
        c.add(key_path("global", key), "unknown placeholder " + ", ".join(
            "${" + u + "}" for u in unknown),
            "use only ${USER_NAME} (the submitting user).", value=text)
        return None
    return text.replace("${USER_NAME}", user or getpass.getuser()).rstrip("/") or "/"


