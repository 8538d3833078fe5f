"""Unit tests for tfyarn.jobconfig: reading and checking resources.json and appConfig.json."""

from __future__ import annotations

import copy
import dataclasses
import getpass
import json
from pathlib import Path
from typing import Any

import pytest
from jobtools import write_doc

from appmaster.common.jobplan import RolePlan
from appmaster.common.settings import FAILURE_THRESHOLD_MEANING
from tfyarn.jobconfig import (
    ClientFacts,
    JobConfig,
    JobConfigError,
    Problem,
    describe_problems,
    load_job,
)

# Apache Slider's TensorFlow package files, verbatim.
SLIDER_RESOURCES = """{"schema":"http://example.org/specification/v2.0.0","metadata":{},"global":{},"components":{"slider-appmaster":{},"ps":{"yarn.role.priority":"1","yarn.component.instances":"2","yarn.memory":"2048","yarn.vcores":"1","yarn.container.failure.threshold":"0"},"chiefworker":{"yarn.role.priority":"2","yarn.component.instances":"1","yarn.memory":"4096","yarn.vcores":"1","yarn.container.failure.threshold":"0"},"worker":{"yarn.role.priority":"3","yarn.component.instances":"5","yarn.memory":"2048","yarn.vcores":"1","yarn.container.failure.threshold":"0"},"tensorboard":{"yarn.role.priority":"4","yarn.component.instances":"1","yarn.memory":"4096","yarn.vcores":"1"}}}"""  # noqa: E501
SLIDER_APP_CONFIG = """{"schema":"http://example.org/specification/v2.0.0","metadata":{},"global":{"site.global.hadoop.conf":"/etc/hadoop/conf","site.global.yarn.cgroup.root":"/hadoop-yarn","site.global.user.scripts.entry":"ymnist.py","site.global.user.checkpoint.prefix":"hdfs://hdpdev/user/${USER_NAME}/.slider/cluster","site.global.user.name":"${USER_NAME}","site.global.zookeeper.quorum":"${ZK_HOST}","site.global.docker.image":"ytensorflow:0.2.1","site.global.ps.port":"${ps.ALLOCATED_PORT}{PER_CONTAINER}","site.global.chiefworker.port":"${chiefworker.ALLOCATED_PORT}{PER_CONTAINER}","site.global.worker.port":"${worker.ALLOCATED_PORT}{PER_CONTAINER}","site.global.tensorboard.port":"${tensorboard.ALLOCATED_PORT}{PER_CONTAINER}"}}"""  # noqa: E501

MEMORY = 'components.worker."yarn.memory"'
ENTRY = 'global."site.global.user.scripts.entry"'


def slider_resources() -> dict[str, Any]:
    return json.loads(SLIDER_RESOURCES)


def slider_app() -> dict[str, Any]:
    return json.loads(SLIDER_APP_CONFIG)


@pytest.fixture
def job_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Run in the job directory so that messages name "resources.json", as a user would type it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ymnist.py").write_text("print('training')\n")
    return tmp_path


def load(job_dir: Path, resources: Any = None, app: Any = None, **kw: Any) -> JobConfig:
    """Loads the Slider files, or the given replacements for them."""
    write_doc(job_dir / "resources.json", SLIDER_RESOURCES if resources is None else resources)
    write_doc(job_dir / "appConfig.json", SLIDER_APP_CONFIG if app is None else app)
    return load_job("resources.json", "appConfig.json", **kw)


def errors(job_dir: Path, resources: Any = None, app: Any = None) -> str:
    with pytest.raises(JobConfigError) as info:
        load(job_dir, resources, app)
    return str(info.value)


def assert_problem(text: str, file: str, key: str | None, *fragments: str) -> None:
    """Some line names the file and key, has a fix, and contains every fragment."""
    head = file if key is None else f"{file}: {key}"
    lines = [line for line in text.splitlines() if line.startswith(head)]
    assert any("Fix: " in line and all(f in line for f in fragments) for line in lines), (
        f"no line starting {head!r} with {fragments} in:\n{text}"
    )


def resources_with(component: str, **settings: Any) -> dict[str, Any]:
    doc = slider_resources()
    doc["components"].setdefault(component, {}).update(settings)
    return doc


def app_with(**settings: Any) -> dict[str, Any]:
    doc = slider_app()
    doc["global"].update({"site.global." + k: v for k, v in settings.items()})
    return doc


def comp(job: JobConfig, name: str) -> RolePlan:
    component = job.spec.role(name)
    assert component is not None
    return component


def resource_error(job_dir: Path, component: str, key: str, value: Any) -> str:
    return errors(job_dir, resources_with(component, **{key: value}))


# ---- the Slider documents ----


