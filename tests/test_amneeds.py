"""What a job asks of tfyarn's patched skein AppMaster (tfyarn/submission/amneeds.py): where
the package has only skein's stock one, such a job is refused before anything is submitted,
with the reason and the fix; the dry run and the job page say which AppMaster runs the job."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from jobtools import APPS, REPO, prepare_job

from appmaster.common.jobplan import PLAN_FILE
from appmaster.common.registry import APPMASTER_BUILD_ENV
from appmaster.page.jobpage import render_page
from tfyarn.cli.main import main
from tfyarn.hadoop import amjar
from tfyarn.jobconfig import load_job
from tfyarn.submission import amneeds
from tfyarn.submission.appspec import application_spec
from tfyarn.submission.plan import AppSpecExtras, build_plan

PATCHED = amjar.AppMasterJar(Path("/pkg/am/patched.jar"), True)
STOCK = amjar.AppMasterJar(Path("/site/skein/java/skein.jar"), False, "built without it",
                           "rebuild it")


def _job(tmp_path: Path, components: dict[str, dict[str, str]] | None = None,
         settings: dict[str, str] | None = None):
    resources, app_config = prepare_job(tmp_path, scripts_dir=APPS, entry="light_task.py",
                                        components=components, settings=settings)
    job = load_job(resources, app_config)
    return resources, app_config, job, build_plan(job)


def test_the_seed_job_needs_nothing_of_the_patched_appmaster(tmp_path: Path) -> None:
    _, _, job, plan = _job(tmp_path)
    assert amneeds.needs(plan) == []
    amneeds.check(job, plan, STOCK)  # runs on skein's own AppMaster too


def test_each_ask_of_the_patched_appmaster_is_named_and_refused_with_the_stock_one(
        tmp_path: Path) -> None:
    resources, _, job, plan = _job(
        tmp_path, components={"worker": {"yarn.component.placement.policy": "1",
                                         "yarn.node.failure.threshold": "2"},
                              "ps": {"yarn.component.placement.policy": "4"}},
        settings={})
    assert amneeds.needs(plan) == [
        ("ps.yarn.component.placement.policy", "= 4 (ANTI_AFFINITY_REQUIRED: YARN's "
         "placement constraints)"),
        ("worker.yarn.component.placement.policy", "= 1 (STRICT: a task comes back only to "
         "the host it ran on)"),
        ("worker.yarn.node.failure.threshold", "= 2 (leaving a host out: YARN's blacklist)")]
    amneeds.check(job, plan, PATCHED)
    with pytest.raises(amneeds.PatchedAppMasterNeeded) as refused:
        amneeds.check(job, plan, STOCK)
    text = str(refused.value)
    assert text.startswith("the job asks for what only tfyarn's patched skein AppMaster does:\n"
                           f"  {resources}: components.")
    assert text.endswith("but this tfyarn submits with skein's stock AppMaster (built without "
                         "it). Fix: rebuild it; or leave those settings out")


def test_log_patterns_need_the_patched_driver(tmp_path: Path) -> None:
    resources, app_config = prepare_job(tmp_path, scripts_dir=APPS, entry="light_task.py")
    document = json.loads(resources.read_text())
    document.setdefault("global", {})["yarn.log.include.patterns"] = "stdout|stderr"
    resources.write_text(json.dumps(document))
    plan = build_plan(load_job(resources, app_config))
    assert amneeds.needs(plan) == [
        ("yarn.log.include.patterns", "(YARN's log aggregation context)")]


def test_a_job_asking_for_anti_affinity_is_refused_before_submit_without_the_patched_jar(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(amjar.OFF_ENV, raising=False)
    monkeypatch.setattr(amjar, "BUNDLED_DIR", tmp_path / "empty")  # a package built without
    resources, app_config, _, _ = _job(
        tmp_path, components={"worker": {"yarn.component.placement.policy": "4"}})
    args = ["submit", "--resources", str(resources), "--app-config", str(app_config),
            "--skip-preflight"]
    for dry_run in ([], ["--dry-run"]):
        result = CliRunner().invoke(main, [*args, *dry_run])
        assert result.exit_code == 1, result.output
        assert result.output.startswith(
            "Error: nothing was submitted:\nthe job asks for what only tfyarn's patched skein "
            f"AppMaster does:\n  {resources}: components.worker."
            '"yarn.component.placement.policy" = 4 (ANTI_AFFINITY_REQUIRED: YARN\'s placement '
            "constraints)\nbut this tfyarn "
            "submits with skein's stock AppMaster (this tfyarn was built without it: no "
            f"{amjar.jar_name()} in {tmp_path / 'empty'}). Fix: install tfyarn from a wheel"), \
            result.output


def test_the_dry_run_says_which_appmaster_runs_the_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(amjar.OFF_ENV, raising=False)
    monkeypatch.setattr(amjar, "BUNDLED_DIR", tmp_path)
    (tmp_path / amjar.jar_name()).write_bytes(b"PK")
    resources, app_config, _, _ = _job(tmp_path)
    args = ["submit", "--resources", str(resources), "--app-config", str(app_config),
            "--skip-preflight", "--dry-run"]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert f"attempt(s); tfyarn's patched skein AppMaster ({amjar.jar_name()})\n" in shown.output
    monkeypatch.setenv(amjar.OFF_ENV, "1")
    shown = CliRunner().invoke(main, args)
    assert f"attempt(s); skein's stock AppMaster ({amjar.OFF_ENV} is set)\n" in shown.output


def test_the_job_page_says_which_appmaster_runs_the_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client tells the AppMaster its own words (its environment); the page's facts."""
    monkeypatch.setenv(amjar.OFF_ENV, "1")
    plan = build_plan(load_job(REPO / "resources.json", REPO / "appConfig.json"))
    spec = application_spec(plan, tmp_path, tmp_path / PLAN_FILE, AppSpecExtras())
    said = spec.master.env[APPMASTER_BUILD_ENV]
    assert said == f"skein's stock AppMaster ({amjar.OFF_ENV} is set)"
    view = {"app_id": "application_1_0001", "name": "demo", "state": "RUNNING",
            "generation": 0, "updated": 1_700_000_000_000, "tasks": [], "tensorboard": None,
            "tensorboard_url": None, "cluster_spec": None, "restarts": [], "phases": {},
            "appmaster": said}
    assert f"<dt>appmaster</dt><dd>{html.escape(said)}</dd>" in render_page(view)
