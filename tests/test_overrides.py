"""`--set KEY=VALUE` and the options that stand for a setting (tfyarn/jobconfig/overrides.py):
they beat every file, are checked like the files, and their problems name the option."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobtools import write_doc

from tfyarn.jobconfig import Defaults, JobConfigError, load_job
from tfyarn.jobconfig.defaults import where_set
from tfyarn.jobconfig.overrides import Override, parse_set

RESOURCES = {"global": {"yarn.memory": "2048"}, "components": {
    "ps": {"yarn.role.priority": "1"},
    "worker": {"yarn.role.priority": "2", "yarn.component.instances": "2",
               "yarn.memory": "4096"},
}}
APP = {"global": {"site.global.user.scripts.entry": "train.py",
                  "site.global.queue": "theirs"}}


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text("")
    write_doc(tmp_path / "resources.json", RESOURCES)
    write_doc(tmp_path / "appConfig.json", APP)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def load(*sets: str, overrides: tuple[Override, ...] = ()):
    return load_job("resources.json", "appConfig.json", defaults=Defaults(),
                    overrides=(*overrides, *map(parse_set, sets)))


def problems(*sets: str) -> list[str]:
    with pytest.raises(JobConfigError) as refused:
        load(*sets)
    return [str(p) for p in refused.value.problems]


def test_set_beats_the_files_and_says_so(job: Path) -> None:
    config = load("components.worker.yarn.component.instances=8", "site.global.queue=ml",
                  "ps.yarn.vcores=2", "slider-appmaster.yarn.memory=1024")
    assert config.spec.role("worker").instances == 8
    assert config.spec.role("ps").vcores == 2
    assert config.spec.queue == "ml" and config.spec.am_memory_mb == 1024
    value, source = config.settings["worker.yarn.component.instances"]
    assert value == "8" and str(source) == (
        "--set components.worker.yarn.component.instances (command line)")
    assert where_set(config.settings, "appConfig.json", "site.global.queue") == (
        "command line", "--set site.global.queue")


def test_a_key_for_every_component_beats_each_ones_own(job: Path) -> None:
    config = load("yarn.memory=3072")
    assert {c.name: c.memory_mb for c in config.spec.components} == {"ps": 3072, "worker": 3072}
    assert config.settings["worker.yarn.memory"][0] == "3072"


def test_lists_are_json(job: Path) -> None:
    config = load('site.global.user.scripts.args=["--epochs", "5"]')
    assert config.spec.script_args == ("--epochs", "5")


def test_an_option_that_stands_for_a_setting(job: Path) -> None:
    config = load(overrides=(Override("site.global.queue", "ml", "--queue"),))
    assert where_set(config.settings, "appConfig.json", "site.global.queue") == (
        "command line", "--queue")


def test_a_bad_value_names_the_option_not_the_file(job: Path) -> None:
    assert problems("worker.yarn.memory=lots") == [
        'command line: --set worker.yarn.memory = "lots": not a whole number. Fix: give '
        'megabytes as a whole number, e.g. "2048", or with a unit, e.g. "2g" or "512 MiB".']


@pytest.mark.parametrize("text, expected", [
    ("yarn.memroy=1", 'unknown key "yarn.memroy". Fix: did you mean "yarn.memory"?'),
    ("site.global.queue", "not KEY=VALUE"),
    ("=5", "not KEY=VALUE"),
    ("worker.nothing=1", 'unknown key "worker.nothing"'),
])
def test_bad_set_is_refused_before_anything(text: str, expected: str) -> None:
    with pytest.raises(JobConfigError) as refused:
        parse_set(text)
    assert str(refused.value).startswith(f"command line: --set {text}: {expected}")


def test_a_component_the_job_lacks(job: Path) -> None:
    assert problems("evaluator.yarn.component.instances=1") == [
        "command line: --set evaluator.yarn.component.instances: resources.json has no "
        'evaluator component. Fix: add "evaluator" to resources.json with its '
        '"yarn.role.priority", then set its keys here.']


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Hadoop configuration: with --skip-preflight, the work dir is local."""
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_the_dry_run_shows_set_and_its_origin(job: Path, no_cluster) -> None:
    import json

    from click.testing import CliRunner

    from tfyarn.cli.main import main

    result = CliRunner().invoke(main, ["submit", "--dry-run", "--skip-preflight", "--json", "--set",
                                       "worker.yarn.component.instances=3"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    worker = next(r for r in document["roles"] if r["name"] == "worker")
    assert worker["instances"] == 3
    assert document["settings"]["worker.yarn.component.instances"] == {
        "value": "3", "from": "--set worker.yarn.component.instances (command line)"}
    bad = CliRunner().invoke(main, ["submit", "--dry-run", "--set", "workers=3"])
    assert bad.exit_code == 1
    assert "nothing was submitted" in bad.output and '--set workers=3: not KEY=VALUE' not in (
        bad.output) and 'unknown key "workers"' in bad.output


def submit_dry_run(*args: str):
    from click.testing import CliRunner

    from tfyarn.cli.main import main

    result = CliRunner().invoke(main, ["submit", "--dry-run", "--skip-preflight", *args])
    assert result.exit_code == 1, result.output
    assert "nothing was submitted" in result.output
    return result.output


@pytest.mark.parametrize("key, value, in_file", [
    ("components.worker.yarn.memory", "abc", 'resources.json: components.worker."yarn.memory"'),
    ("site.global.registration.timeout", "-5",
     'appConfig.json: global."site.global.registration.timeout"'),
    # judged with another setting (twice the interval within the stall timeout's default)
    ("site.global.progress.interval", "99999",
     'appConfig.json: global."site.global.progress.interval"'),
])
def test_a_bad_value_is_blamed_where_it_was_given(job: Path, no_cluster, key: str, value: str,
                                                   in_file: str) -> None:
    """Given with --set, the command line is blamed; the same value in the file, the file."""
    output = submit_dry_run("--set", f"{key}={value}")
    assert f"command line: --set {key} = \"{value}\": " in output, output
    assert ".json" not in output, output
    if key.startswith("components."):
        _, component, own = key.split(".", 2)
        components = {**RESOURCES["components"]}
        components[component] = {**components[component], own: value}
        write_doc(job / "resources.json", {**RESOURCES, "components": components})
    else:
        write_doc(job / "appConfig.json", {"global": {**APP["global"], key: value}})
    output = submit_dry_run()
    assert f'{in_file} = "{value}": ' in output and "command line" not in output, output


def test_the_work_dir_checks_name_the_option(job: Path, no_cluster) -> None:
    """Checked after the files (on the cluster's file system), a value given with --set is
    named by its option, one in the file by its key."""
    output = submit_dry_run("--set", "site.global.user.data.dir=hdfs://nosuch/data")
    assert "--set site.global.user.data.dir = 'hdfs://nosuch/data' names the file system " \
        "hdfs://nosuch" in output, output
    write_doc(job / "appConfig.json", {"global": {
        **APP["global"], "site.global.user.data.dir": "hdfs://nosuch/data"}})
    output = submit_dry_run()
    assert "\nsite.global.user.data.dir = 'hdfs://nosuch/data' names" in output, output


def test_every_components_value_is_blamed_on_set_where_each_component_is_judged(
        job: Path) -> None:
    """A key for every component lands in "global": the checks that judge it per component
    (with the component's other settings) name the option, not the component in the file."""
    found = problems("yarn.stall.timeout.seconds=5")  # the same for ps and worker: once
    assert len(found) == 1 and found[0].startswith(
        'command line: --set yarn.stall.timeout.seconds = "5": below twice '), found
    found = problems("yarn.processes.per.container=2")
    assert len(found) == 2 and all(line.startswith(
        'command line: --set yarn.processes.per.container = "2": ') for line in found), found
