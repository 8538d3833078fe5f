"""The job's one typed spec (appmaster/common/jobplan.py), type by type as skein tests its
specifications: built plainly, its invariants refused at construction, and the round trip
through to_dict/from_dict (and JSON, as the containers read it) giving the same value."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from typing import Any

import pytest

from appmaster.common import settings
from appmaster.common.jobplan import DataEntry, JobPlan, RolePlan, SpecError
from appmaster.common.vocabulary import FailurePolicy, Role, SuccessPolicy


def role(name: str = "worker", **changes: Any) -> RolePlan:
    given = dict(name=name, instances=2, priority=3, memory_mb=1024, vcores=1)
    return RolePlan(**{**given, **changes})


def plan(**changes: Any) -> JobPlan:
    given = dict(name="job", entry="train.py", python="python3", work_dir="hdfs:///w",
                 roles=(role("ps", priority=1, instances=1), role()))
    return JobPlan(**{**given, **changes})


def test_data_entry() -> None:
    entry = DataEntry("hdfs:///d/mnist.tgz", "mnist", True)
    assert str(entry) == "hdfs:///d/mnist.tgz#mnist"
    assert DataEntry.from_dict(json.loads(json.dumps(entry.to_dict()))) == entry
    for url, name in (("", "x"), ("hdfs:///d", ""), ("hdfs:///d", "a/b"), ("hdfs:///d", ".."),
                      ("hdfs:///d", ".x")):  # as the job files refuse them (datasets.py)
        with pytest.raises(SpecError):
            DataEntry(url, name, False)


def test_role_plan() -> None:
    worker = role(gpus=1, label="gpu", failure_threshold=-1, failure_policy="ignore")
    assert worker.name is Role.WORKER and worker.failure_policy is FailurePolicy.IGNORE
    assert RolePlan.from_dict(json.loads(json.dumps(worker.to_dict()))) == worker
    assert worker.to_dict()["failure_policy"] == "ignore"  # plain JSON, its word's text
    assert not role().may_restart(1)  # the first failure fails it (threshold 0)
    assert role(failure_threshold=2).may_restart(2) and not role(failure_threshold=2).may_restart(3)
    for changes in ({"name": "driver"}, {"instances": -1}, {"priority": 0},
                    {"memory_mb": 0}, {"vcores": True}, {"failure_threshold": -2},
                    {"failure_policy": "retry"}, {"gpus": 1.5}):
        with pytest.raises(SpecError):
            role(**changes)


def test_job_plan_round_trip() -> None:
    full = plan(script_args=("--lr", "0.1"), env={"A": "1"}, secrets=("db",),
                tensorboard=role("tensorboard", instances=1, priority=9),
                evaluator=role("evaluator", instances=1, priority=4),
                data=(DataEntry("hdfs:///d/x.zip", "x", True),), docker_mounts=("/a:/b:ro",),
                layers_trust=("hadoop",), deadline_s=60.0, success_policy="all-workers",
                am_label="gpu", view_acl="alice ml", principal="alice@EXAMPLE",
                extra={"site.global.user.warmup.timeout": 45.0})
    assert JobPlan.from_dict(full.to_dict()) == full
    assert JobPlan.from_json(full.to_json()) == full
    assert full.success_policy is SuccessPolicy.ALL_WORKERS
    assert [r.name for r in full.components] == ["ps", "worker", "evaluator", "tensorboard"]
    assert plan().planned and not plan(python=None).planned


@pytest.mark.parametrize("changes", [
    {"name": ""},
    {"entry": ""},
    {"success_policy": "first"},
    {"roles": (role(), role("ps", priority=1, instances=1))},  # not in priority order
    {"roles": (role("tensorboard", instances=1),)},  # beside the cluster, not in it
    {"roles": (role(instances=0),)},  # a role without tasks is not in the spec
    {"roles": (role("ps", priority=3, instances=1), role())},  # two with one priority
    {"evaluator": role("tensorboard", instances=1, priority=9)},
    {"registration_timeout_s": 0},
    {"deadline_s": -1.0},
    {"am_max_attempts": 0},
    {"work_dir_flag": "model_dir"},
    {"work_dir_flag": "--model dir"},  # as the job files refuse it (appconfig.py)
    {"data": (DataEntry("hdfs:///a", "x", False), DataEntry("hdfs:///b", "x", False))},
])
def test_job_plan_invariants(changes: dict[str, Any]) -> None:
    with pytest.raises(SpecError):
        plan(**changes)


def test_a_plan_without_interpreter_or_work_dir_does_not_run(tmp_path, monkeypatch) -> None:
    """The containers read only a planned job: the checked job's spec lacks both."""
    job_file = tmp_path / "tfyarn-job.json"
    monkeypatch.setenv("TFYARN_JOB_FILE", str(job_file))
    job_file.write_text(plan(work_dir=None).to_json())
    with pytest.raises(SpecError, match="not a planned job"):
        JobPlan.from_container()
    job_file.write_text(plan().to_json())
    assert JobPlan.from_container() == plan()


def _spec_with(s: settings.Setting, value: Any) -> RolePlan | JobPlan:
    """A role (a component's setting) or a plan holding ``value`` for the setting ``s``."""
    if s.scope == settings.COMPONENT_SCOPE:
        return role(**{s.field: value})
    return plan(**{s.field: value}) if s.field else plan(extra={s.key: value})


def _refused_values(s: settings.Setting) -> list[Any]:
    """Values of its kind that the declaration ``s`` refuses."""
    if s.kind == "whole":
        assert s.low is not None
        return [s.low - 1, *([s.high + 1] if s.high is not None else []), 2.5, True]
    if s.kind == "seconds":
        return [0, -1.0, float("nan"), "30"]
    if s.kind == "policy":
        return [next(i for i in range(10) if str(i) not in s.choices), s.choices[0]]
    return ["nonsense"]