def test_slider_documents_load(job_dir: Path) -> None:
    job = load(job_dir)
    assert [c.name for c in job.spec.components] == ["ps", "chiefworker", "worker", "tensorboard"]
    assert job.spec.role("ps") == RolePlan(
        name="ps",
        priority=1,
        instances=2,
        memory_mb=2048,
        vcores=1,
        failure_threshold=0,
        label=None,
        gpus=0,
    )
    assert comp(job, "tensorboard").failure_threshold == 0
    assert job.spec.role("slider-appmaster") is None
    assert [c.name for c in job.spec.roles] == ["ps", "chiefworker", "worker"]
    assert job.spec.total_tasks() == 8
    assert (job.spec.am_memory_mb, job.spec.am_vcores) == (512, 1)
    assert job.client.resources_path == Path("resources.json")  # as given
    assert job.client == ClientFacts(
        resources_path=Path("resources.json"),  # as given
        app_config_path=Path("appConfig.json"),
        scripts_dir=job_dir,
        entry_path=job_dir / "ymnist.py",
        ignored=(
            "site.global.hadoop.conf",
            "site.global.yarn.cgroup.root",
            "site.global.user.name",
            "site.global.zookeeper.quorum",
            "site.global.ps.port",
            "site.global.chiefworker.port",
            "site.global.worker.port",
            "site.global.tensorboard.port",
        ),
    )
    spec = job.spec
    assert (spec.entry, spec.script_args, spec.env, spec.queue, spec.name) == (
        "ymnist.py", (), {}, "default", "tfyarn-ymnist")
    assert (spec.work_dir, spec.python, spec.registration_timeout_s) == (None, None, 300.0)
    assert spec.docker_image == "ytensorflow:0.2.1"
    assert spec.checkpoint_prefix == f"hdfs://hdpdev/user/{getpass.getuser()}/.slider/cluster"
    assert spec.work_dir_flag == "--ckp_dir"  # Slider's, worked out by its declaration
    app = job
    assert app.client.scripts_dir.is_absolute() and app.client.entry_path.is_absolute()


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_yaml_equals_json(job_dir: Path, suffix: str) -> None:
    from_json = load(job_dir)
    res = write_doc(job_dir / f"resources{suffix}", slider_resources())
    cfg = write_doc(job_dir / f"appConfig{suffix}", slider_app())
    from_yaml = load_job(res, cfg)
    assert from_yaml == dataclasses.replace(from_json, client=dataclasses.replace(
        from_json.client, resources_path=res, app_config_path=cfg))


def test_yaml_plain_numbers_and_empty_sections(job_dir: Path) -> None:
    res = job_dir / "resources.yaml"
    res.write_text(
        "global:\ncomponents:\n  slider-appmaster:\n"
        "  chiefworker:\n    yarn.role.priority: 2\n    yarn.memory: 4096\n"
    )
    cfg = write_doc(
        job_dir / "appConfig.yml", {"global": {"site.global.user.scripts.entry": "ymnist.py"}}
    )
    job = load_job(res, cfg)
    assert job.spec.components == (RolePlan(name="chiefworker", priority=2, instances=1,
                                        memory_mb=4096, vcores=1),)


def test_global_values_are_defaults_for_every_component(job_dir: Path) -> None:
    doc = slider_resources()
    doc["global"] = {"yarn.memory": "3000", "yarn.vcores": "2", "yarn.label.expression": "cpu"}
    for settings in doc["components"].values():
        settings.pop("yarn.memory", None)
        settings.pop("yarn.vcores", None)
    doc["components"]["worker"]["yarn.memory"] = "8192"
    job = load(job_dir, doc)
    assert comp(job, "ps").memory_mb == 3000
    assert comp(job, "worker").memory_mb == 8192
    assert {c.vcores for c in job.spec.components} == {2}
    assert {c.label for c in job.spec.components} == {"cpu"}
    assert (job.spec.am_memory_mb, job.spec.am_vcores) == (3000, 2)  # the AppMaster inherits too


def test_global_value_error_points_at_global_once(job_dir: Path) -> None:
    doc = slider_resources()
    doc["global"] = {"yarn.gpus": "two"}
    text = errors(job_dir, doc)
    assert_problem(text, "resources.json", 'global."yarn.gpus"', '= "two"', "not a whole number")
    assert len(text.splitlines()) == 1


def test_numbers_may_be_strings_or_ints(job_dir: Path) -> None:
    doc = slider_resources()
    for settings in doc["components"].values():
        for key, value in settings.items():
            settings[key] = int(value)
    assert load(job_dir, doc).spec.components == load(job_dir).spec.components


def test_missing_memory_and_vcores_default(job_dir: Path) -> None:
    doc = slider_resources()
    del doc["components"]["worker"]["yarn.memory"], doc["components"]["worker"]["yarn.vcores"]
    del doc["components"]["worker"]["yarn.container.failure.threshold"]
    worker = load(job_dir, doc).spec.role("worker")
    assert worker is not None
    assert (worker.memory_mb, worker.vcores, worker.failure_threshold) == (1024, 1, 0)


