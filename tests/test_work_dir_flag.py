"""site.global.user.scripts.work_dir_flag (issue 35): the flag that gives a task its local work
dir, what a script that refuses a flag tfyarn passed is told, and the dry run's work dir being
the one the agent passes (no cluster needed)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from jobtools import APPS, write_doc

from appmaster.agent import main as agent
from appmaster.agent.refusedflags import refused_flag_hint, refused_flags
from appmaster.common import registry
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import Role
from tfyarn.jobconfig import JobConfig, JobConfigError, load_job
from tfyarn.submission.plan import (
    CONTAINER_DIR,
    AppSpecExtras,
    build_plan,
    format_plan,
    placeholder_spec,
    plan_document,
)

KEY = "site.global.user.scripts.work_dir_flag"
RESOURCES = {"components": {
    "ps": {"yarn.role.priority": "1"},
    "chiefworker": {"yarn.role.priority": "2"},
    "worker": {"yarn.role.priority": "3", "yarn.component.instances": "2"}}}
FOUR_FLAGS = ["--ps_hosts=p:1", "--worker_hosts=c:1,w:1", "--job_name=worker", "--task_index=1"]


@pytest.fixture(autouse=True)
def hdfs_default_fs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster whose work dir defaults to HDFS, as every real one."""
    conf = tmp_path / "hadoop-conf"
    conf.mkdir()
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn:8020</value>"
        "</property></configuration>")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)


def load(tmp_path: Path, **settings: object) -> JobConfig:
    (tmp_path / "train.py").write_text("")
    write_doc(tmp_path / "resources.json", RESOURCES)
    write_doc(tmp_path / "appConfig.json", {"global": {
        "site.global.user.scripts.entry": "train.py",
        **{"site.global." + key: value for key, value in settings.items()}}})
    return load_job(tmp_path / "resources.json", tmp_path / "appConfig.json", user="alice")


def worker_command(plan: JobPlan, container_dir: str = "/c") -> list[str]:
    spec = ClusterSpec(ps=("p:1",), chief=("c:1",), workers=("w:1",))
    return plan.task_command(spec, "worker", 0, container_dir, "application_1_0001")[2:]


# ---------------------------------------------------------------- the setting


def test_by_default_tasks_get_work_dir_and_with_slider_s_prefix_ckp_dir(tmp_path: Path) -> None:
    assert worker_command(build_plan(load(tmp_path))) == [*FOUR_FLAGS, "--work_dir=/c/work"]
    slider = build_plan(load(tmp_path, **{"user.checkpoint.prefix": "hdfs:///ckpt"}))
    assert worker_command(slider) == [*FOUR_FLAGS, "--ckp_dir=/c/work"]


@pytest.mark.parametrize("flag", ["--model_dir", "--train_dir", "--logdir", "--checkpoint-dir"])
def test_another_flag_carries_the_work_dir(tmp_path: Path, flag: str) -> None:
    job = load(tmp_path, **{"user.scripts.work_dir_flag": f" {flag} "})
    assert job.spec.work_dir_flag == flag
    plan = JobPlan.from_json(build_plan(job).to_json())  # as the containers read it
    assert plan.work_dir_flag == flag
    assert worker_command(plan) == [*FOUR_FLAGS, f"{flag}=/c/work"]


def test_the_setting_wins_over_slider_s_ckp_dir(tmp_path: Path) -> None:
    plan = build_plan(load(tmp_path, **{"user.checkpoint.prefix": "hdfs:///ckpt",
                                        "user.scripts.work_dir_flag": "--model_dir"}))
    assert worker_command(plan) == [*FOUR_FLAGS, "--model_dir=/c/work"]


def test_empty_gives_no_work_dir_flag_at_all(tmp_path: Path) -> None:
    plan = build_plan(load(tmp_path, **{"user.scripts.work_dir_flag": "",
                                        "user.scripts.args": ["--epochs", "5"]}))
    assert plan.work_dir_flag == ""
    assert worker_command(plan) == [*FOUR_FLAGS, "--epochs", "5"]
    slider = build_plan(load(tmp_path, **{"user.checkpoint.prefix": "hdfs:///ckpt",
                                          "user.scripts.work_dir_flag": ""}))
    assert worker_command(slider) == FOUR_FLAGS


@pytest.mark.parametrize("value", ["model_dir", "-model_dir", "--", "--model dir",
                                   "--model_dir=x", "--modèle", 5, None, ["--model_dir"]])
def test_a_bad_value_names_the_file_the_key_and_the_fix(tmp_path: Path, value: object) -> None:
    with pytest.raises(JobConfigError) as info:
        load(tmp_path, **{"user.scripts.work_dir_flag": value})
    text = str(info.value)
    assert "appConfig.json" in text and f'"{KEY}"' in text, text
    assert 'must be a flag such as "--model_dir"' in text, text
    assert 'or "" if it has none (the path is in TFYARN_WORK_DIR)' in text, text


