"""A new user's first commands on their own machine, before any cluster answers: each with
its exit code and first line. Refusals name what is wrong and the fix (the shipped env
without TensorFlow, a missing Hadoop configuration, absent job files, unknown or bad keys);
`tfyarn config --all` lists every setting; --json gets JSON errors; `list` prints a header.
The same on a real cluster (logs of a job that failed before its tasks, the 3.13 thin
client's refusal of the seed job): tests/test_barenodes_yarn.py, test_wheel_install_yarn.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from appmaster.common.settings import APP_SCOPE, APPMASTER_SCOPE, COMPONENT_SCOPE, settings
from tfyarn.cli.main import main
from tfyarn.jobconfig.memory import megabytes
from tfyarn.submission import frameworks
from tfyarn.submission.environments import JobEnvironmentError
from tfyarn.watch import joblogs

REPO = Path(__file__).resolve().parent.parent
APPS = REPO / "tests" / "apps"
NO_CONF = ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_HOME")


@pytest.fixture
def light_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A job whose script imports no TensorFlow, in the current directory; no Hadoop
    configuration in the environment."""
    for name in NO_CONF:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "resources.json").write_text(json.dumps({"components": {
        "ps": {"yarn.role.priority": "1"}, "chiefworker": {"yarn.role.priority": "2"}}}))
    (tmp_path / "appConfig.json").write_text(json.dumps({"global": {
        "site.global.user.scripts.dir": str(APPS),
        "site.global.user.scripts.entry": "light_task.py"}}))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(main, list(args), prog_name="tfyarn")


def lines(result) -> list[str]:
    return result.output.splitlines()


# ---- the env tfyarn would ship: TensorFlow for a TensorFlow script ----

def dist_info(site: Path, name: str) -> None:
    """An installed distribution's metadata, as pip writes it."""
    folder = site / f"{name.replace('-', '_')}-1.0.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")


def tf_script(tmp_path: Path) -> Path:
    (tmp_path / "support.py").write_text("import tensorflow as tf\n")
    entry = tmp_path / "train.py"
    entry.write_text("import argparse\nfrom support import tf\n")
    return entry


def test_a_tensorflow_script_and_an_env_without_it_are_refused(tmp_path: Path) -> None:
    entry, site = tf_script(tmp_path), tmp_path / "site-packages"
    dist_info(site, "skein")
    with pytest.raises(JobEnvironmentError) as refused:
        frameworks.check_shipped_env(entry, tmp_path, [site], Path("/venvs/thin"))
    text = str(refused.value)
    assert text.startswith(f"the job's script needs TensorFlow ({tmp_path / 'support.py'} "
                           "imports tensorflow), but the Python env tfyarn would ship to the "
                           "containers, this interpreter's (/venvs/thin), has no TensorFlow "
                           "installed. Fix: one of:"), text
    for way_out in ('pip install "<tfyarn\'s wheel>[tf]"', "--python-env", "site.global.python"):
        assert way_out in text


@pytest.mark.parametrize("name", ["tensorflow", "tensorflow-cpu", "tf_nightly"])
def test_any_tensorflow_distribution_will_do(tmp_path: Path, name: str) -> None:
    entry, site = tf_script(tmp_path), tmp_path / "site-packages"
    dist_info(site, name)
    frameworks.check_shipped_env(entry, tmp_path, [site], Path("/venvs/tf"))


def test_a_script_without_tensorflow_needs_none(tmp_path: Path) -> None:
    assert frameworks.missing(APPS / "light_task.py", APPS, [tmp_path]) == []


# ---- the Hadoop client configuration ----

