"""Slider's resources.json keys beyond its TensorFlow package's: placement, node failures,
escalation, the failure window and log aggregation, as Slider documented them; and the keys
tfyarn refuses, each with why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from appmaster.common.jobplan import JobPlan, RolePlan, SpecError
from tfyarn.jobconfig import Defaults, JobConfig, JobConfigError, load_job
from tfyarn.jobconfig.overrides import parse_set
from tfyarn.jobconfig.sliderkeys import REFUSED


def _resources(global_: dict[str, Any] | None = None, **ps: Any) -> dict[str, Any]:
    return {"global": global_ or {}, "components": {
        "ps": {"yarn.role.priority": "1", "yarn.component.instances": "3", **ps},
        "worker": {"yarn.role.priority": "2", "yarn.component.instances": "2"}}}


def _load(tmp_path: Path, doc: dict[str, Any], sets: tuple[str, ...] = ()) -> JobConfig:
    (tmp_path / "train.py").write_text("")
    (tmp_path / "resources.json").write_text(json.dumps(doc))
    (tmp_path / "appConfig.json").write_text(json.dumps({"global": {
        "site.global.user.scripts.entry": "train.py"}}))
    return load_job(tmp_path / "resources.json", tmp_path / "appConfig.json",
                    defaults=Defaults(), overrides=[parse_set(s) for s in sets])


def _refusal(tmp_path: Path, doc: dict[str, Any]) -> str:
    with pytest.raises(JobConfigError) as info:
        _load(tmp_path, doc)
    return str(info.value)


def _role(job: JobConfig, name: str) -> RolePlan:
    role = job.spec.role(name)
    assert role is not None
    return role


def test_placement_keys_are_honoured_per_component_or_from_global(tmp_path: Path) -> None:
    job = _load(tmp_path, _resources(
        {"yarn.placement.escalate.seconds": "12"},
        **{"yarn.component.placement.policy": "4", "yarn.node.failure.threshold": "2"}))
    ps, worker = _role(job, "ps"), _role(job, "worker")
    assert (ps.placement_policy, ps.node_failure_threshold, ps.placement_escalate_seconds) == (
        4, 2, 12.0)
    assert (worker.placement_policy, worker.node_failure_threshold,
            worker.placement_escalate_seconds) == (0, None, 12.0)


def test_the_plan_carries_them_to_the_appmaster(tmp_path: Path) -> None:
    job = _load(tmp_path, _resources(
        {"yarn.log.include.patterns": "stdout| .*\\.log ", "yarn.log.interval": "3600",
         "yarn.container.failure.window.minutes": "30"},
        **{"yarn.component.placement.policy": "5"}))
    again = JobPlan.from_json(job.spec.to_json())
    assert again == job.spec
    assert again.log_include_patterns == ("stdout", ".*\\.log")
    assert (again.log_exclude_patterns, again.log_interval_seconds) == ((), 3600.0)
    assert again.failure_window_seconds == 1800.0  # hours not written: 0, not Slider's 6
    assert _role(job, "ps").placement_policy == 5


@pytest.mark.parametrize(("written", "seconds"), [
    ({}, 6 * 3600.0),
    ({"yarn.container.failure.window.days": "1", "yarn.container.failure.window.hours": "2"},
     26 * 3600.0),
    ({"yarn.container.failure.window.hours": "0"}, 0.0),
])
def test_the_failure_window_is_one_duration(tmp_path: Path, written: dict[str, str],
                                            seconds: float) -> None:
    assert _load(tmp_path, _resources(written)).spec.failure_window_seconds == seconds


@pytest.mark.parametrize(("value", "says"), [
    ("3", "contradict each other"),
    ("7", "contradict each other"),
    ("16", "not a combination Slider defined"),
    ("8", "not a combination Slider defined"),
    ("anti", "not a whole number"),
])
def test_a_placement_policy_slider_did_not_define_is_refused(tmp_path: Path, value: str,
                                                             says: str) -> None:
    text = _refusal(tmp_path, _resources(**{"yarn.component.placement.policy": value}))
    assert 'components.ps."yarn.component.placement.policy"' in text
    assert says in text and "4 ANTI_AFFINITY_REQUIRED" in text


def test_bad_thresholds_seconds_and_patterns_are_refused_with_the_key(tmp_path: Path) -> None:
    text = _refusal(tmp_path, _resources(
        {"yarn.log.exclude.patterns": "ok|(unclosed", "yarn.log.interval": "soon",
         "yarn.container.failure.window.hours": "-1"},
        **{"yarn.node.failure.threshold": "0", "yarn.placement.escalate.seconds": "0"}))
    for key, says in (('components.ps."yarn.node.failure.threshold"', "at least 1"),
                      ('components.ps."yarn.placement.escalate.seconds"', "positive number"),
                      ('global."yarn.log.exclude.patterns"', '"(unclosed" is not a regular'),
                      ('global."yarn.log.interval"', "positive number"),
                      ('global."yarn.container.failure.window.hours"', "between 0")):
        line = next((x for x in text.splitlines() if key in x), "")
        assert says in line and "Fix:" in line, (key, text)


def test_the_whole_jobs_keys_belong_to_global(tmp_path: Path) -> None:
    text = _refusal(tmp_path, _resources(**{"yarn.log.include.patterns": "stdout"}))
    assert 'components.ps."yarn.log.include.patterns"' in text and 'move it to "global"' in text


def test_slider_keys_tfyarn_does_not_take_say_why(tmp_path: Path) -> None:
    for key, why in REFUSED.items():
        text = _refusal(tmp_path, _resources(**{key: "1"}))
        assert f'components.ps."{key}"' in text and why in text, key


def test_an_unknown_key_gets_a_close_one(tmp_path: Path) -> None:
    text = _refusal(tmp_path, _resources({"yarn.node.failure.treshold": "2"}))
    assert 'did you mean "yarn.node.failure.threshold"' in text
    text = _refusal(tmp_path, _resources(**{"yarn.component.placement.polcy": "4"}))
    assert 'did you mean "yarn.component.placement.policy"' in text


def test_the_command_line_sets_the_whole_jobs_keys(tmp_path: Path) -> None:
    job = _load(tmp_path, _resources(), sets=("yarn.container.failure.window.minutes=10",
                                              "ps.yarn.component.placement.policy=4"))
    assert job.spec.failure_window_seconds == 600.0 and _role(job, "ps").placement_policy == 4


def test_the_spec_itself_refuses_what_slider_never_defined() -> None:
    with pytest.raises(SpecError):
        RolePlan(name="ps", instances=1, priority=1, memory_mb=1024, vcores=1, placement_policy=3)
    with pytest.raises(SpecError):
        RolePlan(name="ps", instances=1, priority=1, memory_mb=1024, vcores=1,
                 node_failure_threshold=0)
