"""Unit tests for the cluster's and the person's defaults files (tfyarn/jobconfig/defaults.py)
and `tfyarn config`: temp files only, no cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from jobtools import write_doc

from tfyarn.cli.main import main
from tfyarn.jobconfig import Defaults, JobConfig, JobConfigError, load_job, read_defaults
from tfyarn.submission.api import SubmitOptions

RESOURCES = {"global": {}, "components": {
    "ps": {"yarn.role.priority": "1", "yarn.component.instances": "1"},
    "worker": {"yarn.role.priority": "2", "yarn.component.instances": "2",
               "yarn.memory": "4096"},
}}
APP = {"global": {"site.global.user.scripts.entry": "train.py"}}
G = "site.global."


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The cluster's and the person's defaults files (not yet written) and a job directory,
    the working directory, holding train.py."""
    cluster = tmp_path / "etc" / "tfyarn.yaml"
    monkeypatch.setenv("TFYARN_SYSTEM_CONFIG", str(cluster))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    personal = tmp_path / "home" / ".config" / "tfyarn" / "tfyarn.yaml"
    for path in (cluster, personal):
        path.parent.mkdir(parents=True)
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(job)
    return {"cluster": cluster, "personal": personal, "job": job}


def write_yaml(path: Path, settings: Any) -> Path:
    path.write_text(settings if isinstance(settings, str) else yaml.safe_dump(settings))
    return path


def load(where: dict[str, Path], cluster: Any = None, personal: Any = None,
         resources: dict[str, Any] | None = None, app: dict[str, Any] | None = None) -> JobConfig:
    """The job in `where`, each defaults file written when given."""
    for level, settings in (("cluster", cluster), ("personal", personal)):
        if settings is not None:
            write_yaml(where[level], settings)
    write_doc(where["job"] / "resources.json", resources or RESOURCES)
    write_doc(where["job"] / "appConfig.json", app or APP)
    return load_job("resources.json", "appConfig.json")


def app_with(**settings: Any) -> dict[str, Any]:
    return {"global": {**APP["global"], **{G + k: v for k, v in settings.items()}}}


def problems(where: dict[str, Path], **files: Any) -> str:
    with pytest.raises(JobConfigError) as info:
        load(where, **files)
    return str(info.value)


def assert_problem(text: str, file: Path | str, key: str | None, *fragments: str) -> None:
    """Some line names the file and the key, has a fix, and contains every fragment."""
    head = str(file) if key is None else f"{file}: {key}"
    lines = [line for line in text.splitlines() if line.startswith(head)]
    assert any("Fix: " in line and all(f in line for f in fragments) for line in lines), (
        f"no line starting {head!r} with {fragments} in:\n{text}")


# ---- precedence: command line > job files > personal > cluster ----

def test_each_level_beats_those_below(where: dict[str, Path]) -> None:
    job = load(
        where,
        cluster={G + "queue": "c", G + "docker.image": "c:1", G + "task.heartbeat.timeout": 11,
                 G + "evaluation.timeout": 21, "yarn.vcores": 3, "yarn.memory": 2048,
                 "slider-appmaster.yarn.memory": 1024},
        personal={G + "docker.image": "p:1", G + "task.heartbeat.timeout": 12,
                  G + "queue": "p", "yarn.vcores": 2},
        app=app_with(**{"docker.image": "j:1", "queue": "j"}),
    )
    assert job.spec.evaluation_timeout_s == 21  # the cluster's alone
    assert job.spec.heartbeat_timeout_s == 12  # the person's beats the cluster's
    assert (job.spec.queue, job.spec.docker_image) == ("j", "j:1")  # the job's beats both
    # the command line beats the job's, and is named as where the value came from
    job = load_job("resources.json", "appConfig.json",
                   overrides=SubmitOptions(docker_image="cli:1").overrides())
    assert job.spec.docker_image == "cli:1"
    assert str(job.settings[G + "docker.image"][1]) == "--docker-image (command line)"
    ps, worker = job.spec.role("ps"), job.spec.role("worker")
    assert ps is not None and worker is not None
    assert (ps.memory_mb, ps.vcores) == (2048, 2)
    assert worker.memory_mb == 4096  # a component's own value beats every default
    # the AppMaster's own default, else everyone's, as in a job's "global"
    assert (job.spec.am_memory_mb, job.spec.am_vcores) == (1024, 2)