def test_appmaster_size(job_dir: Path) -> None:
    job = load(job_dir, resources_with("slider-appmaster", **{"yarn.memory": "1024"}))
    assert (job.spec.am_memory_mb, job.spec.am_vcores) == (1024, 1)
    text = resource_error(job_dir, "slider-appmaster", "yarn.vcores", "0")
    assert_problem(text, "resources.json", 'components.slider-appmaster."yarn.vcores"', "1024")


# ---- resources.json rules ----


def test_message_format(job_dir: Path) -> None:
    text = resource_error(job_dir, "worker", "yarn.memory", "lots")
    assert text == (
        'resources.json: components.worker."yarn.memory" = "lots": not a whole number. '
        'Fix: give megabytes as a whole number, e.g. "2048", or with a unit, e.g. "2g" or '
        '"512 MiB".'
    )


def test_unknown_top_level_key(job_dir: Path) -> None:
    doc = slider_resources()
    doc["componets"] = doc.pop("components")
    text = errors(job_dir, doc)
    assert_problem(text, "resources.json", "componets", "unknown top-level key", '"components"')


def test_unknown_component(job_dir: Path) -> None:
    doc = slider_resources()
    doc["components"]["workers"] = {"yarn.role.priority": "5"}
    text = errors(job_dir, doc)
    assert_problem(text, "resources.json", "components.workers", "unknown component", '"worker"')


def test_unknown_component_key(job_dir: Path) -> None:
    text = resource_error(job_dir, "worker", "yarn.memroy", "2048")
    assert_problem(
        text, "resources.json", 'components.worker."yarn.memroy"', "unknown key", '"yarn.memory"'
    )


def test_unknown_global_key(job_dir: Path) -> None:
    doc = slider_resources()
    doc["global"]["yarn.vcore"] = "1"
    text = errors(job_dir, doc)
    assert_problem(text, "resources.json", 'global."yarn.vcore"', "unknown key", '"yarn.vcores"')


def test_component_must_be_object(job_dir: Path) -> None:
    doc = slider_resources()
    doc["components"]["worker"] = ["x"]
    text = errors(job_dir, doc)
    assert_problem(text, "resources.json", "components.worker", "must be an object")


@pytest.mark.parametrize("value", [True, "1.5", 1.5, None, "two"])
def test_numbers_reject_booleans_floats_and_text(job_dir: Path, value: Any) -> None:
    text = resource_error(job_dir, "ps", "yarn.component.instances", value)
    assert_problem(
        text, "resources.json", 'components.ps."yarn.component.instances"', "not a whole number"
    )


def test_numbers_may_have_blanks_around(job_dir: Path) -> None:
    job = load(job_dir, resources_with("ps", **{"yarn.component.instances": " 3 "}))
    assert comp(job, "ps").instances == 3


def test_priority_missing(job_dir: Path) -> None:
    doc = slider_resources()
    del doc["components"]["worker"]["yarn.role.priority"]
    text = errors(job_dir, doc)
    assert_problem(text, "resources.json", 'components.worker."yarn.role.priority"', "missing")


def test_priority_at_least_one(job_dir: Path) -> None:
    text = resource_error(job_dir, "worker", "yarn.role.priority", "0")
    assert_problem(text, "resources.json", 'components.worker."yarn.role.priority"', "at least 1")


def test_priority_unique(job_dir: Path) -> None:
    text = resource_error(job_dir, "worker", "yarn.role.priority", "2")
    assert_problem(
        text,
        "resources.json",
        'components.worker."yarn.role.priority"',
        "chiefworker and worker both have priority 2",
        "its own priority",
    )


def test_instances_not_negative(job_dir: Path) -> None:
    text = resource_error(job_dir, "ps", "yarn.component.instances", "-1")
    assert_problem(text, "resources.json", 'components.ps."yarn.component.instances"', "at least 0")


def test_zero_ps_and_workers_allowed(job_dir: Path) -> None:
    doc = slider_resources()
    doc["components"]["ps"]["yarn.component.instances"] = "0"
    doc["components"]["worker"]["yarn.component.instances"] = 0
    job = load(job_dir, doc)
    assert [c.name for c in job.spec.roles] == ["chiefworker"]
    assert job.spec.total_tasks() == 1
    assert job.spec.role("ps") is None  # a component without containers: nothing to run


def test_without_chiefworker_worker_0_is_the_chief(job_dir: Path) -> None:
    """Slider's own package: ps, worker and tensorboard; its script makes worker 0 the chief."""
    doc = slider_resources()
    del doc["components"]["chiefworker"]
    job = load(job_dir, doc)
    assert [c.name for c in job.spec.roles] == ["ps", "worker"]