# The bounded or chosen settings each spec field holds: every declaration read by the plan,
# from the declarations themselves (not from what the plan chose to check).
CHECKED = [s for s in settings.SETTINGS if s.kind in ("whole", "seconds", "choice", "policy")
           and s.field in {f.name for f in fields(RolePlan if s.scope == settings.COMPONENT_SCOPE
                                                  else JobPlan)} | {""}
           and s not in settings.FAILURE_WINDOW]  # three keys' sum, checked by JobPlan itself


@pytest.mark.parametrize("s", CHECKED, ids=lambda s: f"{s.scope}:{s.key}")
def test_the_plan_refuses_what_each_declaration_refuses_naming_its_key(s: settings.Setting) -> None:
    """The plan and the job files agree: the spec admits a setting's declared bounds and
    choices, and refuses beyond them, naming the key."""
    for value in _refused_values(s):
        with pytest.raises(SpecError, match=re.escape(f"{s.key} ({s.field or 'extra'}) must ")):
            _spec_with(s, value)
    admitted: list[Any] = [s.default]  # a choice's
    if s.kind == "whole":
        admitted = [s.low, *([s.high] if s.high is not None else [])]
    elif s.kind == "seconds":
        admitted = [float(s.example)]
    elif s.kind == "policy":
        admitted = [int(choice) for choice in s.choices]
    for value in admitted:
        _spec_with(s, value)


# Numeric plan fields that no one declaration bounds, each with the spec's own check.
UNDECLARED_NUMBERS = {(JobPlan, "failure_window_seconds")}


@pytest.mark.parametrize("spec", [RolePlan, JobPlan])
def test_every_numeric_plan_field_is_bounded_by_a_declaration(spec: type) -> None:
    """A number added to the plan gets a declaration (its bounds, the job files' too) or is
    named here with the check the spec gives it: none is left unchecked."""
    declared = {s.field for s in CHECKED}
    numbers = {f.name for f in fields(spec) if re.search(r"\b(int|float)\b", str(f.type))}
    assert numbers - declared == {name for owner, name in UNDECLARED_NUMBERS if owner is spec}


def test_the_plan_refuses_a_stall_timeout_within_two_progress_reports() -> None:
    """The job files' rule (jobrules.stall_timeout_misfit), the job's timeout and each role's."""
    below = f"below twice {settings.PROGRESS_INTERVAL.key} (5 s)"
    with pytest.raises(SpecError, match=re.escape(f"{settings.STALL_TIMEOUT.key} 9: {below}")):
        plan(stall_timeout_s=9.0)
    ps = role("ps", priority=1, instances=1)
    with pytest.raises(SpecError, match=re.escape(
            f"worker: {settings.STALL_TIMEOUT_ROLE.key} 2: {below}")):
        plan(roles=(ps, role(stall_timeout_s=2.0)))
    with pytest.raises(SpecError, match=f"evaluator: {re.escape(settings.STALL_TIMEOUT_ROLE.key)}"):
        plan(evaluator=role("evaluator", instances=1, priority=4, stall_timeout_s=9.0))
    plan(stall_timeout_s=10.0, roles=(ps, role(stall_timeout_s=10.0)))  # two reports exactly
    plan(progress_interval_s=1.0, stall_timeout_s=2.0, roles=(ps, role(stall_timeout_s=2.0)))


def test_the_plan_names_the_data_entries_that_share_a_name() -> None:
    first, second = DataEntry("hdfs:///a", "x", False), DataEntry("hdfs:///b", "x", True)
    with pytest.raises(SpecError, match="hdfs:///b#x: the name 'x' is hdfs:///a#x's too"):
        plan(data=(first, DataEntry("hdfs:///c", "y", False), second))


@pytest.mark.parametrize(("name", "instances"), [("chiefworker", 2), ("evaluator", 2),
                                                 ("tensorboard", 3)])
def test_the_plan_has_one_chief_and_at_most_one_evaluator_and_tensorboard(
        name: str, instances: int) -> None:
    """As the job files say (jobrules.instances_misfit), naming the key."""
    one = role(name, instances=instances, priority=2 if name == "chiefworker" else 9)
    given = {"roles": (role("ps", priority=1, instances=1), one, role())} if name == "chiefworker" \
        else {name: one}
    with pytest.raises(SpecError, match=re.escape(f"{name}: {settings.INSTANCES.key} {instances}")):
        plan(**given)


@pytest.mark.parametrize("name", ["ps", "chiefworker", "tensorboard"])
def test_the_plan_ignores_the_failures_of_workers_and_the_evaluator_alone(name: str) -> None:
    """As the job files say (jobrules.failure_policy_misfit), naming the key."""
    with pytest.raises(SpecError, match=re.escape(
            f"{name}: {settings.FAILURE_POLICY.key} ignore: a {name} cannot be ignored")):
        role(name, failure_policy="ignore")
    assert role("evaluator", failure_policy="ignore").failure_policy is FailurePolicy.IGNORE


def test_the_plan_gives_each_component_a_priority_of_its_own() -> None:
    """As the job files say (jobrules.priority_misfit), naming the key and both components."""
    with pytest.raises(SpecError, match=re.escape(
            f"evaluator: {settings.PRIORITY.key} 3: worker and evaluator both have priority 3")):
        plan(evaluator=role("evaluator", instances=1, priority=3))
    assert plan(evaluator=role("evaluator", instances=1, priority=4)).evaluator
