"""The settings' declarations (appmaster/common/settings.py) are what the job files' checks, the
parsed job, the plan and the docs' key reference use: each is checked against them here."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from appmaster.common import settings as declared
from appmaster.common.jobplan import JobPlan, SpecError
from tfyarn.jobconfig import Defaults, JobConfigError, appconfig, load_job, resources
from tfyarn.jobconfig.reference import PAGE, render

ROOT = Path(__file__).resolve().parent.parent


def test_the_key_reference_is_current() -> None:
    assert (ROOT / PAGE).read_text() == render(), (
        f"{PAGE} is stale: run `python -m tfyarn.jobconfig.reference > {PAGE}`")


def test_the_checks_accept_exactly_the_declared_keys() -> None:
    assert set(appconfig.APP_KEYS) == {s.key for s in declared.settings(declared.APP_SCOPE)}
    assert set(resources.RESOURCE_KEYS) == {
        s.key for s in declared.settings(declared.COMPONENT_SCOPE)}
    assert set(resources.APPMASTER_KEYS) == {
        s.key for s in declared.settings(declared.APPMASTER_SCOPE)}


def test_every_declaration_is_complete() -> None:
    for s in declared.SETTINGS:
        assert s.meaning and s.kind and (s.field or s.scope == declared.APP_SCOPE), s.key
        if s.kind == "whole":
            assert s.low is not None and s.noun and s.example, s.key
        if s.kind == "choice":
            assert s.default in s.choices, s.key


def _load(job_dir: Path, worker: dict[str, Any] | None = None,
          app: dict[str, Any] | None = None):
    job_dir.mkdir(exist_ok=True)
    (job_dir / "train.py").write_text("")
    (job_dir / "resources.json").write_text(json.dumps({"components": {
        "worker": {"yarn.role.priority": "1", **(worker or {})}}}))
    (job_dir / "appConfig.json").write_text(json.dumps({"global": {
        "site.global.user.scripts.entry": "train.py", **(app or {})}}))
    return load_job(job_dir / "resources.json", job_dir / "appConfig.json",
                    defaults=Defaults())


@pytest.fixture
def minimal_job(tmp_path: Path):
    return _load(tmp_path)


# A value each declaration refuses, of the kinds the job files and the plan both check.
REFUSED = [(declared.SUCCESS_POLICY, "first"), (declared.FRAMEWORK, "mxnet"),
           (declared.FAILURE_POLICY, "retry"), (declared.PROGRESS_INTERVAL, 0),
           (declared.PLACEMENT_ESCALATE, -1), (declared.STALL_TIMEOUT_ROLE, 0),
           (declared.AM_MAX_ATTEMPTS, 11), (declared.APPLICATION_PRIORITY, -1)]


@pytest.mark.parametrize(("s", "value"), REFUSED, ids=lambda v: getattr(v, "key", str(v)))
def test_the_job_files_and_the_plan_refuse_a_value_in_the_same_words(
        tmp_path: Path, minimal_job, s: declared.Setting, value: Any) -> None:
    """One rule, the declaration's (Setting.refusal): the user's problem at the key and the
    spec's error say the same."""
    refusal = s.refusal(value)
    assert refusal
    component = s.scope == declared.COMPONENT_SCOPE
    with pytest.raises(JobConfigError) as problems:
        _load(tmp_path / "given", **{"worker" if component else "app": {s.key: value}})
    assert f'"{s.key}"' in str(problems.value) and refusal in str(problems.value)
    spec = minimal_job.spec
    with pytest.raises(SpecError, match=re.escape(f"{s.key} ({s.field or 'extra'}) {refusal}")):
        if component:
            dataclasses.replace(spec, roles=tuple(
                dataclasses.replace(role, **{s.field: value}) for role in spec.roles))
        elif s.field:
            dataclasses.replace(spec, **{s.field: value})
        else:
            dataclasses.replace(spec, extra={**spec.extra, s.key: value})