def test_neither_chiefworker_nor_worker(job_dir: Path) -> None:
    doc = slider_resources()
    del doc["components"]["chiefworker"]
    del doc["components"]["worker"]
    text = errors(job_dir, doc)
    assert_problem(text, "resources.json", "components", "no chiefworker and no worker",
                   'add "worker"')


def test_without_chiefworker_workers_cannot_be_zero_or_ignored(job_dir: Path) -> None:
    doc = slider_resources()
    del doc["components"]["chiefworker"]
    doc["components"]["worker"]["yarn.component.instances"] = "0"
    assert_problem(errors(job_dir, doc), "resources.json",
                   'components.worker."yarn.component.instances"', "worker 0 is its chief")
    doc["components"]["worker"]["yarn.component.instances"] = "2"
    doc["components"]["worker"]["yarn.container.failure.policy"] = "ignore"
    assert_problem(errors(job_dir, doc), "resources.json",
                   'components.worker."yarn.container.failure.policy"', "worker 0 is the chief")


def test_slider_data_and_checkpoint_keys(job_dir: Path) -> None:
    app = app_with(**{"user.data.dir": "hdfs://default/user/${USER_NAME}/mnist-data",
                      "tensor.board.port": "${tensorboard.ALLOCATED_PORT}{PER_CONTAINER}"})
    job = load(job_dir, app=app, user="alice")
    assert job.spec.data_dir == "hdfs://default/user/alice/mnist-data"
    assert job.spec.checkpoint_prefix == "hdfs://hdpdev/user/alice/.slider/cluster"
    assert "site.global.tensor.board.port" in job.client.ignored
    both = app_with(**{"user.work.dir": "hdfs:///jobs/${APP_ID}"})
    assert_problem(errors(job_dir, app=both), "appConfig.json",
                   'global."site.global.user.checkpoint.prefix"', "both this and")
    odd = app_with(**{"user.data.dir": "hdfs:///data/${APP_ID}"})
    assert_problem(errors(job_dir, app=odd), "appConfig.json",
                   'global."site.global.user.data.dir"', "unknown placeholder ${APP_ID}")


@pytest.mark.parametrize("count", ["0", "2"])
def test_exactly_one_chief(job_dir: Path, count: str) -> None:
    text = resource_error(job_dir, "chiefworker", "yarn.component.instances", count)
    assert_problem(
        text,
        "resources.json",
        'components.chiefworker."yarn.component.instances"',
        "exactly 1 chief",
        'set it to "1"',
    )


@pytest.mark.parametrize("value", ["31", "1048577"])
def test_memory_range(job_dir: Path, value: str) -> None:
    text = resource_error(job_dir, "worker", "yarn.memory", value)
    assert_problem(text, "resources.json", MEMORY, "between 32 and 1048576 MB", "from 32 to")


@pytest.mark.parametrize("value", ["0", "1025"])
def test_vcores_range(job_dir: Path, value: str) -> None:
    text = resource_error(job_dir, "worker", "yarn.vcores", value)
    assert_problem(text, "resources.json", 'components.worker."yarn.vcores"', "1 and 1024")


def test_gpus(job_dir: Path) -> None:
    job = load(job_dir, resources_with("worker", **{"yarn.gpus": "2"}))
    assert comp(job, "worker").gpus == 2
    assert comp(job, "ps").gpus == 0
    text = resource_error(job_dir, "worker", "yarn.gpus", "65")
    assert_problem(text, "resources.json", 'components.worker."yarn.gpus"', "0 and 64")


@pytest.mark.parametrize("value, expected", [("-1", -1), ("0", 0), ("3", 3)])
def test_failure_threshold_values(job_dir: Path, value: str, expected: int) -> None:
    job = load(job_dir, resources_with("worker", **{"yarn.container.failure.threshold": value}))
    assert comp(job, "worker").failure_threshold == expected


def test_failure_threshold_below_minus_one(job_dir: Path) -> None:
    text = resource_error(job_dir, "worker", "yarn.container.failure.threshold", "-2")
    assert_problem(
        text,
        "resources.json",
        'components.worker."yarn.container.failure.threshold"',
        "at least -1",
        "-1 = unlimited",
    )
    assert "Slider treated 0 as unlimited" in FAILURE_THRESHOLD_MEANING


@pytest.mark.parametrize(
    "value, expected", [("", None), ("gpu", "gpu"), (" gpu.v100 ", "gpu.v100")]
)
def test_label(job_dir: Path, value: str, expected: str | None) -> None:
    job = load(job_dir, resources_with("worker", **{"yarn.label.expression": value}))
    assert comp(job, "worker").label == expected


