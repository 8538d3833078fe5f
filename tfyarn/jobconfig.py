"""Read and check a job's two files: resources.json and appConfig.json.

The format is that of Apache Slider's TensorFlow package, so existing Slider job files
load unchanged; the same structure may also be written in YAML (.yaml/.yml). Every
problem found in both files is reported at once, each with a fix, so that users can
correct everything in one go.
"""

from __future__ import annotations

import difflib
import getpass
import json
import math
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tfyarn import environments

FAILURE_THRESHOLD_MEANING = (
    'yarn.container.failure.threshold N means "N failures of that component are tolerated, '
    'each replaced; failure N+1 fails the job", 0 = no failure tolerated (the default when '
    "absent), -1 = unlimited. Note that Slider treated 0 as unlimited; tfyarn follows the "
    "reading most users assume."
)

APPMASTER = "slider-appmaster"
TASK_KINDS = ("ps", "chiefworker", "worker")
TENSORBOARD = "tensorboard"
COMPONENT_NAMES = (APPMASTER, *TASK_KINDS, TENSORBOARD)

_TOP_LEVEL_KEYS = ("schema", "metadata", "global", "components")

# resources.json keys, per component (or in "global" as defaults for all components).
_PRIORITY = "yarn.role.priority"
_INSTANCES = "yarn.component.instances"
_MEMORY = "yarn.memory"
_VCORES = "yarn.vcores"
_THRESHOLD = "yarn.container.failure.threshold"
_LABEL = "yarn.label.expression"
_GPUS = "yarn.gpus"
_POLICY = "yarn.container.failure.policy"
_RESOURCE_KEYS = (_PRIORITY, _INSTANCES, _MEMORY, _VCORES, _THRESHOLD, _LABEL, _GPUS, _POLICY)
# What a task failure does (within the threshold for "restart"); "ignore" drops the task.
FAILURE_POLICIES = ("restart", "fatal", "ignore")
SUCCESS_POLICIES = ("chief", "all-workers")

# appConfig.json keys, all under "global".
_G = "site.global."
_ENTRY = _G + "user.scripts.entry"
_SCRIPTS_DIR = _G + "user.scripts.dir"
_ARGS = _G + "user.scripts.args"
_ENV = _G + "user.env"
_QUEUE = _G + "queue"
_APP_NAME = _G + "app.name"
_WORK_DIR = _G + "user.work.dir"
_REGISTRATION_TIMEOUT = _G + "registration.timeout"
_PYTHON = _G + "python"
_DOCKER_IMAGE = _G + "docker.image"
_PYTHON_ENV = _G + "python.env"  # a packed env (tfyarn.environments)
_DOCKER_MOUNTS = _G + "docker.mounts"
_SUCCESS_POLICY = _G + "success.policy"
_ALLOCATION_TIMEOUT = _G + "allocation.timeout"
_DEADLINE = _G + "job.deadline"
_AM_ATTEMPTS = _G + "am.max.attempts"
_SECRETS = _G + "user.secrets"
_APP_KEYS = (
    _ENTRY,
    _SCRIPTS_DIR,
    _ARGS,
    _ENV,
    _QUEUE,
    _APP_NAME,
    _WORK_DIR,
    _REGISTRATION_TIMEOUT,
    _PYTHON,
    _DOCKER_IMAGE,
    _PYTHON_ENV,
    _DOCKER_MOUNTS,
    _SUCCESS_POLICY,
    _ALLOCATION_TIMEOUT,
    _DEADLINE,
    _AM_ATTEMPTS,
    _SECRETS,
)
# Slider needed these; tfyarn finds the same facts itself, so they are accepted and listed.
_SLIDER_ONLY_KEYS = (
    _G + "hadoop.conf",
    _G + "yarn.cgroup.root",
    _G + "user.name",
    _G + "zookeeper.quorum",
    _G + "user.checkpoint.prefix",
)
_PORT_KEY = re.compile(r"site\.global\.[A-Za-z0-9_-]+\.port")

_LABEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_KEY_PART = re.compile(r"[A-Za-z0-9_-]+")
_MAX_APP_NAME = 256
_WORK_DIR_PLACEHOLDERS = {"USER_NAME", "APP_ID"}

# Marks "no value to show" in a problem, since None (JSON null) can itself be the bad value.
_NO_VALUE: Any = object()


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


class JobConfigError(ValueError):
    """The job files have problems; `problems` lists all of them."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(describe_problems(self.problems))


@dataclass(frozen=True)
class Component:
    name: str
    priority: int
    instances: int
    memory_mb: int
    vcores: int
    failure_threshold: int  # see FAILURE_THRESHOLD_MEANING
    label: str | None  # YARN node label; None = the default partition
    gpus: int = 0
    failure_policy: str = "restart"  # one of FAILURE_POLICIES


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
    success_policy: str = "chief"  # one of SUCCESS_POLICIES
    allocation_timeout_s: float = 120.0
    deadline_s: float | None = None  # the whole job's, from submission; None = none
    am_max_attempts: int = 2
    python_env: Path | None = None  # a packed env archive (absolute) every container runs
    docker_mounts: tuple[str, ...] = ()  # source:dest[:mode] for the tasks' Docker containers
    # name -> local file; each task gets the file, and its path in TFYARN_SECRET_<name>
    secrets: dict[str, Path] = field(default_factory=dict)


@dataclass(frozen=True)
class JobConfig:
    components: tuple[Component, ...]  # in priority order; the AppMaster is not among them
    am_memory_mb: int
    am_vcores: int
    app: AppConfig
    resources_path: Path
    app_config_path: Path

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)

    def tasks(self) -> list[Component]:
        """TensorFlow tasks (ps, chiefworker, worker) that have containers, in priority order."""
        return [c for c in self.components if c.name in TASK_KINDS and c.instances > 0]

    def total_tasks(self) -> int:
        return sum(c.instances for c in self.tasks())


def load_job(
    resources_path: str | os.PathLike[str],
    app_config_path: str | os.PathLike[str],
    *,
    user: str | None = None,
) -> JobConfig:
    """Read both job files, raising JobConfigError with every problem in them.

    `user` replaces ${USER_NAME} in the work dir; None means the current user.
    """
    problems: list[Problem] = []
    resources_checker = _Checker(str(resources_path), problems)
    app_checker = _Checker(str(app_config_path), problems)
    resources_doc = _read_document(resources_checker, Path(resources_path))
    app_doc = _read_document(app_checker, Path(app_config_path))
    resources = (
        None if resources_doc is None else _parse_resources(resources_checker, resources_doc)
    )
    app = None if app_doc is None else _parse_app(app_checker, app_doc, Path(app_config_path), user)
    if problems:
        raise JobConfigError(problems)
    assert resources is not None and app is not None  # no problems means both parsed
    components, am_memory_mb, am_vcores = resources
    return JobConfig(
        components=components,
        am_memory_mb=am_memory_mb,
        am_vcores=am_vcores,
        app=app,
        resources_path=Path(resources_path),
        app_config_path=Path(app_config_path),
    )


class _Checker:
    """Records the problems of one file into a list shared by both files."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        self.file = file
        self.problems = problems

    def add(self, key: str | None, message: str, fix: str, value: Any = _NO_VALUE) -> None:
        shown = None if value is _NO_VALUE else _show(value)
        problem = Problem(self.file, key, shown, message, fix)
        # A bad "global" value is seen by every component; report it once.
        if problem not in self.problems:
            self.problems.append(problem)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _key(*parts: str) -> str:
    """A readable path into the document, quoting parts that contain dots."""
    return ".".join(p if _PLAIN_KEY_PART.fullmatch(p) else json.dumps(p) for p in parts)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _unknown(c: _Checker, where: str, name: str, allowed: Sequence[str], what: str) -> None:
    match = difflib.get_close_matches(name, allowed, n=1)
    if match:
        fix = f'did you mean "{match[0]}"?'
    else:
        fix = "remove it; allowed: " + ", ".join(allowed) + "."
    c.add(where, f"unknown {what}", fix)