def test_a_hadoop_conf_dir_that_is_not_there_is_refused(light_job: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", "/nonexistent/conf")
    result = run("submit", "--dry-run")
    assert result.exit_code == 1
    assert lines(result)[:2] == [
        "Error: nothing was submitted:",
        "HADOOP_CONF_DIR=/nonexistent/conf: no such directory. Fix: set HADOOP_CONF_DIR to the "
        "cluster's client configuration, the directory that holds its core-site.xml and "
        "yarn-site.xml (a cluster node's /etc/hadoop/conf, or what the cluster's "
        "administrators hand out). For a dry run away from any cluster, add "
        "--skip-preflight."]


@pytest.mark.skipif(Path("/etc/hadoop/conf/yarn-site.xml").exists(),
                    reason="this machine has a system-wide Hadoop configuration")
def test_a_configuration_without_its_files_names_the_directories_searched(
        light_job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = light_job / "conf"
    empty.mkdir()
    monkeypatch.setenv("HADOOP_CONF_DIR", str(empty))
    result = run("submit", "--dry-run")
    assert result.exit_code == 1
    assert lines(result)[1].startswith(
        "no Hadoop client configuration: core-site.xml and yarn-site.xml not found in "
        f"{empty}, /etc/hadoop/conf (searched in this order). Fix: set HADOOP_CONF_DIR"), (
        result.output)
    monkeypatch.delenv("HADOOP_CONF_DIR")  # none at all: the same refusal
    assert run("submit", "--dry-run").exit_code == 1


def test_pre_flight_is_skipped_when_the_user_says_so(light_job: Path) -> None:
    result = run("submit", "--dry-run", "--skip-preflight")
    assert result.exit_code == 0, result.output
    assert lines(result)[0] == "Application 'tfyarn-light_task' in queue 'default', tags tfyarn"
    assert lines(result)[-1] == "Pre-flight check skipped: --skip-preflight was given."


# ---- job files by their default names ----

def test_absent_default_job_files_get_a_fix_that_names_no_path(tmp_path: Path,
                                                               monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("submit", "--dry-run")
    assert result.exit_code == 1
    assert lines(result) == [
        "Error: nothing was submitted:",
        f"resources.json: no such file ({tmp_path / 'resources.json'}). Fix: run tfyarn in the "
        "directory that holds the job's files, or name this one with --resources PATH (the "
        "repository's README has a first job to copy).",
        f"appConfig.json: no such file ({tmp_path / 'appConfig.json'}). Fix: run tfyarn in the "
        "directory that holds the job's files, or name this one with --app-config PATH (the "
        "repository's README has a first job to copy)."]
    given = run("submit", "--dry-run", "--resources", str(tmp_path / "r.json"))
    assert "r.json). Fix: check the path given on the command line." in given.output


# ---- keys: every one listed, typos answered in the user's form, values checked ----

def test_config_all_lists_every_declared_setting(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("config", "--all", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)["settings"]
    declared = {*(s.key for s in settings(APP_SCOPE)), *(s.key for s in settings(COMPONENT_SCOPE)),
                *(f"slider-appmaster.{s.key}" for s in settings(APPMASTER_SCOPE))}
    assert declared <= set(shown), declared - set(shown)
    python = shown["site.global.python"]
    assert python["meaning"] and python["default"].startswith("none: tfyarn packs")
    assert python["level"] == "default"
    plain = run("config", "--all")
    assert plain.exit_code == 0 and "site.global.user.scripts.args" in plain.output
    assert len(run("config").output.splitlines()) < len(plain.output.splitlines())


def test_an_unknown_key_points_at_config_all(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("config", "--set", "nosuchkey=1")
    assert result.exit_code == 1
    assert lines(result) == [
        'Error: command line: --set nosuchkey=1: unknown key "nosuchkey". Fix: `tfyarn config '
        "--all` lists every key; a component's own is <component>.<key>."]


def test_a_typo_is_answered_in_the_users_own_form(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("config", "--set", "components.worker.yarn.componnt.instances=2")
    assert result.exit_code == 1
    assert lines(result)[0].endswith(
        'Fix: did you mean "components.worker.yarn.component.instances"? (`tfyarn config '
        "--all` lists every key)")
    short = run("config", "--set", "worker.yarn.componnt.instances=2")
    assert 'did you mean "worker.yarn.component.instances"?' in short.output


def test_config_checks_set_values_without_job_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("config", "--set", "worker.yarn.memory=abc")
    assert result.exit_code == 1
    assert lines(result) == [
        'Error: command line: --set worker.yarn.memory = "abc": not a whole number. Fix: give '
        'megabytes as a whole number, e.g. "2048", or with a unit, e.g. "2g" or "512 MiB".']
    assert run("config", "--set", "worker.yarn.memory=4096").exit_code == 0


# ---- the command line's own conventions ----

def test_a_half_login_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("submit", "--principal", "me@EXAMPLE.COM", "--dry-run")
    assert result.exit_code == 2
    assert lines(result)[0] == "Usage: tfyarn submit [OPTIONS] [-- SCRIPT_ARGS...]"


def test_help_names_every_exit_code_and_the_default_detach() -> None:
    text = " ".join(run("-h").output.split())
    for code in ("0 ", "1 ", "2 the command line is wrong", "3 ", "4 ", "5 ", "130 Ctrl-C"):
        assert code in text
    assert "[default: --detach]" in " ".join(run("submit", "-h").output.split())


def test_errors_under_json_are_json(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("submit", "--dry-run", "--json")
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert error["context"] == "nothing was submitted" and error["exit_code"] == 1
    assert error["error"].startswith("resources.json: no such file")
    assert result.stderr.startswith("Error: nothing was submitted:")


# ---- logs: what to say when the logs asked for are not there ----

def test_a_role_the_job_did_not_have_is_named_with_those_it_had() -> None:
    present = [joblogs.LogFile("container_1_0001_01_000002", "n1", "ps-0.stderr", ""),
               joblogs.LogFile("container_1_0001_01_000003", "n1", "worker-0.stdout", "")]
    error = joblogs.no_such_role("application_1_0001", "evaluator", None, present)
    assert str(error) == (
        "application_1_0001 has no logs of evaluator: it had no such task (its tasks' logs: "
        "ps-0, worker-0). Fix: pick one of those with --role and --index, or leave them out "
        "for all.")


def test_no_log_aggregation_is_said_with_its_setting() -> None:
    text = str(joblogs.not_aggregated("application_1_0001"))
    assert "yarn.log-aggregation-enable" in text and "tfyarn logs -f application_1_0001" in text


# ---- memory as Spark and skein write it ----

@pytest.mark.parametrize(("text", "mb"), [
    ("2048", 2048), (4096, 4096), ("2g", 2048), ("2G", 2048), ("512m", 512), ("512 MiB", 512),
    ("1.5 GiB", 1536), ("4096 MB", 4096), ("1t", 1048576), ("2048k", 2),
    ("abc", None), ("2 gallons", None), ("1.0001g", None), ("", None), (True, None)])
def test_memory_sizes(text, mb) -> None:
    assert megabytes(text) == mb


def test_a_memory_with_its_unit_is_planned_in_mb(light_job: Path) -> None:
    result = run("submit", "--dry-run", "--skip-preflight", "--json",
                 "--set", "chiefworker.yarn.memory=2g", "--set", "slider-appmaster.yarn.memory=1g")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    chief = next(role for role in plan["roles"] if role["name"] == "chiefworker")
    assert chief["memory_mb"] == 2048, chief