@pytest.mark.parametrize("value", ["gpu && fast", "gpu||fast", "gpu,fast", "gpu fast"])
def test_label_one_only(job_dir: Path, value: str) -> None:
    text = resource_error(job_dir, "worker", "yarn.label.expression", value)
    assert_problem(
        text,
        "resources.json",
        'components.worker."yarn.label.expression"',
        "one node label per request",
    )


@pytest.mark.parametrize("value", ["-gpu", "gpu!", 3])
def test_label_bad_name(job_dir: Path, value: Any) -> None:
    text = resource_error(job_dir, "worker", "yarn.label.expression", value)
    assert_problem(text, "resources.json", 'components.worker."yarn.label.expression"', "label")


def test_tensorboard_is_optional(job_dir: Path) -> None:
    doc = slider_resources()
    del doc["components"]["tensorboard"], doc["components"]["slider-appmaster"]
    job = load(job_dir, doc)
    assert job.spec.role("tensorboard") is None
    assert job.spec.total_tasks() == 8


def test_all_problems_of_both_files_at_once(job_dir: Path) -> None:
    doc = resources_with("worker", **{"yarn.memory": "lots", "yarn.vcores": "0"})
    doc["components"]["ps"]["yarn.gpus"] = "x"
    with pytest.raises(JobConfigError) as info:
        load(job_dir, doc, app_with(queue=""))
    keys = [p.key for p in info.value.problems]
    assert keys == [
        'components.ps."yarn.gpus"',
        MEMORY,
        'components.worker."yarn.vcores"',
        'global."site.global.queue"',
    ]
    assert str(info.value) == describe_problems(info.value.problems)
    assert isinstance(info.value, ValueError)


def test_problem_without_key_or_value() -> None:
    problem = Problem("a.json", None, None, "no such file", "check the path.")
    assert str(problem) == "a.json: no such file. Fix: check the path."


# ---- appConfig.json rules ----


def test_entry_missing(job_dir: Path) -> None:
    doc = slider_app()
    del doc["global"]["site.global.user.scripts.entry"]
    text = errors(job_dir, app=doc)
    assert_problem(text, "appConfig.json", ENTRY, "missing", "train.py")


def test_entry_must_exist(job_dir: Path) -> None:
    text = errors(job_dir, app=app_with(**{"user.scripts.entry": "train.py"}))
    assert_problem(text, "appConfig.json", ENTRY, '= "train.py"', "no such file", "create it")


@pytest.mark.parametrize("entry", ["../ymnist.py", "/etc/passwd", "sub/../../x.py"])
def test_entry_stays_in_scripts_dir(job_dir: Path, entry: str) -> None:
    text = errors(job_dir, app=app_with(**{"user.scripts.entry": entry}))
    assert_problem(text, "appConfig.json", ENTRY, "outside the scripts directory")


def test_entry_in_subdirectory(job_dir: Path) -> None:
    (job_dir / "pkg").mkdir()
    (job_dir / "pkg" / "train.py").write_text("")
    app = load(job_dir, app=app_with(**{"user.scripts.entry": "pkg/train.py"}))
    assert app.spec.entry == "pkg/train.py"
    assert app.client.entry_path == job_dir / "pkg" / "train.py"
    assert app.spec.name == "tfyarn-train"


def test_scripts_dir_relative_to_app_config(job_dir: Path, monkeypatch: Any) -> None:
    (job_dir / "src").mkdir()
    (job_dir / "src" / "ymnist.py").write_text("")
    write_doc(job_dir / "resources.json", slider_resources())
    cfg = write_doc(job_dir / "appConfig.json", app_with(**{"user.scripts.dir": "src"}))
    monkeypatch.chdir("/")  # relative to appConfig.json, not the working directory
    app = load_job(job_dir / "resources.json", cfg)
    assert app.client.scripts_dir == job_dir / "src"
    assert app.client.entry_path == job_dir / "src" / "ymnist.py"


def test_scripts_dir_must_exist(job_dir: Path) -> None:
    text = errors(job_dir, app=app_with(**{"user.scripts.dir": "nowhere"}))
    key = 'global."site.global.user.scripts.dir"'
    assert_problem(text, "appConfig.json", key, "no such directory", str(job_dir))


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--epochs", "5"], ("--epochs", "5")),
        ("--epochs 5 --name 'a b'", ("--epochs", "5", "--name", "a b")),
    ],
)
def test_script_args(job_dir: Path, args: Any, expected: tuple[str, ...]) -> None:
    assert load(job_dir, app=app_with(**{"user.scripts.args": args})).spec.script_args == expected


@pytest.mark.parametrize("args", ["--name 'unclosed", ["--epochs", 5], {"a": "b"}])
def test_script_args_errors(job_dir: Path, args: Any) -> None:
    text = errors(job_dir, app=app_with(**{"user.scripts.args": args}))
    assert_problem(text, "appConfig.json", 'global."site.global.user.scripts.args"')