def test_job_files_beat_defaults_for_everyone_and_the_appmaster(where: dict[str, Path]) -> None:
    resources = json.loads(json.dumps(RESOURCES))
    resources["global"] = {"yarn.memory": "3072"}
    resources["components"]["slider-appmaster"] = {"yarn.vcores": "2"}
    job = load(where, cluster={"yarn.memory": 2048, "slider-appmaster.yarn.vcores": 4,
                               "slider-appmaster.yarn.memory": 768}, resources=resources)
    ps = job.spec.role("ps")
    assert ps is not None and ps.memory_mb == 3072
    # the AppMaster's own default is more particular than the job's for every component
    assert (job.spec.am_memory_mb, job.spec.am_vcores) == (768, 2)


def test_without_defaults_files_nothing_changes(where: dict[str, Path]) -> None:
    job = load(where)
    assert (job.spec.queue, job.spec.am_memory_mb, job.spec.am_vcores) == ("default", 512, 1)
    assert job == load_job("resources.json", "appConfig.json", defaults=Defaults())
    assert [f.settings for f in read_defaults().files] == [None, None]


def test_empty_defaults_file_is_no_defaults(where: dict[str, Path]) -> None:
    assert load(where, cluster="# nothing yet\n", personal="").spec.queue == "default"


def test_tfyarn_config_replaces_the_personal_file(where: dict[str, Path],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    other = write_yaml(where["job"].parent / "mine.conf", {G + "queue": "mine"})
    monkeypatch.setenv("TFYARN_CONFIG", str(other))
    # read as YAML whatever its name; the usual personal file is not read
    assert load(where, personal={G + "queue": "usual"}).spec.queue == "mine"


def test_tfyarn_config_must_exist(where: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    missing = where["job"] / "nope.yaml"
    monkeypatch.setenv("TFYARN_CONFIG", str(missing))
    text = problems(where)
    assert_problem(text, missing, None, "no such file", "TFYARN_CONFIG")


def test_xdg_config_home_or_home(where: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                 tmp_path: Path) -> None:
    assert read_defaults().files[1].source.path == str(where["personal"])
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert read_defaults().files[1].source.path == str(where["personal"])


def test_rival_keys_of_a_job_file_hide_the_defaults(where: dict[str, Path]) -> None:
    """Slider's job files give a checkpoint prefix; a cluster's work dir does not clash."""
    prefix = "hdfs:///user/alice/ckpt"
    job = load(where, cluster={G + "user.work.dir": "hdfs:///jobs/${USER_NAME}"},
               app=app_with(**{"user.checkpoint.prefix": prefix}))
    assert (job.spec.work_dir, job.spec.checkpoint_prefix) == (None, prefix)


# ---- paths: relative to the defaults file's directory ----

def test_relative_paths_are_the_defaults_files(where: dict[str, Path]) -> None:
    config = where["personal"].parent
    (config / "envs").mkdir()
    (config / "envs" / "tf.tar.gz").write_bytes(b"")
    (config / "token").write_text("secret")
    job = load(where, personal={G + "python.env": "envs/tf.tar.gz",
                                G + "user.secrets": {"TOKEN": "token"}})
    assert job.client.python_env == config / "envs" / "tf.tar.gz"
    assert job.client.secret_files == {"TOKEN": config / "token"}


def test_relative_path_missing_names_the_defaults_file(where: dict[str, Path]) -> None:
    text = problems(where, cluster={G + "python.env": "envs/tf.tar.gz"})
    assert_problem(text, where["cluster"], '"site.global.python.env"',
                   str(where["cluster"].parent / "envs" / "tf.tar.gz"))


# ---- bad input: named by the defaults file, its key and the fix ----

def test_unknown_key_did_you_mean(where: dict[str, Path]) -> None:
    text = problems(where, personal={G + "queu": "ml", "yarn.memroy": 2048})
    assert_problem(text, where["personal"], '"site.global.queu"', "unknown key",
                   '"site.global.queue"')
    assert_problem(text, where["personal"], '"yarn.memroy"', '"yarn.memory"')


@pytest.mark.parametrize("key", [G + "user.scripts.entry", G + "user.scripts.dir",
                                 G + "app.name", "yarn.role.priority",
                                 "yarn.component.instances"])
def test_job_only_keys_refused(where: dict[str, Path], key: str) -> None:
    text = problems(where, cluster={key: "1"})
    job_file = "resources.json" if key.startswith("yarn.") else "appConfig.json"
    assert_problem(text, where["cluster"], json.dumps(key), "not a default", job_file)


def test_bad_yaml(where: dict[str, Path]) -> None:
    text = problems(where, cluster="site.global.queue: [ml\n")
    assert_problem(text, where["cluster"], None, "not valid YAML", "line 2")


def test_key_written_twice(where: dict[str, Path]) -> None:
    text = problems(where, personal="site.global.queue: a\nyarn.memory: 1024\n"
                                    "site.global.queue: b\n")
    assert_problem(text, where["personal"], '"site.global.queue"', "written twice",
                   "line 1", "line 3", "keep one")


@pytest.mark.parametrize("content, kind", [("- a\n- b\n", "a list"), ("ml\n", "a string")])
def test_not_a_mapping(where: dict[str, Path], content: str, kind: str) -> None:
    text = problems(where, cluster=content)
    assert_problem(text, where["cluster"], None, f"not {kind}", "site.global.queue: ml")


@pytest.mark.parametrize("key, value, fragment", [
    (G + "queue", 7, "must be a string"),
    (G + "task.heartbeat.timeout", "soon", "positive number of seconds"),
    (G + "python", "python3", "absolute path"),
    (G + "user.work.dir", "hdfs:///x/${ZK}", "${ZK}"),
    (G + "success.policy", "any", '"chief"'),
    (G + "acl.view", "a b c", "access list"),
    ("yarn.memory", 10, "between 32 and 1048576 MB"),
    ("yarn.vcores", "two", "not a whole number"),
    ("yarn.label.expression", "gpu && fast", "one node label"),
    ("yarn.container.failure.policy", "ignore", "cannot be ignored"),
    ("slider-appmaster.yarn.memory", 1, "between 32"),
    ("slider-appmaster.yarn.vcores", "x", "not a whole number"),
])
def test_bad_values_name_the_defaults_file(where: dict[str, Path], key: str, value: Any,
                                           fragment: str) -> None:
    text = problems(where, cluster={key: value})
    assert_problem(text, where["cluster"], json.dumps(key), fragment)
    # the job files are not blamed for what the defaults file says
    assert not [line for line in text.splitlines() if not line.startswith(str(where["cluster"]))]


def test_nested_key_and_every_file_reported_at_once(where: dict[str, Path]) -> None:
    text = problems(where, cluster={G + "user.env": {"1A": "x"}}, personal={G + "queue": ""},
                    app={"global": {}})
    assert_problem(text, where["cluster"], '"site.global.user.env".1A', "variable name")
    assert_problem(text, where["personal"], '"site.global.queue"', "must not be empty")
    assert_problem(text, "appConfig.json", 'global."site.global.user.scripts.entry"', "missing")


def test_relative_python_in_a_job_file(where: dict[str, Path]) -> None:
    text = problems(where, app=app_with(python="bin/python"))
    assert_problem(text, "appConfig.json", 'global."site.global.python"', "absolute path",
                   "/usr/bin/python3")


# ---- tfyarn config ----

def config(*args: str) -> Any:
    return CliRunner().invoke(main, ["config", *args])


def test_config_json_says_where_each_setting_came_from(where: dict[str, Path]) -> None:
    load(where, cluster={G + "queue": "ml", "yarn.memory": 2048},
         personal={G + "queue": "mine", G + "docker.image": "tf:2"})
    result = config("--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["settings"][G + "queue"]["meaning"] == (
        "the YARN queue the application goes to")  # from appmaster/common/settings.py
    settings = {key: {k: v for k, v in entry.items() if k not in ("meaning", "default")}
                for key, entry in document["settings"].items()}
    assert settings[G + "queue"] == {"value": "mine", "level": "personal",
                                     "file": str(where["personal"])}
    assert settings["yarn.memory"] == {"value": 2048, "level": "cluster",
                                       "file": str(where["cluster"])}
    assert settings[G + "user.scripts.entry"] == {"value": "train.py", "level": "job file",
                                                  "file": "appConfig.json"}
    assert settings["worker.yarn.memory"]["file"] == "resources.json"
    assert settings[G + "task.heartbeat.timeout"]["level"] == "default"
    assert settings["slider-appmaster.yarn.vcores"] == {"value": 1, "level": "default",
                                                        "file": None}
    # the AppMaster's built-in size yields to a file's size for every component
    assert "slider-appmaster.yarn.memory" not in settings
    assert [(f["level"], f["read"]) for f in document["files"]] == [
        ("cluster", True), ("personal", True), ("job file", True), ("job file", True)]


def test_config_without_job_files_shows_the_defaults(where: dict[str, Path]) -> None:
    write_yaml(where["cluster"], {G + "queue": "ml"})
    result = config()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"cluster:   {where['cluster']} (read)" in lines
    assert f"personal:  {where['personal']} (absent)" in lines
    assert any("the defaults alone" in line for line in lines)
    queue = next(line for line in lines if line.startswith(G + "queue "))
    assert queue.split() == [G + "queue", "ml", str(where["cluster"]), "(cluster)"]
    # aligned: every value starts in the same column
    rows = [line for line in lines if line.startswith((G, "yarn.", "slider-appmaster."))]
    assert len({len(line) - len(line.split(maxsplit=1)[1]) for line in rows}) == 1


def test_config_all_is_drawn_from_the_declarations(where: dict[str, Path]) -> None:
    """Every declared setting shows in `tfyarn config --all`, with its declaration's meaning,
    without a line of the command's own: a new declaration shows there too."""
    from appmaster.common.settings import APPMASTER_COMPONENT, APPMASTER_SCOPE, SETTINGS

    result = config("--all", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)["settings"]
    for setting in SETTINGS:
        key = (f"{APPMASTER_COMPONENT}.{setting.key}" if setting.scope == APPMASTER_SCOPE
               else setting.key)
        assert shown[key]["meaning"] == setting.meaning, key


def test_config_reports_problems(where: dict[str, Path]) -> None:
    write_yaml(where["personal"], {"yarn.memory": 1})
    result = config()
    assert result.exit_code == 1
    assert f'Error: {where["personal"]}: "yarn.memory" = 1: must be between' in result.output
    missing = config("--resources", "other.json")
    assert missing.exit_code == 1 and "other.json: no such file" in missing.output


def test_config_shows_set_with_the_command_line_as_origin(where: dict[str, Path]) -> None:
    load(where, personal={G + "queue": "mine"})
    result = config("--set", "site.global.queue=ml", "--set",
                    "components.worker.yarn.memory=8192")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.split() == [G + "queue", "ml", "--set", G + "queue", "(command", "line)"]
               for line in lines), result.output
    assert any(line.startswith("worker.yarn.memory") and "8192" in line and "--set" in line
               for line in lines), result.output
    bad = config("--set", "worker.yarn.memory=lots")
    assert bad.exit_code == 1
    assert 'command line: --set worker.yarn.memory = "lots": not a whole number' in bad.output


def test_where_a_setting_was_set(where: dict[str, Path]) -> None:
    """Pre-flight names the file that gave the queue: a defaults file, or appConfig.json."""
    from tfyarn.jobconfig.defaults import where_set

    job = load(where, cluster={G + "queue": "ml"}, personal={G + "queue": "mine"})
    assert where_set(job.settings, "appConfig.json", G + "queue") == (
        str(where["personal"]), '"site.global.queue"')
    job = load(where, app={"global": {**APP["global"], G + "queue": "theirs"}})
    assert where_set(job.settings, "appConfig.json", G + "queue") == (
        "appConfig.json", 'global."site.global.queue"')
