"""resources.json: Slider's components, each with its YARN resources and restart rules."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from appmaster.common import frameworks
from appmaster.common.frameworks.base import processes_misfit
from appmaster.common.jobplan import RolePlan
from appmaster.common.jobrules import (
    failure_policy_misfit,
    instances_misfit,
    priority_misfit,
    stall_timeout_misfit,
)
from appmaster.common.settings import (
    APPMASTER_SCOPE,
    COMPONENT_SCOPE,
    FAILURE_POLICY,
    FAILURE_THRESHOLD,
    FAILURE_WINDOW,
    GPUS,
    INSTANCES,
    JOB_SCOPE,
    LABEL,
    LOG_EXCLUDE,
    LOG_INCLUDE,
    LOG_INTERVAL,
    MEMORY,
    NODE_FAILURE_THRESHOLD,
    PLACEMENT_ESCALATE,
    PLACEMENT_POLICY,
    PRIORITY,
    PROCESSES,
    STALL_TIMEOUT_ROLE,
    VCORES,
    Setting,
    built_in,
    failure_window_seconds,
    setting,
    settings,
)
from appmaster.common.vocabulary import FailurePolicy
from tfyarn.jobconfig import appvalues, memory, sliderkeys
from tfyarn.jobconfig.documents import (
    Checker,
    as_int,
    key_path,
    kind_of,
    mapping,
    report_unknown,
    top_level,
)
from tfyarn.jobconfig.model import APPMASTER, COMPONENT_NAMES

# resources.json's keys are its settings' declarations' (appmaster/common/settings.py).
RESOURCE_KEYS = tuple(s.key for s in settings(COMPONENT_SCOPE))
# Each component's own: a defaults file (tfyarn/jobconfig/defaults.py) cannot give them.
JOB_ONLY_KEYS = tuple(s.key for s in settings(COMPONENT_SCOPE) if s.job_only)
# tfyarn's own value where no file gives one (`tfyarn config` shows it as "default"): a
# component's, and the AppMaster's (it alone has no priority or instances).
BUILT_IN: dict[str, Any] = built_in(COMPONENT_SCOPE)
APPMASTER_BUILT_IN: dict[str, Any] = built_in(APPMASTER_SCOPE)
APPMASTER_KEYS = tuple(s.key for s in settings(APPMASTER_SCOPE))
# the whole job's, in "global" alone (Slider read them there)
JOB_KEYS = tuple(s.key for s in settings(JOB_SCOPE))

_LABEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_WHOLE = tuple(s.key for s in settings(COMPONENT_SCOPE) if s.kind == "whole")


def _whole(c: Checker, where: str, value: Any, key: str,
           scope: str = COMPONENT_SCOPE) -> int | None:
    rule = setting(key, scope)
    sized = key == MEMORY.key  # megabytes, or a size with its unit (jobconfig/memory.py)
    number = memory.megabytes(value) if sized else as_int(value)
    if number is None:
        units = f", {memory.UNITS_HINT}" if sized else ""
        fix = f'give {rule.noun} as a whole number, e.g. "{rule.example}"{units}{rule.note}.'
        c.add(where, "not a whole number", fix, value=value)
        return None
    if not rule.within(number):
        if rule.high is None:
            message, bounds = f"must be at least {rule.low}", f"of {rule.low} or more"
        else:
            message, bounds = f"must be between {rule.low} and {rule.high}{rule.unit}", rule.bounds
        fix = f'give a whole number {bounds}, e.g. "{rule.example}"{rule.note}.'
        c.add(where, message, fix, value=value)
        return None
    return number


class _Settings:
    """One component's settings, falling back to "global" as Slider did."""

    def __init__(self, c: Checker, name: str, own: dict[str, Any], defaults: dict[str, Any]):
        self.c, self.name, self.own, self.defaults = c, name, own, defaults

    def find(self, key: str) -> tuple[Any, str] | None:
        """The value and where it was written, or None when absent."""
        if key in self.own:
            return self.own[key], key_path("components", self.name, key)
        if key in self.defaults:
            return self.defaults[key], key_path("global", key)
        return None

    def whole(self, key: str, default: int | None, scope: str = COMPONENT_SCOPE) -> int | None:
        found = self.find(key)
        return default if found is None else _whole(self.c, found[1], found[0], key, scope)

    def seconds(self, declared: Setting) -> float | None:
        return appvalues.positive_seconds(self.c, declared, self.find(declared.key))

    def choice(self, declared: Setting) -> str | None:
        return appvalues.choice(self.c, declared, self.find(declared.key))


def _unknown_key(c: Checker, where: str, key: str) -> None:
    """A key tfyarn does not take: Slider's with why, else the closest one it takes."""
    why = sliderkeys.why_refused(key)
    if why is not None:
        c.add(where, "Slider's key, which tfyarn does not take: " + why, "remove it.")
    elif key in JOB_KEYS:
        c.add(where, "the whole job's, read from \"global\" alone (as Slider did)",
              'move it to "global".')
    else:
        report_unknown(c, where, key, RESOURCE_KEYS + JOB_KEYS, "key")