def test_a_defaults_file_may_give_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = tmp_path / "defaults.yaml"
    defaults.write_text(f'"{KEY}": "--model_dir"\n')
    monkeypatch.setenv("TFYARN_CONFIG", str(defaults))
    assert load(tmp_path).spec.work_dir_flag == "--model_dir"


# ---------------------------------------------------------------- a refused flag

ABSL_TEXT = (
    "2026-01-01 12:00:00.000000: I tensorflow/core/util/port.cc:153] oneDNN custom operations "
    "are on.\n"
    "FATAL Flags parsing error: Unknown command line flag 'work_dir'. Did you mean: log_dir ?\n"
    "Pass --helpshort or --helpfull to see help on flags.\n")
ARGPARSE_TEXT = (
    "usage: train.py [-h] --ps_hosts PS_HOSTS --worker_hosts WORKER_HOSTS\n"
    "                --job_name JOB_NAME --task_index TASK_INDEX\n"
    "train.py: error: unrecognized arguments: --data_dir=/c/data --work_dir=/c/work --epochs 5\n")
WORK_DIR_HINT = (
    "tfyarn: the script does not define --work_dir, which tfyarn passes every task: set "
    f"{KEY} to the flag your script uses for its model/checkpoint dir, or to \"\" for none "
    "(the path is in TFYARN_WORK_DIR).")


def test_the_flags_absl_and_argparse_refuse() -> None:
    assert refused_flags(ABSL_TEXT) == ["--work_dir"]
    assert refused_flags(ARGPARSE_TEXT) == ["--data_dir", "--work_dir", "--epochs"]
    assert refused_flags("Traceback ...\nabsl.flags._exceptions.UnrecognizedFlagError: Unknown "
                         "command line flag 'model_dir'\n") == ["--model_dir"]
    assert refused_flags("ValueError: no data\n") == []


def test_a_refused_work_dir_flag_names_the_setting() -> None:
    assert refused_flag_hint(ABSL_TEXT, "--work_dir") == WORK_DIR_HINT
    hint = refused_flag_hint(ARGPARSE_TEXT, "--work_dir", data_dir=True)
    assert hint.splitlines() == [
        "tfyarn: the script does not define --data_dir, which tfyarn passes every task of a "
        "job with data (site.global.data, site.global.user.data.dir): define it (the path is "
        "also in TFYARN_DATA_DIR).", WORK_DIR_HINT]  # --epochs is the user's own: no word
    assert refused_flag_hint(ABSL_TEXT.replace("work_dir", "ckp_dir"), "--ckp_dir") == \
        WORK_DIR_HINT.replace("--work_dir", "--ckp_dir")
    assert "--ps_hosts --worker_hosts --job_name --task_index" in refused_flag_hint(
        ABSL_TEXT.replace("work_dir", "ps_hosts"), "--work_dir")


def test_no_hint_for_a_flag_tfyarn_did_not_pass() -> None:
    assert refused_flag_hint(ABSL_TEXT, "--model_dir") == ""  # --work_dir: the user's own
    assert refused_flag_hint(ABSL_TEXT, "") == ""
    assert refused_flag_hint(ARGPARSE_TEXT.replace(" --work_dir=/c/work", ""), "--work_dir") == ""
    assert refused_flag_hint("Traceback ...\nValueError: work_dir\n", "--work_dir") == ""


@pytest.mark.parametrize("script", ["absl_task.py", "argparse_task.py"])
def test_the_real_parsers_texts(tmp_path: Path, script: str) -> None:
    """The tiny scripts of the integration tests, run here with an added --work_dir: their
    parsers' own words, as the agent reads them from the script's stderr."""
    env = {**os.environ, "TFYARN_WORK_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, str(APPS / script), *FOUR_FLAGS,
                             "--work_dir=/c/work"], capture_output=True, text=True, timeout=60,
                            env=env)
    assert result.returncode != 0, result
    assert refused_flag_hint(result.stderr, "--work_dir") == WORK_DIR_HINT, result.stderr
    ran = subprocess.run([sys.executable, str(APPS / script), *FOUR_FLAGS], capture_output=True,
                         text=True, timeout=60, env=env)
    assert ran.returncode == 0, ran.stderr
    assert json.loads((tmp_path / "received" / "worker_1.json").read_text())["argv"] == FOUR_FLAGS


def test_the_agent_adds_the_hint_to_the_tail_and_the_task_s_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOG_DIRS", str(tmp_path))
    plan = JobPlan(name="n", entry="train.py", python="python3", work_dir="hdfs:///w", roles=())
    (tmp_path / "worker-0.stderr").write_text(ABSL_TEXT)
    tail = agent._with_hint(plan, "worker-0", 1, ABSL_TEXT)
    assert tail == ABSL_TEXT + WORK_DIR_HINT + "\n"
    assert (tmp_path / "worker-0.stderr").read_text() == tail
    assert agent._with_hint(plan, "worker-0", 0, ABSL_TEXT) == ABSL_TEXT  # it ran: no word