def test_env(job_dir: Path) -> None:
    env = {"DATA_DIR": "/data", "_X1": ""}
    assert load(job_dir, app=app_with(**{"user.env": env})).spec.env == env


@pytest.mark.parametrize(
    "name, value, fragment",
    [
        ("1BAD", "x", "not a valid environment variable name"),
        ("A-B", "x", "not a valid environment variable name"),
        ("TFYARN_ROLE", "x", "reserved"),
        ("TF_CONFIG", "{}", "reserved"),
        ("EPOCHS", 5, "must be a string"),
    ],
)
def test_env_errors(job_dir: Path, name: str, value: Any, fragment: str) -> None:
    text = errors(job_dir, app=app_with(**{"user.env": {name: value}}))
    key = f'global."site.global.user.env".{name}'
    assert_problem(text, "appConfig.json", key, fragment)


def test_env_must_be_object(job_dir: Path) -> None:
    text = errors(job_dir, app=app_with(**{"user.env": ["A=b"]}))
    assert_problem(text, "appConfig.json", 'global."site.global.user.env"', "must be an object")


def test_queue_name_python_docker(job_dir: Path) -> None:
    app = load(
        job_dir,
        app=app_with(queue="research", **{"app.name": "mnist", "python": "/opt/py/bin/python3"}),
    )
    assert (app.spec.queue, app.spec.name, app.spec.python) == (
        "research", "mnist", "/opt/py/bin/python3")
    assert app.spec.docker_image == "ytensorflow:0.2.1"
    assert "site.global.docker.image" not in app.client.ignored


@pytest.mark.parametrize("key", ["queue", "app.name", "python", "docker.image"])
@pytest.mark.parametrize("value", ["", "  ", 7])
def test_text_settings_not_empty(job_dir: Path, key: str, value: Any) -> None:
    text = errors(job_dir, app=app_with(**{key: value}))
    assert_problem(text, "appConfig.json", f'global."site.global.{key}"', "must")


def test_app_name_length(job_dir: Path) -> None:
    assert load(job_dir, app=app_with(**{"app.name": "n" * 256})).spec.name == "n" * 256
    text = errors(job_dir, app=app_with(**{"app.name": "n" * 257}))
    assert_problem(text, "appConfig.json", 'global."site.global.app.name"', "256 characters")


def test_work_dir_placeholders(job_dir: Path) -> None:
    work_dir = "hdfs:///user/${USER_NAME}/jobs/${APP_ID}"
    doc = app_with(**{"user.work.dir": work_dir})
    del doc["global"]["site.global.user.checkpoint.prefix"]  # one or the other says where
    app = load(job_dir, app=doc, user="alice")
    assert app.spec.work_dir == "hdfs:///user/alice/jobs/${APP_ID}"


def test_work_dir_unknown_placeholder(job_dir: Path) -> None:
    text = errors(job_dir, app=app_with(**{"user.work.dir": "/x/${ZK_HOST}"}))
    key = 'global."site.global.user.work.dir"'
    assert_problem(text, "appConfig.json", key, "${ZK_HOST}", "${USER_NAME}")


@pytest.mark.parametrize("value, expected", [("60", 60.0), (2.5, 2.5), (10, 10.0)])
def test_registration_timeout(job_dir: Path, value: Any, expected: float) -> None:
    app = load(job_dir, app=app_with(**{"registration.timeout": value}))
    assert app.spec.registration_timeout_s == expected


@pytest.mark.parametrize("value", ["0", -5, "soon", True, "nan", "inf"])
def test_registration_timeout_positive(job_dir: Path, value: Any) -> None:
    text = errors(job_dir, app=app_with(**{"registration.timeout": value}))
    key = 'global."site.global.registration.timeout"'
    assert_problem(text, "appConfig.json", key, "positive number of seconds")


def test_port_keys_ignored_for_any_component(job_dir: Path) -> None:
    app = load(job_dir, app=app_with(**{"evaluator.port": "1234"}))
    assert "site.global.evaluator.port" in app.client.ignored


def test_unknown_app_key(job_dir: Path) -> None:
    text = errors(job_dir, app=app_with(**{"user.scripts.entri": "ymnist.py"}))
    key = 'global."site.global.user.scripts.entri"'
    assert_problem(text, "appConfig.json", key, "unknown key", '"site.global.user.scripts.entry"')


def test_app_components(job_dir: Path) -> None:
    doc = slider_app()
    doc["components"] = {}
    assert load(job_dir, app=doc)
    doc["components"] = {"worker": {"site.global.x": "1"}}
    text = errors(job_dir, app=doc)
    assert_problem(text, "appConfig.json", "components", "not supported", '"global"')


# ---- reading the files ----


def test_bad_json_has_line_and_column(job_dir: Path) -> None:
    text = errors(job_dir, '{\n  "components": {\n    "ps": {,}\n  }\n}')
    assert_problem(text, "resources.json", None, "not valid JSON", "line 3, column 12")


