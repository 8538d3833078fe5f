"""The rules a job keeps that the job files' checks (tfyarn/jobconfig/) and the spec
(jobplan.py) both enforce, each written once: a rule's ``Misfit`` is the user's problem (the
file's key, the fix) there and the spec's ``SpecError`` in jobplan.py. A rule of one setting's value
alone (bounds, choices, seconds) is its declaration's (settings.Setting.refusal).

Only the standard library here: this module runs inside YARN containers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from appmaster.common import settings
from appmaster.common.frameworks.base import Misfit
from appmaster.common.vocabulary import FailurePolicy, Role

_FLAG = re.compile(r"--[A-Za-z0-9_-]+")


def is_work_dir_flag(flag: str) -> bool:
    """A flag a script can read its work dir from (two dashes, then letters, digits, _ or
    -), or "" for none."""
    return not flag or bool(_FLAG.fullmatch(flag))


def is_plain_name(name: str) -> bool:
    """A name a data entry can have in the task's data dir: no "/", not starting with "."
    (no ".", "..", or hidden file)."""
    return bool(name) and "/" not in name and not name.startswith(".")


# Why a stall timeout spans two progress reports at least: a stall is seen only from the
# agents' reports, and a step just after one read is seen an interval late.
STALLED_BETWEEN_REPORTS = "a task would be judged stalled between two of its progress reports"


def stall_timeout_misfit(role: str, setting: settings.Setting, timeout_s: float,
                         interval_s: float) -> Misfit | None:
    """A stall timeout (the job's, ``role`` "", or a role's own) below twice the progress
    interval. Its fix ends where the caller says where the interval is written."""
    if timeout_s >= 2 * interval_s:
        return None
    return Misfit(role, setting,
                  f"below twice {settings.PROGRESS_INTERVAL.key} ({interval_s:g} s): "
                  f"{STALLED_BETWEEN_REPORTS}", f'give at least "{2 * interval_s:g}" seconds, '
                  f"or a shorter {settings.PROGRESS_INTERVAL.key}", f"{timeout_s:g}")


def failure_policy_misfit(role: str, policy: str) -> Misfit | None:
    """A role the job cannot go on without, its failures to be ignored."""
    if policy != FailurePolicy.IGNORE or role in (Role.WORKER, Role.EVALUATOR):
        return None
    return Misfit(role, settings.FAILURE_POLICY,
                  f"a {role} cannot be ignored: the job cannot go on without it",
                  'use "restart" or "fatal"; "ignore" is for workers and the evaluator.', policy)


def priority_misfit(role: str, priority: int, taken: dict[int, str]) -> Misfit | None:
    """A component given a priority another already has: YARN tells a job's container
    requests apart by their priority. ``taken``: the priorities seen so far, by component;
    ``role``'s is added when it is free."""
    other = taken.setdefault(priority, role)
    if other == role:
        return None
    return Misfit(role, settings.PRIORITY, f"{other} and {role} both have priority {priority}",
                  "give each component its own priority.", str(priority))


# The roles a job has at most one of, with why
_AT_MOST_ONE = {Role.TENSORBOARD: "at most 1 TensorBoard per job",
                Role.EVALUATOR: "at most 1 evaluator per job: it evaluates every checkpoint "
                                "the chief saves, one after the other"}


def instances_misfit(role: str, instances: int) -> Misfit | None:
    """A role a job has one of (the chief) or at most one of (the TensorBoard, the
    evaluator) given more, or the chief none."""
    if role == Role.CHIEFWORKER and instances != 1:
        return Misfit(role, settings.INSTANCES, "there must be exactly 1 chief worker",
                      'set it to "1"; add more containers to "worker" instead.', str(instances))
    if role in _AT_MOST_ONE and instances > 1:
        return Misfit(role, settings.INSTANCES, _AT_MOST_ONE[role],
                      'set it to "1" (or "0" for none).', str(instances))
    return None


class _Named(Protocol):
    @property
    def name(self) -> str: ...


Entry = TypeVar("Entry", bound=_Named)


def repeated_names(entries: Sequence[Entry]) -> list[tuple[Entry, Entry]]:
    """Each data entry (jobplan.DataEntry) whose name an earlier one has, with that earlier
    one: each is seen in the data dir under its own name."""
    first: dict[str, Entry] = {}
    return [(entry, first[entry.name]) for entry in entries
            if first.setdefault(entry.name, entry) is not entry]
