"""The dry run is drawn from the plan: every field of JobPlan and RolePlan shows, said in
words by a line of its own or, as it is, in the rest of the plan; a field added to the plan
shows without a line written for it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.vocabulary import Role
from tfyarn.jobconfig import Defaults, load_job
from tfyarn.submission.plan import (
    JOB_SCOPES,
    ROLE_FIELDS,
    AppSpecExtras,
    build_plan,
    field_label,
    format_lines,
    format_plan,
    plan_document,
    read_views,
)

REPO = Path(__file__).resolve().parent.parent
JOB_FIELDS = [f.name for f in dataclasses.fields(JobPlan) if f.name not in ROLE_FIELDS]
ROLE_PLAN_FIELDS = [f.name for f in dataclasses.fields(RolePlan)]


@pytest.fixture(scope="module")
def seed_plan() -> tuple:
    job = load_job(str(REPO / "resources.json"), str(REPO / "appConfig.json"),
                   defaults=Defaults())
    return job, build_plan(job)


def shown(document: dict) -> tuple[set[str], list[set[str]], str]:
    """(job fields said in words, each role's and TensorBoard's, the whole dry run's text)."""
    job, roles = read_views(document)
    format_lines(job, roles)
    board = dict.__getitem__(job, "tensorboard")
    return job.read, [role.read for role in [*roles, board]], format_plan(document)


def test_every_plan_field_is_in_the_dry_run(seed_plan: tuple) -> None:
    job, plan = seed_plan
    board = RolePlan(Role.TENSORBOARD, instances=1, priority=9, memory_mb=1024, vcores=1)
    document = plan_document(job, dataclasses.replace(plan, tensorboard=board), AppSpecExtras())
    in_words, roles_in_words, text = shown(document)
    missing = [name for name in JOB_FIELDS if name not in document or (
        name not in in_words and f"{field_label(name, JOB_SCOPES)}=" not in text)]
    assert [role["name"] for role in document["roles"]] == ["ps", "chiefworker", "worker"]
    for role, said in zip([*document["roles"], document["tensorboard"]], roles_in_words,
                          strict=True):
        missing += [f"{role['name']}.{name}" for name in ROLE_PLAN_FIELDS if name not in role or (
            name not in said and f"{field_label(name, ('component',))}=" not in text)]
    assert not missing, f"plan fields the dry run does not show: {missing}"
    # what the dry run once left out: the framework, processes per container, placement
    assert "  framework: tensorflow, one process in each container" in text
    assert "yarn.component.placement.policy=0" in text


def test_a_field_added_to_the_plan_shows_without_a_line_of_its_own(seed_plan: tuple) -> None:
    job, plan = seed_plan
    new_role = dataclasses.make_dataclass("NewRolePlan", [("spare_wheels", int, 3)],
                                          bases=(RolePlan,), frozen=True)
    new_plan = dataclasses.make_dataclass("NewJobPlan", [("coffee_breaks", int, 2)],
                                          bases=(JobPlan,), frozen=True)
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(JobPlan)}
    fields["roles"] = tuple(new_role(**role.to_dict()) for role in plan.roles)
    document = plan_document(job, new_plan(**fields), AppSpecExtras())
    assert document["coffee_breaks"] == 2
    assert all(role["spare_wheels"] == 3 for role in document["roles"])
    text = format_plan(document)
    assert "coffee_breaks=2" in text
    assert "ps, chiefworker, worker: " in text and "spare_wheels=3" in text


def test_a_field_no_line_says_is_in_the_rest(seed_plan: tuple) -> None:
    """The rest of the plan names a field by the key that declares it, with its value."""
    job, plan = seed_plan
    text = format_plan(plan_document(job, dataclasses.replace(plan, heartbeat_timeout_s=42.0),
                                     AppSpecExtras()))
    rest = text[text.index("The rest of the plan"):]
    assert "site.global.task.heartbeat.timeout=42.0" in rest
    assert "framework" not in rest  # said in words above