def test_bad_yaml_has_line_and_column(job_dir: Path) -> None:
    res = write_doc(job_dir / "resources.yaml", "components:\n  ps: {a: 1\n  worker: 2\n")
    cfg = write_doc(job_dir / "appConfig.json", SLIDER_APP_CONFIG)
    with pytest.raises(JobConfigError) as info:
        load_job(res, cfg)
    (problem,) = info.value.problems
    assert problem.file == str(res)
    assert "not valid YAML" in problem.message and "line 3, column 9" in problem.message
    assert "line 3, column 9" in problem.fix


@pytest.mark.parametrize("doc", ["[1, 2]", '"text"', "null"])
def test_document_must_be_object(job_dir: Path, doc: str) -> None:
    text = errors(job_dir, app=doc)
    assert_problem(text, "appConfig.json", None, "must be an object")


def test_empty_yaml_document(job_dir: Path) -> None:
    res = write_doc(job_dir / "resources.yml", "")
    with pytest.raises(JobConfigError) as info:
        load_job(res, write_doc(job_dir / "appConfig.json", SLIDER_APP_CONFIG))
    assert "must be an object, not null" in str(info.value)


def test_missing_file_and_paths_as_given(job_dir: Path) -> None:
    write_doc(job_dir / "resources.json", slider_resources())
    bad_app = copy.deepcopy(slider_app())
    bad_app["global"]["site.global.queue"] = 1
    with pytest.raises(JobConfigError) as info:
        load_job("nope/resources.json", "nope/appConfig.json")
    text = str(info.value)
    assert_problem(text, "nope/resources.json", None, "no such file", "check the path")
    assert_problem(text, "nope/appConfig.json", None, str(job_dir / "nope" / "appConfig.json"))
    write_doc(job_dir / "appConfig.json", bad_app)
    with pytest.raises(JobConfigError) as info:
        load_job("resources.json", "./appConfig.json")
    assert str(info.value).startswith('./appConfig.json: global."site.global.queue" = 1:')


def test_app_config_path_with_dot_dot(job_dir: Path) -> None:
    (job_dir / "other").mkdir()
    write_doc(job_dir / "resources.json", slider_resources())
    write_doc(job_dir / "appConfig.json", slider_app())
    app = load_job("resources.json", "other/../appConfig.json")
    assert app.client.scripts_dir == job_dir
    assert app.client.entry_path == job_dir / "ymnist.py"


# ---- failure handling, timeouts, secrets ----


def test_failure_policy(job_dir: Path) -> None:
    assert comp(load(job_dir), "worker").failure_policy == "restart"
    job = load(job_dir, resources_with("worker", **{"yarn.container.failure.policy": "ignore"}))
    assert comp(job, "worker").failure_policy == "ignore"
    text = resource_error(job_dir, "worker", "yarn.container.failure.policy", "retry")
    assert_problem(text, "resources.json", 'components.worker."yarn.container.failure.policy"',
                   '"restart", "fatal", "ignore"')


def test_only_workers_may_be_ignored(job_dir: Path) -> None:
    text = resource_error(job_dir, "ps", "yarn.container.failure.policy", "ignore")
    assert_problem(text, "resources.json", 'components.ps."yarn.container.failure.policy"',
                   "cannot be ignored", '"ignore" is for workers')


def test_one_tensorboard_at_most(job_dir: Path) -> None:
    text = resource_error(job_dir, "tensorboard", "yarn.component.instances", "2")
    assert_problem(text, "resources.json", 'components.tensorboard."yarn.component.instances"',
                   "at most 1 TensorBoard")


def test_one_evaluator_at_most(job_dir: Path) -> None:
    text = resource_error(job_dir, "evaluator", "yarn.component.instances", "2")
    assert_problem(text, "resources.json", 'components.evaluator."yarn.component.instances"',
                   "at most 1 evaluator per job", 'set it to "1" (or "0" for none)')


def test_the_evaluator_is_planned_beside_the_cluster(job_dir: Path) -> None:
    from tfyarn.submission.plan import build_plan

    job = load(job_dir, resources_with("evaluator", **{
        "yarn.role.priority": "9", "yarn.component.instances": "1",
        "yarn.container.failure.policy": "ignore"}))
    plan = build_plan(job)
    assert plan.evaluator and plan.evaluator.failure_policy == "ignore"
    assert "evaluator" not in [role.name for role in plan.roles]  # not in the TF cluster
    assert plan.evaluation_timeout_s == 600.0


def test_job_settings_defaults(job_dir: Path) -> None:
    app = load(job_dir)
    spec = app.spec
    assert (spec.success_policy, spec.allocation_timeout_s, spec.deadline_s, spec.am_max_attempts,
            app.client.secret_files) == ("chief", None, None, 2, {})


