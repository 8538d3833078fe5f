"""Slider's resources.json keys beyond those of its TensorFlow package: the checks of their
values (placement, escalation, log patterns), and the keys tfyarn does not take, each with
why: the one table the job files' checks and the key reference (docs/reference/settings.md)
read. Every other key Slider documented is a declared setting (appmaster/common/settings.py)."""

from __future__ import annotations

import re

from appmaster.common.settings import (
    AM_MAX_ATTEMPTS,
    ANTI_AFFINITY_REQUIRED,
    ANYWHERE,
    FAILURE_THRESHOLD,
    GPUS,
    MEMORY,
    PLACEMENT_POLICY,
    STRICT,
    VCORES,
    Setting,
)
from tfyarn.jobconfig.documents import Checker, Found, as_int

_WHOLE_CLUSTER = ("a TensorFlow cluster needs every one of its tasks, so the job cannot run on "
                  "with a share of them and a health percentage has nothing to decide; a lost "
                  f"task is replaced within {FAILURE_THRESHOLD.key}, in the failure window")

REFUSED: dict[str, str] = {
    "component.unique.names": (
        "every task already has its own name, role:index (ps:0, worker:1): TensorFlow's "
        "cluster spec is written with those names"),
    "yarn.resource.normalization.enabled": (
        "tfyarn never shrinks a request to fit the cluster: pre-flight refuses a container "
        "larger than the queue or any NodeManager can hold, so there is nothing to turn off"),
    "yarn.disks.count-per-instance": (
        "YARN has no disk resource a container can ask for (Slider never used this key "
        "either); each task writes to its container's own directory"),
    "yarn.disk.size": (
        "YARN has no disk resource a container can ask for (Slider never used this key "
        "either); each task writes to its container's own directory"),
    "yarn.resource-profile-name": (
        "the AppMaster asks for each container's memory, vcores and GPUs as written: give "
        f"{MEMORY.key}, {VCORES.key} and {GPUS.key} instead"),
    "yarn.container.health.threshold.percent": _WHOLE_CLUSTER,
    "yarn.container.health.threshold.poll.frequency.secs": _WHOLE_CLUSTER,
    "yarn.container.health.threshold.window.secs": _WHOLE_CLUSTER,
    "yarn.container.health.threshold.init.delay.secs": _WHOLE_CLUSTER,
    "yarn.resourcemanager.am.retry-count-window-ms": (
        "skein's client cannot give YARN an AppMaster attempt window; "
        f"{AM_MAX_ATTEMPTS.key} (appConfig.json) counts every attempt of the job"),
}


def why_refused(key: str) -> str | None:
    """Why tfyarn does not take this key of Slider's; None: not one of them."""
    return REFUSED.get(key)


def placement_policy(c: Checker, found: Found) -> int | None:
    """Slider's bit mask, as a combination it defined; None when wrong."""
    if found is None:
        return PLACEMENT_POLICY.default
    value, where = found
    number = as_int(value)
    if number is not None and str(number) in PLACEMENT_POLICY.choices:
        return number
    if number is not None and number >= 0 and number & STRICT and number & ANYWHERE:
        why = (f"{STRICT} (STRICT: back on the host it ran on) and {ANYWHERE} (ANYWHERE: no "
               "placement history) contradict each other")
    elif number is not None and number >= 0:
        why = ("not a combination Slider defined (16 is Slider's own mark for its AppMaster, "
               "8 and above mean nothing)")
    else:
        why = "not a whole number"
    c.add(where, why, f'give 0 (the default), {STRICT} STRICT, {ANYWHERE} ANYWHERE, '
          f'{ANTI_AFFINITY_REQUIRED} ANTI_AFFINITY_REQUIRED, or {ANTI_AFFINITY_REQUIRED} plus '
          f'{STRICT} or {ANYWHERE} ("5", "6"), e.g. "{PLACEMENT_POLICY.example}".', value=value)
    return None


def patterns(c: Checker, s: Setting, found: Found) -> tuple[str, ...] | None:
    """Slider's log patterns: regular expressions joined by "|", each checked; None when
    wrong."""
    if found is None:
        return ()
    value, where = found
    if not isinstance(value, str):
        c.add(where, "must be a string of regular expressions joined by \"|\"",
              f'write e.g. "{s.example}".', value=value)
        return None
    found_patterns = tuple(p.strip() for p in value.split("|") if p.strip())
    for pattern in found_patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            c.add(where, f'"{pattern}" is not a regular expression ({error})',
                  'write what is meant literally in brackets (e.g. "[.]" for a dot; ".*" is any '
                  f'text), e.g. "{s.example}".', value=value)
            return None
    return found_patterns