# ---------------------------------------------------------------- the dry run


def test_the_dry_run_shows_the_local_work_dir_each_task_gets(tmp_path: Path) -> None:
    job = load(tmp_path)
    plan = build_plan(job)
    assert plan.work_dir.startswith("hdfs://nn:8020/user/")  # the default, on HDFS
    document = plan_document(job, plan, AppSpecExtras())
    commands = [c for role in document["roles"] for c in role["commands"]]
    assert len(commands) == 4
    assert all(shlex.split(c)[-1] == f"--work_dir={CONTAINER_DIR}/work" for c in commands)
    text = format_plan(document)
    assert f"  work dir: {plan.work_dir}\n" in text
    assert (f"  each task's work dir: {CONTAINER_DIR}/work on its node, given as --work_dir and "
            "TFYARN_WORK_DIR; restored from the work dir before its script starts, the "
            "chief's mirrored to it while it runs") in text


def test_the_dry_run_without_a_work_dir_flag(tmp_path: Path) -> None:
    job = load(tmp_path, **{"user.scripts.work_dir_flag": ""})
    document = plan_document(job, build_plan(job), AppSpecExtras())
    commands = [c for role in document["roles"] for c in role["commands"]]
    assert len(commands) == 4 and not any("_dir" in c for c in commands), commands
    assert ('given in TFYARN_WORK_DIR only (site.global.user.scripts.work_dir_flag is "")'
            in format_plan(document))


def test_a_work_dir_every_node_mounts_is_the_task_s_own(tmp_path: Path) -> None:
    job = load(tmp_path, **{"user.work.dir": "/shared/jobs/${APP_ID}",
                            "user.scripts.work_dir_flag": "--model_dir"})
    document = plan_document(job, build_plan(job), AppSpecExtras())
    assert shlex.split(document["roles"][0]["commands"][0])[-1] == \
        "--model_dir=/shared/jobs/${APP_ID}"
    assert ("each task's work dir: the work dir itself (a path every node mounts), given as "
            "--model_dir and TFYARN_WORK_DIR") in format_plan(document)


class _Link:
    """The rendezvous as the agent waits on it: the spec is out."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec

    def wait(self, key: str, after: int = 0) -> tuple[bytes, int]:
        assert key == registry.spec_key(0), key
        return self.spec.to_json().encode(), after + 1


def test_the_dry_run_and_the_agent_take_the_work_dir_from_one_function(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JobPlan.task_work_dir says where a task works; the dry run's flag, the agent's flag,
    TFYARN_WORK_DIR and the dir the agent makes all come from it, so they cannot differ."""
    job = load(tmp_path, **{"user.scripts.work_dir_flag": "--model_dir"})
    plan = JobPlan.from_json(build_plan(job).to_json())
    container = tmp_path / "container"
    container.mkdir()
    monkeypatch.chdir(container)

    # unchanged: the dry run's command is the agent's, the container dir in place
    spec = placeholder_spec(plan)
    address = spec.addresses("worker")[1]
    task = registry.TaskAssignment(Role.WORKER, 1, 0, 0)
    work = agent.TaskWorkDir.__new__(agent.TaskWorkDir)  # no HDFS here: only its path
    work.path, work.job_dir, work.mirror = plan.task_work_dir("app_1", os.getcwd()), "x", None
    command, (env,) = agent._command_and_environment(_Link(spec), plan, "app_1", task, work, None,
                                                      address)
    dry = plan_document(job, plan, AppSpecExtras())["roles"][2]["commands"][1]
    assert shlex.split(dry) == [
        arg.replace(str(container), CONTAINER_DIR) for arg in command]
    assert command[-1] == f"--model_dir={container}/work" == f"--model_dir={env['TFYARN_WORK_DIR']}"

    # one function: change it and every one of them follows
    monkeypatch.setattr(JobPlan, "task_work_dir",
                        lambda self, app_id, container_dir: f"{container_dir}/elsewhere/{app_id}")
    dry = plan_document(job, plan, AppSpecExtras())["roles"][2]["commands"][1]
    assert shlex.split(dry)[-1] == f"--model_dir={CONTAINER_DIR}/elsewhere/${{APP_ID}}"
    local = plan.work_dir.replace("hdfs://nn:8020", str(tmp_path / "mounted"))
    made = agent.TaskWorkDir(JobPlan.from_json(json.dumps(
        {**json.loads(plan.to_json()), "work_dir": local})), "app_1", "worker", 1)
    assert made.path == f"{container}/elsewhere/app_1" and Path(made.path).is_dir()
    command, (env,) = agent._command_and_environment(_Link(spec), plan, "app_1", task, made, None,
                                                      address)
    assert command[-1] == f"--model_dir={container}/elsewhere/app_1"
    assert env["TFYARN_WORK_DIR"] == made.path