def test_job_settings(job_dir: Path) -> None:
    app = load(job_dir, app=app_with(**{
        "success.policy": "all-workers", "allocation.timeout": "30", "job.deadline": 3600,
        "am.max.attempts": "3"}))
    assert (app.spec.success_policy, app.spec.allocation_timeout_s, app.spec.deadline_s,
            app.spec.am_max_attempts) == ("all-workers", 30.0, 3600.0, 3)


@pytest.mark.parametrize(("key", "value", "fragment"), [
    ("success.policy", "everyone", 'must be one of "chief", "all-workers"'),
    ("allocation.timeout", "soon", "positive number of seconds"),
    ("job.deadline", -5, "positive number of seconds"),
    ("am.max.attempts", "0", "from 1 to 10"),
    ("evaluation.timeout", "never", "positive number of seconds"),
    ("allocation.hold", -30, "positive number of seconds"),
    ("allocation.hold", "a minute", "positive number of seconds"),
    ("application.priority", -1, "a whole number of at least 0"),
    ("application.priority", "high", "a whole number of at least 0"),
])
def test_job_settings_checked(job_dir: Path, key: str, value: Any, fragment: str) -> None:
    text = errors(job_dir, app=app_with(**{key: value}))
    assert_problem(text, "appConfig.json", f'global."site.global.{key}"', fragment)


def test_secrets_are_paths_never_contents(job_dir: Path) -> None:
    (job_dir / "token").write_text("hunter2")
    app = load(job_dir, app=app_with(**{"user.secrets": {"API_TOKEN": "token"}}))
    assert app.client.secret_files == {"API_TOKEN": job_dir / "token"}
    assert "hunter2" not in repr(app)


def test_secret_file_must_exist_and_name_be_plain(job_dir: Path) -> None:
    text = errors(job_dir, app=app_with(**{"user.secrets": {"A-B": "x", "KEY": "missing"}}))
    assert_problem(text, "appConfig.json", 'global."site.global.user.secrets".A-B',
                   "not a valid secret name")
    assert_problem(text, "appConfig.json", 'global."site.global.user.secrets".KEY',
                   "no such file")


# ---- a key written twice ----

def test_json_key_written_twice_names_both_places(job_dir: Path) -> None:
    text = SLIDER_RESOURCES.replace('"ps":{', '"worker":{"yarn.memory":"1"},"ps":{', 1).replace(
        '"yarn.vcores":"1"}', '"yarn.vcores":"1","yarn.vcores":"2"}', 1)
    out = errors(job_dir, resources=text)
    first = text.index('"worker"') + 1
    again = text.index('"worker"', first) + 1
    assert_problem(out, "resources.json", "components.worker",
                   f"written twice, at line 1, column {first} and at line 1, column {again}; "
                   "only the last would count")
    assert_problem(out, "resources.json", 'components.tensorboard."yarn.vcores"', "twice")


def test_yaml_key_written_twice(job_dir: Path) -> None:
    (job_dir / "resources.yaml").write_text(
        "components:\n  chiefworker:\n    yarn.role.priority: 1\n"
        "  worker:\n    yarn.role.priority: 2\n  worker:\n    yarn.role.priority: 3\n")
    write_doc(job_dir / "appConfig.json", SLIDER_APP_CONFIG)
    with pytest.raises(JobConfigError) as info:
        load_job("resources.yaml", "appConfig.json")
    assert_problem(str(info.value), "resources.yaml", "components.worker",
                   "written twice, at line 4, column 3 and at line 6, column 3")


def test_key_written_twice_in_json_that_yaml_cannot_read(job_dir: Path) -> None:
    # Tabs make the text unreadable as YAML: the key is named without its places.
    text = SLIDER_RESOURCES.replace('{"schema"', '{\n\t"global": {},\n\t"schema"', 1)
    assert_problem(errors(job_dir, resources=text), "resources.json", None,
                   'the key "global" is written twice in one object')


def test_access_lists_are_yarns_users_and_groups(job_dir: Path) -> None:
    app = load(job_dir, app=app_with(**{"acl.view": "alice,bob ml-team",
                                        "acl.modify": " ml-admins"}))
    assert (app.spec.view_acl, app.spec.modify_acl) == ("alice,bob ml-team", " ml-admins")
    assert (load(job_dir).spec.view_acl, load(job_dir).spec.modify_acl) == (None, None)


@pytest.mark.parametrize("value", ["alice, bob", "", "alice bob carol", 3, ",", "a,,b\tc"])
def test_access_lists_are_checked(job_dir: Path, value: Any) -> None:
    assert_problem(errors(job_dir, app=app_with(**{"acl.view": value})), "appConfig.json",
                   'global."site.global.acl.view"', 'must be a YARN access list, "users groups"',
                   '"alice,bob ml-team"')