def _job_fields(c: Checker, given: dict[str, Any]) -> dict[str, Any]:
    """resources.json's global keys for the whole job: JobPlan's fields (the wrong left out,
    reported)."""
    found = {key: (given[key], key_path("global", key)) for key in JOB_KEYS if key in given}
    window = {key: _whole(c, where, value, key, JOB_SCOPE)
              for key, (value, where) in found.items()
              if any(key == s.key for s in FAILURE_WINDOW)}
    fields: dict[str, Any] = {}
    if None not in window.values():
        fields["failure_window_seconds"] = failure_window_seconds(
            {k: v for k, v in window.items() if v is not None})
    for s in (LOG_INCLUDE, LOG_EXCLUDE):
        fields[s.field] = sliderkeys.patterns(c, s, found.get(s.key))
    fields[LOG_INTERVAL.field] = appvalues.positive_seconds(c, LOG_INTERVAL,
                                                            found.get(LOG_INTERVAL.key))
    return {name: value for name, value in fields.items() if value is not None}


def parse_resources(
    c: Checker, doc: dict[str, Any]
) -> tuple[tuple[RolePlan, ...], int, int, str | None, dict[str, Any]] | None:
    defaults, components = top_level(c, doc)
    for key in defaults or {}:
        if key not in RESOURCE_KEYS + JOB_KEYS:
            _unknown_key(c, key_path("global", key), key)
    job_fields = _job_fields(c, defaults or {})
    if components is None:
        return None
    found: list[RolePlan] = []
    priorities: dict[int, str] = {}
    am_memory_mb, am_vcores = APPMASTER_BUILT_IN[MEMORY.key], APPMASTER_BUILT_IN[VCORES.key]
    am_label: str | None = None
    for name, value in components.items():
        if name not in COMPONENT_NAMES:
            report_unknown(c, key_path("components", name), name, COMPONENT_NAMES, "component")
            continue
        own = mapping(c, value, key_path("components", name))
        if own is None:
            continue
        for key in own:
            if key not in RESOURCE_KEYS:
                _unknown_key(c, key_path("components", name, key), key)
        settings = _Settings(c, name, own, defaults or {})
        if name == APPMASTER:
            # Its container's size and label: YARN places it itself. Its label is its own,
            # never "global"'s: YARN gives it to every component without a label.
            am_memory_mb = settings.whole(MEMORY.key, am_memory_mb, APPMASTER_SCOPE) or am_memory_mb
            am_vcores = settings.whole(VCORES.key, am_vcores, APPMASTER_SCOPE) or am_vcores
            am_label, _ = _label(_Settings(c, name, own, {}))
            continue
        component = _component(settings, priorities)
        if component is not None:
            found.append(component)
    _check_chief(c, components, found)
    roles = tuple(sorted(found, key=lambda x: x.priority))
    return roles, am_memory_mb, am_vcores, am_label, job_fields


def check_defaults(c: Checker, defaults: dict[str, Any], appmaster: dict[str, Any]) -> None:
    """A defaults file's keys checked on their own, as if in a job's "global" (every
    component's) and its "slider-appmaster" component."""
    every = _Settings(c, "", {}, defaults)
    for key in _WHOLE:
        every.whole(key, None)
    policy = FAILURE_POLICY.key
    if every.choice(FAILURE_POLICY) == FailurePolicy.IGNORE:
        c.add(key_path("global", policy), "a default for every component, and a ps or the "
              "chief cannot be ignored", 'write "restart" or "fatal"; give "ignore" to the '
              "workers or the evaluator in the job's resources.json.", value="ignore")
    _label(every)
    sliderkeys.placement_policy(c, every.find(PLACEMENT_POLICY.key))
    every.seconds(PLACEMENT_ESCALATE)
    own = _Settings(c, APPMASTER, appmaster, {})
    for key in APPMASTER_BUILT_IN:  # its sizes; its label is checked as a component's
        own.whole(key, None, APPMASTER_SCOPE)
    _label(own)


def _check_chief(c: Checker, components: dict[str, Any], found: list[RolePlan]) -> None:
    """A job needs a chief: the chiefworker, or worker 0 when there is none (Slider's own
    package has no chiefworker: its script makes worker 0 the chief)."""
    if "chiefworker" in components:
        return
    worker = next((x for x in found if x.name == "worker"), None)
    if "worker" not in components:
        c.add(key_path("components"),
              "no chiefworker and no worker: nothing would train and nothing could end the "
              "job with success",
              f'add "worker": {{"{PRIORITY.key}": "2", "{INSTANCES.key}": "1"}} '
              '(worker 0 is then the chief), or a "chiefworker" component.')
    elif worker is not None and worker.instances == 0:
        c.add(key_path("components", "worker", INSTANCES.key),
              "a job without a chiefworker needs at least 1 worker: worker 0 is its chief",
              'give "1" or more, or add a "chiefworker" component.', value=str(worker.instances))
    elif worker is not None and worker.failure_policy == FailurePolicy.IGNORE:
        c.add(key_path("components", "worker", FAILURE_POLICY.key),
              "without a chiefworker, worker 0 is the chief, which cannot be ignored: the job "
              "cannot go on without it",
              'use "restart" or "fatal", or add a "chiefworker" component.', value="ignore")