def test_a_job_that_says_nothing_gets_the_declared_defaults(minimal_job) -> None:
    worker = minimal_job.spec.role("worker")
    for s in declared.settings(declared.COMPONENT_SCOPE):
        if s.default is not None:
            assert getattr(worker, s.field) == s.default, s.key
    for s in declared.settings(declared.APPMASTER_SCOPE):
        assert getattr(minimal_job.spec, s.field) == s.default, s.key
    for s in declared.settings(declared.APP_SCOPE):
        if s.default is not None:
            assert minimal_job.spec.value(s) == s.default, s.key
    assert minimal_job.spec.work_dir_flag == "--work_dir"  # worked out by its declaration


def test_the_plans_defaults_are_the_declared_ones() -> None:
    plan = JobPlan(name="n", entry="e.py", python="python3", work_dir="w", roles=())
    for s in declared.settings(declared.APP_SCOPE):
        if s.default is not None and hasattr(plan, s.field):
            assert getattr(plan, s.field) == s.default, s.key


def test_every_setting_has_one_home(minimal_job) -> None:
    """Each declaration's field is the spec's (which travels to the AppMaster) or, for what
    only the submitting machine knows, the client's facts beside it: never both."""
    spec, client = minimal_job.spec, minimal_job.client
    for s in declared.SETTINGS:
        if not s.field:
            continue  # carried by key in JobPlan.extra
        homes = [hasattr(spec if s.scope == declared.APP_SCOPE else spec, s.field),
                 hasattr(client, s.field)]
        if s.scope == declared.COMPONENT_SCOPE:
            homes = [hasattr(spec.role("worker"), s.field), False]
        assert homes.count(True) == 1, s.key


def test_the_plan_is_the_spec_completed(minimal_job) -> None:
    """What travels is the job's own spec: the plan changes only what is decided at submit."""
    from tfyarn.submission.plan import build_plan

    plan = build_plan(minimal_job)
    assert plan.planned and not minimal_job.spec.planned
    decided = {"python", "work_dir", "roles", "tensorboard", "evaluator", "script_args",
               "data_dir", "data", "principal"}
    for name in set(JobPlan.__dataclass_fields__) - decided:
        assert getattr(plan, name) == getattr(minimal_job.spec, name), name


ONE_DECLARATION = """
import json, sys
from appmaster.common import settings
WARMUP = settings.Setting(
    settings.APP_PREFIX + "user.warmup.timeout", settings.APP_SCOPE, "seconds",
    "how long the script may warm up", default=30.0, example="30")
settings.SETTINGS = (*settings.SETTINGS, WARMUP)  # as if written in settings.py

from appmaster.common.jobplan import JobPlan
from tfyarn.jobconfig import Defaults, load_job
from tfyarn.submission.api import SubmitOptions
from tfyarn.submission.plan import AppSpecExtras, build_plan, plan_document

def planned(*sets):
    job = load_job(sys.argv[1], sys.argv[2], defaults=Defaults(),
                   overrides=SubmitOptions(sets=sets).overrides())
    plan = JobPlan.from_json(build_plan(job).to_json())  # as the AppMaster reads it
    return plan.value(WARMUP), plan_document(job, plan, AppSpecExtras())["settings"]

print(json.dumps([planned(), planned(WARMUP.key + "=45")]))
"""


def test_a_setting_added_by_one_declaration_reaches_the_plan_and_the_dry_run(
        minimal_job, tmp_path: Path) -> None:
    """Nothing but the declaration: the files' checks, --set, the AppMaster's plan and the
    dry run's origins take it (in a fresh interpreter, where it is declared before use)."""
    import subprocess
    import sys

    files = [str(minimal_job.client.resources_path), str(minimal_job.client.app_config_path)]
    done = subprocess.run([sys.executable, "-c", ONE_DECLARATION, *files], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    (default, _), (given, dry_settings) = json.loads(done.stdout)
    assert (default, given) == (30.0, 45.0)
    assert dry_settings["site.global.user.warmup.timeout"] == {
        "value": "45", "from": "--set site.global.user.warmup.timeout (command line)"}