def _read_document(c: _Checker, path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        c.add(
            None, f"no such file ({path.absolute()})", "check the path given on the command line."
        )
        return None
    except UnicodeDecodeError:
        c.add(None, "not UTF-8 text", "save the file as UTF-8.")
        return None
    except OSError as e:
        c.add(None, f"cannot read the file: {e.strerror}", "check the path and its permissions.")
        return None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            doc = yaml.safe_load(text)
        except yaml.MarkedYAMLError as e:
            where = ""
            if e.problem_mark is not None:  # marks are 0-based; editors count from 1
                where = f" at line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1}"
            c.add(None, f"not valid YAML: {e.problem}{where}", f"correct the syntax{where}.")
            return None
        except yaml.YAMLError as e:
            c.add(None, f"not valid YAML: {e}", "correct the syntax.")
            return None
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            where = f"line {e.lineno}, column {e.colno}"
            c.add(None, f"not valid JSON: {e.msg} at {where}", f"correct the syntax at {where}.")
            return None
    if not isinstance(doc, dict):
        c.add(
            None,
            f"the document must be an object, not {_kind(doc)}",
            'write it as {"schema": ..., "global": {...}, "components": {...}}.',
        )
        return None
    return {str(k): v for k, v in doc.items()}


def _mapping(c: _Checker, value: Any, where: str) -> dict[str, Any] | None:
    """An object's contents; None (an empty YAML entry) counts as empty."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        c.add(where, f"must be an object, not {_kind(value)}", "write it as {...}.", value=value)
        return None
    return {str(k): v for k, v in value.items()}


def _top_level(
    c: _Checker, doc: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Checks the top-level keys; returns the "global" and "components" sections."""
    for key in doc:
        if key not in _TOP_LEVEL_KEYS:
            _unknown(c, _key(key), key, _TOP_LEVEL_KEYS, "top-level key")
    return (
        _mapping(c, doc.get("global"), "global"),
        _mapping(c, doc.get("components"), "components"),
    )


# ---- resources.json ----


@dataclass(frozen=True)
class _IntRule:
    low: int
    high: int | None
    unit: str  # shown after the bounds, e.g. " MB"
    noun: str  # what the number counts, for the fix
    example: str
    note: str = ""  # appended to the fix


_INT_RULES = {
    _PRIORITY: _IntRule(1, None, "", "the priority", "1", " (each component its own)"),
    _INSTANCES: _IntRule(0, None, "", "the number of containers", "1"),
    _MEMORY: _IntRule(32, 1048576, " MB", "megabytes", "2048"),
    _VCORES: _IntRule(1, 1024, "", "virtual cores", "1"),
    _GPUS: _IntRule(0, 64, "", "GPUs per container", "1"),
    _THRESHOLD: _IntRule(-1, None, "", "tolerated failures", "0", " (-1 = unlimited)"),
}


def _as_int(value: Any) -> int | None:
    # bool is an int subclass in Python, but "true" is no number of containers.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
        return int(value)
    return None


def _whole(c: _Checker, where: str, value: Any, key: str) -> int | None:
    rule = _INT_RULES[key]
    number = _as_int(value)
    if number is None:
        fix = f'give {rule.noun} as a whole number, e.g. "{rule.example}"{rule.note}.'
        c.add(where, "not a whole number", fix, value=value)
        return None
    if number < rule.low or (rule.high is not None and number > rule.high):
        if rule.high is None:
            message, bounds = f"must be at least {rule.low}", f"of {rule.low} or more"
        else:
            message = f"must be between {rule.low} and {rule.high}{rule.unit}"
            bounds = f"from {rule.low} to {rule.high}{rule.unit}"
        fix = f'give a whole number {bounds}, e.g. "{rule.example}"{rule.note}.'
        c.add(where, message, fix, value=value)
        return None
    return number


class _Settings:
    """One component's settings, falling back to "global" as Slider did."""

    def __init__(self, c: _Checker, name: str, own: dict[str, Any], defaults: dict[str, Any]):
        self.c, self.name, self.own, self.defaults = c, name, own, defaults

    def find(self, key: str) -> tuple[Any, str] | None:
        """The value and where it was written, or None when absent."""
        if key in self.own:
            return self.own[key], _key("components", self.name, key)
        if key in self.defaults:
            return self.defaults[key], _key("global", key)
        return None

    def whole(self, key: str, default: int | None) -> int | None:
        found = self.find(key)
        return default if found is None else _whole(self.c, found[1], found[0], key)


def _parse_resources(
    c: _Checker, doc: dict[str, Any]
) -> tuple[tuple[Component, ...], int, int] | None:
    defaults, components = _top_level(c, doc)
    for key in defaults or {}:
        if key not in _RESOURCE_KEYS:
            _unknown(c, _key("global", key), key, _RESOURCE_KEYS, "key")
    if components is None:
        return None
    found: list[Component] = []
    priorities: dict[int, str] = {}
    am_memory_mb, am_vcores = 512, 1
    for name, value in components.items():
        if name not in COMPONENT_NAMES:
            _unknown(c, _key("components", name), name, COMPONENT_NAMES, "component")
            continue
        own = _mapping(c, value, _key("components", name))
        if own is None:
            continue
        for key in own:
            if key not in _RESOURCE_KEYS:
                _unknown(c, _key("components", name, key), key, _RESOURCE_KEYS, "key")
        settings = _Settings(c, name, own, defaults or {})
        if name == APPMASTER:
            # Only the AppMaster's container size matters; YARN places it itself.
            am_memory_mb = settings.whole(_MEMORY, 512) or am_memory_mb
            am_vcores = settings.whole(_VCORES, 1) or am_vcores
            continue
        component = _component(settings, priorities)
        if component is not None:
            found.append(component)
    if "chiefworker" not in components:
        c.add(
            _key("components", "chiefworker"),
            "missing: every job needs exactly one chief worker",
            'add "chiefworker": {"yarn.role.priority": "2", "yarn.component.instances": "1", '
            '"yarn.memory": "4096", "yarn.vcores": "1"} to "components".',
        )
    return tuple(sorted(found, key=lambda x: x.priority)), am_memory_mb, am_vcores


def _component(s: _Settings, priorities: dict[int, str]) -> Component | None:
    """Checks every setting of a task component; None when any is wrong."""
    priority = _priority(s, priorities)
    instances = s.whole(_INSTANCES, 1)
    if s.name == "chiefworker" and instances not in (None, 1):
        value, where = s.find(_INSTANCES) or (None, "")  # the default is 1, so it was written
        s.c.add(
            where,
            "there must be exactly 1 chief worker",
            'set it to "1"; add more containers to "worker" instead.',
            value=value,
        )
        instances = None
    if s.name == TENSORBOARD and instances not in (None, 0, 1):
        value, where = s.find(_INSTANCES) or (None, "")
        s.c.add(where, "at most 1 TensorBoard per job", 'set it to "1" (or "0" for none).',
                value=value)
        instances = None
    memory = s.whole(_MEMORY, 1024)
    vcores = s.whole(_VCORES, 1)
    gpus = s.whole(_GPUS, 0)
    threshold = s.whole(_THRESHOLD, 0)
    policy = _choice(s, _POLICY, FAILURE_POLICIES, "restart")
    if policy == "ignore" and s.name != "worker":
        value, where = s.find(_POLICY) or (None, "")
        s.c.add(where, f"a {s.name} cannot be ignored: the job cannot go on without it",
                'use "restart" or "fatal"; "ignore" is for workers.', value=value)
        policy = None
    label, label_ok = _label(s)
    if (
        priority is None
        or instances is None
        or memory is None
        or vcores is None
        or gpus is None
        or threshold is None
        or policy is None
        or not label_ok
    ):
        return None
    return Component(s.name, priority, instances, memory, vcores, threshold, label, gpus, policy)


def _choice(s: _Settings, key: str, allowed: Sequence[str], default: str) -> str | None:
    found = s.find(key)
    if found is None:
        return default
    value, where = found
    if value not in allowed:
        choices = ", ".join(f'"{a}"' for a in allowed)
        s.c.add(where, f"must be one of {choices}", f'write e.g. "{default}".', value=value)
        return None
    return value


def _priority(s: _Settings, priorities: dict[int, str]) -> int | None:
    found = s.find(_PRIORITY)
    if found is None:
        s.c.add(
            _key("components", s.name, _PRIORITY),
            "missing",
            f'add "{_PRIORITY}": "N" with a whole number N >= 1 that no other component uses.',
        )
        return None
    value, where = found
    priority = _whole(s.c, where, value, _PRIORITY)
    if priority is None:
        return None
    # YARN tells containers' requests apart by priority, so two components cannot share one.
    other = priorities.setdefault(priority, s.name)
    if other != s.name:
        s.c.add(
            where,
            f"{other} and {s.name} both have priority {priority}",
            "give each component its own priority.",
            value=value,
        )
        return None
    return priority


def _label(s: _Settings) -> tuple[str | None, bool]:
    """The node label (None: default partition), and whether the setting was valid."""
    found = s.find(_LABEL)
    if found is None or found[0] is None:
        return None, True
    value, where = found
    if not isinstance(value, str):
        message = f"must be a string, not {_kind(value)}"
        s.c.add(where, message, 'give a label name, e.g. "gpu".', value=value)
        return None, False
    label = value.strip()
    if not label:
        return None, True
    if any(sep in label for sep in ("&&", "||", ",")) or re.search(r"\s", label):
        s.c.add(
            where,
            "YARN accepts one node label per request, not an expression of several",
            'give a single label name, e.g. "gpu".',
            value=value,
        )
        return None, False
    if not _LABEL_NAME.fullmatch(label):
        s.c.add(
            where,
            "not a valid node label name",
            'use letters, digits, "_", "-" and ".", starting with a letter or digit.',
            value=value,
        )
        return None, False
    return label, True


# ---- appConfig.json ----


def _parse_app(c: _Checker, doc: dict[str, Any], path: Path, user: str | None) -> AppConfig | None:
    settings, components = _top_level(c, doc)
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
        elif key not in _APP_KEYS:
            _unknown(c, _key("global", key), key, _APP_KEYS + _SLIDER_ONLY_KEYS, "key")
    scripts_dir = _scripts_dir(c, settings, Path(os.path.abspath(path)).parent)
    entry = _entry(c, settings, scripts_dir)
    script_args = _script_args(c, settings)
    env = _env(c, settings)
    queue = _text(c, settings, _QUEUE, "default") or "default"
    name = _text(c, settings, _APP_NAME, "my-training")
    if name is not None and len(name) > _MAX_APP_NAME:
        c.add(
            _key("global", _APP_NAME),
            f"longer than {_MAX_APP_NAME} characters",
            "give a shorter name.",
            value=name,
        )
    work_dir = _work_dir(c, settings, user)
    timeout = _seconds(c, settings, _REGISTRATION_TIMEOUT, 300.0)
    allocation_timeout = _seconds(c, settings, _ALLOCATION_TIMEOUT, 120.0)
    deadline = _seconds(c, settings, _DEADLINE, None)
    success_policy = settings.get(_SUCCESS_POLICY, "chief")
    if success_policy not in SUCCESS_POLICIES:
        c.add(_key("global", _SUCCESS_POLICY), 'must be "chief" or "all-workers"',
              'write "chief" (the job ends with the chief) or "all-workers".',
              value=success_policy)
    attempts = _as_int(settings.get(_AM_ATTEMPTS, 2))
    if attempts is None or not 1 <= attempts <= 10:
        c.add(_key("global", _AM_ATTEMPTS), "must be a whole number from 1 to 10",
              'write e.g. "2" (one retry of the AppMaster).', value=settings.get(_AM_ATTEMPTS))
    python = _text(c, settings, _PYTHON, "/usr/bin/python3")
    docker_image = _text(c, settings, _DOCKER_IMAGE, "tensorflow/tensorflow:latest")
    python_env = _python_env(c, settings, Path(os.path.abspath(path)).parent)
    docker_mounts = _docker_mounts(c, settings)
    if entry is None or scripts_dir is None:
        return None
    return AppConfig(
        entry=entry[0],
        scripts_dir=scripts_dir,
        entry_path=entry[1],
        script_args=script_args,
        env=env,
        queue=queue,
        name=name or "tfyarn-" + Path(entry[0]).stem,
        work_dir=work_dir,
        registration_timeout_s=timeout or 300.0,
        python=python,
        ignored=tuple(ignored),
        docker_image=docker_image,
        success_policy=success_policy,
        allocation_timeout_s=allocation_timeout or 120.0,
        deadline_s=deadline,
        am_max_attempts=attempts or 2,
        python_env=python_env,
        docker_mounts=docker_mounts,
        secrets=_secrets(c, settings, Path(os.path.abspath(path)).parent),
    )


def _text(c: _Checker, settings: dict[str, Any], key: str, example: str) -> str | None:
    """A non-empty string setting, stripped; None when absent or wrong."""
    if key not in settings:
        return None
    value = settings[key]
    if not isinstance(value, str) or not value.strip():
        message = "must not be empty" if isinstance(value, str) else "must be a string"
        fix = f'give a value such as "{example}", or remove the key.'
        c.add(_key("global", key), message, fix, value=value)
        return None
    return value.strip()


def _python_env(c: _Checker, settings: dict[str, Any], base: Path) -> Path | None:
    """The packed env's archive, relative to appConfig's directory; its contents are read
    when the plan is made (tfyarn.environments.archive_python)."""
    text = _text(c, settings, _PYTHON_ENV, "envs/tf2.tar.gz")
    if text is None:
        return None
    path = Path(os.path.abspath(base / Path(text).expanduser()))
    try:
        environments.archive_suffix(path)
    except environments.JobEnvironmentError:
        c.add(_key("global", _PYTHON_ENV), "not an archive YARN can unpack",
              "pack the env with venv-pack or conda-pack into a .tar.gz (or .tgz, .tar, .zip).",
              value=text)
        return None
    if not path.is_file():
        c.add(_key("global", _PYTHON_ENV), f"no such file ({path})",
              f"pack the env there, or give its path relative to {base}.", value=text)
        return None
    return path


def _docker_mounts(c: _Checker, settings: dict[str, Any]) -> tuple[str, ...]:
    if _DOCKER_MOUNTS not in settings:
        return ()
    value = settings[_DOCKER_MOUNTS]
    where = _key("global", _DOCKER_MOUNTS)
    if isinstance(value, str):
        value = [m.strip() for m in value.split(",") if m.strip()]
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        c.add(where, "must be a list of strings or one comma-separated string",
              'write e.g. ["/etc/hadoop/conf:/etc/hadoop/conf:ro"].',
              value=settings[_DOCKER_MOUNTS])
        return ()
    for mount in value:
        if problem := environments.docker_mount_problem(mount):
            c.add(where, problem, "give each as /host/path:/container/path:ro (or :rw).",
                  value=mount)
    return tuple(value)


def _scripts_dir(c: _Checker, settings: dict[str, Any], base: Path) -> Path | None:
    if _SCRIPTS_DIR not in settings:
        return base
    text = _text(c, settings, _SCRIPTS_DIR, "src")
    if text is None:
        return None
    # Relative to appConfig.json rather than the working directory, so the job can be
    # submitted from anywhere.
    path = Path(os.path.abspath(base / Path(text).expanduser()))
    if not path.is_dir():
        c.add(
            _key("global", _SCRIPTS_DIR),
            f"no such directory ({path})",
            f"create it, or give a path relative to {base}.",
            value=text,
        )
        return None
    return path


def _entry(
    c: _Checker, settings: dict[str, Any], scripts_dir: Path | None
) -> tuple[str, Path] | None:
    where = _key("global", _ENTRY)
    if _ENTRY not in settings:
        c.add(
            where,
            "missing: the training script to run",
            f'add "{_ENTRY}": "train.py", a path relative to the scripts directory.',
        )
        return None
    entry = _text(c, settings, _ENTRY, "train.py")
    if entry is None or scripts_dir is None:
        return None
    # Only the scripts directory is shipped to the containers, so the entry must be inside it.
    path = Path(os.path.normpath(scripts_dir / entry))
    if Path(entry).is_absolute() or not path.is_relative_to(scripts_dir):
        c.add(
            where,
            f"outside the scripts directory {scripts_dir}",
            f'give a path inside it, e.g. "train.py", or set "{_SCRIPTS_DIR}".',
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


def _script_args(c: _Checker, settings: dict[str, Any]) -> tuple[str, ...]:
    if _ARGS not in settings:
        return ()
    value = settings[_ARGS]
    where = _key("global", _ARGS)
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


def _env(c: _Checker, settings: dict[str, Any]) -> dict[str, str]:
    if _ENV not in settings:
        return {}
    env = _mapping(c, settings[_ENV], _key("global", _ENV))
    if env is None:
        return {}
    for name, value in env.items():
        where = _key("global", _ENV, name)
        if not _ENV_NAME.fullmatch(name):
            fix = 'use letters, digits and "_", not starting with a digit, e.g. "DATA_DIR".'
            c.add(where, "not a valid environment variable name", fix)
        elif name.startswith("TFYARN_") or name == "TF_CONFIG":
            fix = "remove it, or use another name."
            c.add(where, "reserved: tfyarn sets this variable in every container", fix)
        if not isinstance(value, str):
            fix = f'put the value in quotes, e.g. "{value}".'
            c.add(where, f"must be a string, not {_kind(value)}", fix, value=value)
    return env


def _secrets(c: _Checker, settings: dict[str, Any], base: Path) -> dict[str, Path]:
    """Secret files by name. Only paths are read here: contents never enter any setting."""
    if _SECRETS not in settings:
        return {}
    found = _mapping(c, settings[_SECRETS], _key("global", _SECRETS))
    secrets: dict[str, Path] = {}
    for name, value in (found or {}).items():
        where = _key("global", _SECRETS, name)
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            c.add(where, "not a valid secret name",
                  'use letters, digits and "_" (it becomes TFYARN_SECRET_<name>).')
            continue
        if not isinstance(value, str) or not value.strip():
            c.add(where, "must be the path of a file holding the secret",
                  'give a path, e.g. "~/.secrets/db-password".', value=value)
            continue
        path = Path(os.path.abspath(base / Path(value.strip()).expanduser()))
        if not path.is_file():
            c.add(where, f"no such file ({path})",
                  "create the file, or give its path relative to appConfig.json.", value=value)
            continue
        secrets[name] = path
    return secrets


def _work_dir(c: _Checker, settings: dict[str, Any], user: str | None) -> str | None:
    work_dir = _text(c, settings, _WORK_DIR, "hdfs:///user/${USER_NAME}/tfyarn")
    if work_dir is None:
        return None
    unknown = sorted(set(re.findall(r"\$\{([^}]*)\}", work_dir)) - _WORK_DIR_PLACEHOLDERS)
    if unknown:
        c.add(
            _key("global", _WORK_DIR),
            "unknown placeholder " + ", ".join("${" + u + "}" for u in unknown),
            "use only ${USER_NAME} (the submitting user) and ${APP_ID} (the YARN application).",
            value=work_dir,
        )
    if "${USER_NAME}" in work_dir:
        # ${APP_ID} stays: only the AppMaster knows it.
        work_dir = work_dir.replace("${USER_NAME}", user or getpass.getuser())
    return work_dir


def _seconds(c: _Checker, settings: dict[str, Any], key: str, default: float | None):
    """A positive number of seconds (a number or a numeric string), or the default."""
    if key not in settings:
        return default
    value = settings[key]
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = float(value)
        except ValueError:
            seconds = None
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        c.add(
            _key("global", key),
            "must be a positive number of seconds",
            'give seconds, e.g. "300".',
            value=value,
        )
        return default
    return seconds
