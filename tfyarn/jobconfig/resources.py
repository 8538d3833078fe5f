"""resources.json: Slider's components, each with its YARN resources and restart rules."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from appmaster.common.settings import (
    APPMASTER_SCOPE,
    COMPONENT_SCOPE,
    built_in,
    setting,
    settings,
)
from appmaster.common.vocabulary import Role
from tfyarn.jobconfig import memory
from tfyarn.jobconfig.documents import (
    Checker,
    as_int,
    key_path,
    kind_of,
    mapping,
    report_unknown,
    top_level,
)
from tfyarn.jobconfig.model import (
    APPMASTER,
    COMPONENT_NAMES,
    EVALUATOR,
    FAILURE_POLICIES,
    TENSORBOARD,
    Component,
)

# resources.json keys, per component (or in "global" as defaults for all components).
_PRIORITY = "yarn.role.priority"
_INSTANCES = "yarn.component.instances"
_MEMORY = "yarn.memory"
_VCORES = "yarn.vcores"
_THRESHOLD = "yarn.container.failure.threshold"
_LABEL = "yarn.label.expression"
_GPUS = "yarn.gpus"
_POLICY = "yarn.container.failure.policy"
RESOURCE_KEYS = tuple(s.key for s in settings(COMPONENT_SCOPE))
# Each component's own: a defaults file (tfyarn/jobconfig/defaults.py) cannot give them.
JOB_ONLY_KEYS = tuple(s.key for s in settings(COMPONENT_SCOPE) if s.job_only)
# tfyarn's own value where no file gives one (`tfyarn config` shows it as "default"): a
# component's, and the AppMaster's (it alone has no priority or instances).
BUILT_IN: dict[str, Any] = built_in(COMPONENT_SCOPE)
APPMASTER_BUILT_IN: dict[str, Any] = built_in(APPMASTER_SCOPE)
APPMASTER_KEYS = tuple(APPMASTER_BUILT_IN)

_LABEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_WHOLE = tuple(s.key for s in settings(COMPONENT_SCOPE) if s.kind == "whole")


def _whole(c: Checker, where: str, value: Any, key: str,
           scope: str = COMPONENT_SCOPE) -> int | None:
    rule = setting(key, scope)
    assert rule.low is not None
    sized = key == _MEMORY  # megabytes, or a size with its unit (jobconfig/memory.py)
    number = memory.megabytes(value) if sized else as_int(value)
    if number is None:
        units = f", {memory.UNITS_HINT}" if sized else ""
        fix = f'give {rule.noun} as a whole number, e.g. "{rule.example}"{units}{rule.note}.'
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


def parse_resources(
    c: Checker, doc: dict[str, Any]
) -> tuple[tuple[Component, ...], int, int] | None:
    defaults, components = top_level(c, doc)
    for key in defaults or {}:
        if key not in RESOURCE_KEYS:
            report_unknown(c, key_path("global", key), key, RESOURCE_KEYS, "key")
    if components is None:
        return None
    found: list[Component] = []
    priorities: dict[int, str] = {}
    am_memory_mb, am_vcores = APPMASTER_BUILT_IN[_MEMORY], APPMASTER_BUILT_IN[_VCORES]
    for name, value in components.items():
        if name not in COMPONENT_NAMES:
            report_unknown(c, key_path("components", name), name, COMPONENT_NAMES, "component")
            continue
        own = mapping(c, value, key_path("components", name))
        if own is None:
            continue
        for key in own:
            if key not in RESOURCE_KEYS:
                report_unknown(c, key_path("components", name, key), key, RESOURCE_KEYS, "key")
        settings = _Settings(c, name, own, defaults or {})
        if name == APPMASTER:
            # Only the AppMaster's container size matters; YARN places it itself.
            am_memory_mb = settings.whole(_MEMORY, am_memory_mb, APPMASTER_SCOPE) or am_memory_mb
            am_vcores = settings.whole(_VCORES, am_vcores, APPMASTER_SCOPE) or am_vcores
            continue
        component = _component(settings, priorities)
        if component is not None:
            found.append(component)
    _check_chief(c, components, found)
    return tuple(sorted(found, key=lambda x: x.priority)), am_memory_mb, am_vcores


def check_defaults(c: Checker, defaults: dict[str, Any], appmaster: dict[str, Any]) -> None:
    """A defaults file's keys checked on their own, as if in a job's "global" (every
    component's) and its "slider-appmaster" component."""
    every = _Settings(c, "", {}, defaults)
    for key in _WHOLE:
        every.whole(key, None)
    if _choice(every, _POLICY, FAILURE_POLICIES, BUILT_IN[_POLICY]) == "ignore":
        c.add(key_path("global", _POLICY), "a default for every component, and a ps or the "
              "chief cannot be ignored", 'write "restart" or "fatal"; give "ignore" to the '
              "workers or the evaluator in the job's resources.json.", value="ignore")
    _label(every)
    own = _Settings(c, APPMASTER, appmaster, {})
    for key in APPMASTER_KEYS:
        own.whole(key, None, APPMASTER_SCOPE)


def _check_chief(c: Checker, components: dict[str, Any], found: list[Component]) -> None:
    """A job needs a chief: the chiefworker, or worker 0 when there is none (Slider's own
    package has no chiefworker: its script makes worker 0 the chief)."""
    if "chiefworker" in components:
        return
    worker = next((x for x in found if x.name == "worker"), None)
    if "worker" not in components:
        c.add(key_path("components"),
              "no chiefworker and no worker: nothing would train and nothing could end the "
              "job with success",
              'add "worker": {"yarn.role.priority": "2", "yarn.component.instances": "1"} '
              '(worker 0 is then the chief), or a "chiefworker" component.')
    elif worker is not None and worker.instances == 0:
        c.add(key_path("components", "worker", _INSTANCES),
              "a job without a chiefworker needs at least 1 worker: worker 0 is its chief",
              'give "1" or more, or add a "chiefworker" component.', value=str(worker.instances))
    elif worker is not None and worker.failure_policy == "ignore":
        c.add(key_path("components", "worker", _POLICY),
              "without a chiefworker, worker 0 is the chief, which cannot be ignored: the job "
              "cannot go on without it",
              'use "restart" or "fatal", or add a "chiefworker" component.', value="ignore")


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
    if s.name == EVALUATOR and instances not in (None, 0, 1):
        value, where = s.find(_INSTANCES) or (None, "")
        s.c.add(where, "at most 1 evaluator per job: it evaluates every checkpoint the chief "
                "saves, one after the other", 'set it to "1" (or "0" for none).', value=value)
        instances = None
    memory = s.whole(_MEMORY, BUILT_IN[_MEMORY])
    vcores = s.whole(_VCORES, BUILT_IN[_VCORES])
    gpus = s.whole(_GPUS, BUILT_IN[_GPUS])
    threshold = s.whole(_THRESHOLD, BUILT_IN[_THRESHOLD])
    policy = _choice(s, _POLICY, FAILURE_POLICIES, BUILT_IN[_POLICY])
    if policy == "ignore" and s.name not in (Role.WORKER, EVALUATOR):
        value, where = s.find(_POLICY) or (None, "")
        s.c.add(where, f"a {s.name} cannot be ignored: the job cannot go on without it",
                'use "restart" or "fatal"; "ignore" is for workers and the evaluator.',
                value=value)
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
    return Component(name=s.name, priority=priority, instances=instances, memory_mb=memory,
                     vcores=vcores, failure_threshold=threshold, label=label, gpus=gpus,
                     failure_policy=policy)


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
            key_path("components", s.name, _PRIORITY),
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