def _component(s: _Settings, priorities: dict[int, str]) -> RolePlan | None:
    """Checks every setting of a task component; None when any is wrong."""
    priority = _priority(s, priorities)
    instances = s.whole(INSTANCES.key, 1)
    if instances is not None and (misfit := instances_misfit(s.name, instances)):
        value, where = s.find(INSTANCES.key) or (None, "")  # the default is 1: it was written
        s.c.add(where, misfit.message, misfit.fix, value=value)
        instances = None
    memory = s.whole(MEMORY.key, BUILT_IN[MEMORY.key])
    vcores = s.whole(VCORES.key, BUILT_IN[VCORES.key])
    gpus = s.whole(GPUS.key, BUILT_IN[GPUS.key])
    processes = _processes(s, gpus)
    threshold = s.whole(FAILURE_THRESHOLD.key, BUILT_IN[FAILURE_THRESHOLD.key])
    policy = s.choice(FAILURE_POLICY)
    if policy is not None and (misfit := failure_policy_misfit(s.name, policy)):
        value, where = s.find(FAILURE_POLICY.key) or (None, "")
        s.c.add(where, misfit.message, misfit.fix, value=value)
        policy = None
    label, label_ok = _label(s)
    placement = sliderkeys.placement_policy(s.c, s.find(PLACEMENT_POLICY.key))
    node_threshold = s.whole(NODE_FAILURE_THRESHOLD.key, None)
    escalate = s.seconds(PLACEMENT_ESCALATE)
    stall_timeout = s.seconds(STALL_TIMEOUT_ROLE)
    if (s.find(NODE_FAILURE_THRESHOLD.key) is not None and node_threshold is None) or (
            placement is None or escalate is None) or (
            s.find(STALL_TIMEOUT_ROLE.key) is not None and stall_timeout is None):
        return None
    if (
        priority is None
        or instances is None
        or memory is None
        or vcores is None
        or gpus is None
        or processes is None
        or threshold is None
        or policy is None
        or not label_ok
    ):
        return None
    return RolePlan(name=s.name, priority=priority, instances=instances, memory_mb=memory,
                     vcores=vcores, failure_threshold=threshold, label=label, gpus=gpus,
                     failure_policy=policy, placement_policy=placement,
                     node_failure_threshold=node_threshold, placement_escalate_seconds=escalate,
                     processes=processes, stall_timeout_s=stall_timeout)


def _processes(s: _Settings, gpus: int | None) -> int | None:
    """The processes each container runs: a group's ranks only, sharing its GPUs evenly."""
    processes = s.whole(PROCESSES.key, BUILT_IN[PROCESSES.key])
    found = s.find(PROCESSES.key)
    if processes is None or processes == 1 or found is None:
        return processes
    value, where = found
    if misfit := processes_misfit(s.name, processes, gpus or 0):
        s.c.add(where, misfit.message, misfit.fix, value=value)
        return None
    return processes


def _priority(s: _Settings, priorities: dict[int, str]) -> int | None:
    found = s.find(PRIORITY.key)
    if found is None:
        s.c.add(
            key_path("components", s.name, PRIORITY.key),
            "missing",
            f'add "{PRIORITY.key}": "N" with a whole number N >= 1 that no other component uses.',
        )
        return None
    value, where = found
    priority = _whole(s.c, where, value, PRIORITY.key)
    if priority is None:
        return None
    if misfit := priority_misfit(s.name, priority, priorities):
        s.c.add(where, misfit.message, misfit.fix, value=value)
        return None
    return priority


def _label(s: _Settings) -> tuple[str | None, bool]:
    """The node label (None: default partition), and whether the setting was valid."""
    found = s.find(LABEL.key)
    if found is None or found[0] is None:
        return None, True
    value, where = found
    if not isinstance(value, str):
        message = f"must be a string, not {kind_of(value)}"
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


def check_stall_timeouts(c: Checker, components: Sequence[RolePlan],
                         progress_interval_s: float | None) -> None:
    """A component's own stall timeout spans two progress reports at least, as the job's
    must (appconfig.py): jobrules.stall_timeout_misfit."""
    if progress_interval_s is None:
        return
    for role in components:
        if role.stall_timeout_s is not None and (misfit := stall_timeout_misfit(
                role.name, STALL_TIMEOUT_ROLE, role.stall_timeout_s, progress_interval_s)):
            c.add(key_path("components", role.name, misfit.setting.key), misfit.message,
                  f"{misfit.fix} in appConfig.json.", value=misfit.value)


def check_roles_fit(c: Checker, components: Sequence[RolePlan], framework: str) -> None:
    """The roles the job's framework has no place for (appmaster/common/frameworks/: a ps
    beside a PyTorch or JAX group, several processes per TensorFlow task...), each at its key."""
    for misfit in frameworks.of(framework).misfits(components):
        c.add(key_path("components", misfit.role, misfit.setting.key), misfit.message,
              misfit.fix, value=misfit.value)
