"""`tfyarn submit` refuses bad job files before reaching YARN, and `--dry-run` shows the plan.

No YARN is needed here: every submission runs with an environment whose PATH has no
`yarn` (and no Hadoop settings), so a job that got past validation would fail with the
missing-yarn error; each test asserts the config error is reported instead.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from jobtools import TFYARN, write_doc

from appmaster.common.settings import FAILURE_THRESHOLD_MEANING
from tfyarn.cli.main import main
from tfyarn.submission.workdir import LOCAL_DEFAULT as DEFAULT_WORK_DIR

REPO = Path(__file__).resolve().parent.parent
SEED_RESOURCES = REPO / "resources.json"
SEED_APP_CONFIG = REPO / "appConfig.json"
MISSING_YARN = "`yarn` is not on PATH"
ENTRY = "site.global.user.scripts.entry"


def env_without_yarn() -> dict[str, str]:
    """os.environ minus any `yarn` on PATH and the Hadoop settings that find a cluster."""
    env = {
        k: v for k, v in os.environ.items()
        if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_HOME", "HADOOP_YARN_HOME")
    }
    dirs = [d for d in env.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "yarn").exists()]
    env["PATH"] = os.pathsep.join(dirs)
    assert shutil.which("yarn", path=env["PATH"]) is None
    return env


def submit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`tfyarn submit ARGS` in `cwd`, unable to reach any YARN."""
    return subprocess.run(
        [*TFYARN, "submit", *args],
        cwd=cwd, env=env_without_yarn(), capture_output=True, text=True, timeout=60,
    )


def seed_resources() -> dict[str, Any]:
    return json.loads(SEED_RESOURCES.read_text())


def seed_app(tmp_path: Path) -> dict[str, Any]:
    """The seed appConfig, its scripts dir pointing at a tiny script in tmp_path."""
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    (scripts / "train.py").write_text("print('training')\n")
    app = json.loads(SEED_APP_CONFIG.read_text())
    app["global"]["site.global.user.scripts.dir"] = str(scripts)
    app["global"][ENTRY] = "train.py"
    return app


def assert_refused(result: subprocess.CompletedProcess[str], file: str, key: str | None,
                   *fragments: str) -> str:
    """Non-zero exit, nothing submitted, and one line naming file and key with a fix."""
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert MISSING_YARN not in out, f"validation let the job through to YARN:\n{out}"
    assert "Submitted" not in out, out
    assert "nothing was submitted" in out, out
    head = file if key is None else f"{file}: {key}"
    lines = [line for line in out.splitlines() if line.startswith(head)]
    assert any("Fix: " in line and all(f in line for f in fragments) for line in lines), (
        f"no line starting {head!r} with a fix and {fragments} in:\n{out}"
    )
    return out


def run_bad(tmp_path: Path, resources: Any = None, app: Any = None,
            resources_name: str = "resources.json",
            app_name: str = "appConfig.json") -> subprocess.CompletedProcess[str]:
    write_doc(tmp_path / resources_name, seed_resources() if resources is None else resources)
    write_doc(tmp_path / app_name, seed_app(tmp_path) if app is None else app)
    return submit(tmp_path, "--resources", resources_name, "--app-config", app_name, "--wait")


def test_valid_job_gets_as_far_as_yarn(tmp_path: Path) -> None:
    """The control: in the same environment good files pass validation and hit missing yarn
    (with an interpreter every node has: shipping this one needs the cluster's HDFS)."""
    app = seed_app(tmp_path)
    app["global"]["site.global.python"] = "/usr/bin/python3"
    write_doc(tmp_path / "resources.json", seed_resources())
    write_doc(tmp_path / "appConfig.json", app)
    result = submit(tmp_path, "--wait", "--skip-preflight")  # no cluster to ask first
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert MISSING_YARN in out, out
    assert "nothing was submitted" not in out


def test_unknown_component_suggests_closest(tmp_path: Path) -> None:
    res = seed_resources()
    res["components"]["workers"] = res["components"].pop("worker")
    assert_refused(run_bad(tmp_path, resources=res), "resources.json", "components.workers",
                   "unknown component", 'did you mean "worker"?')


def test_unknown_key_suggests_closest(tmp_path: Path) -> None:
    res = seed_resources()
    res["components"]["worker"]["yarn.memroy"] = res["components"]["worker"].pop("yarn.memory")
    assert_refused(run_bad(tmp_path, resources=res), "resources.json",
                   'components.worker."yarn.memroy"', "unknown key", 'did you mean "yarn.memory"?')


def test_neither_chief_nor_worker(tmp_path: Path) -> None:
    """Without a chiefworker, worker 0 is the chief; without either, nothing could train."""
    res = seed_resources()
    del res["components"]["chiefworker"]
    del res["components"]["worker"]
    assert_refused(run_bad(tmp_path, resources=res), "resources.json",
                   "components", "no chiefworker and no worker", 'add "worker"')


def test_priorities_must_be_unique(tmp_path: Path) -> None:
    res = seed_resources()
    res["components"]["worker"]["yarn.role.priority"] = "1"  # the ps has 1
    assert_refused(run_bad(tmp_path, resources=res), "resources.json",
                   'components.worker."yarn.role.priority"', "ps and worker both have priority 1",
                   "give each component its own priority")


@pytest.mark.parametrize(
    ("component", "key", "value", "fragments"),
    [
        ("worker", "yarn.component.instances", "two",
         ("not a whole number", "as a whole number")),
        ("worker", "yarn.component.instances", "-1",
         ("must be at least 0", "of 0 or more")),
        ("ps", "yarn.memory", "16", ("must be between 32 and 1048576 MB", "from 32 to")),
        ("ps", "yarn.memory", "2000000", ("must be between 32 and 1048576 MB", "from 32 to")),
        ("chiefworker", "yarn.vcores", "0", ("must be between 1 and 1024", "from 1 to 1024")),
        ("chiefworker", "yarn.vcores", "5000", ("must be between 1 and 1024", "from 1 to 1024")),
    ],
    ids=["count-not-integer", "count-negative", "memory-low", "memory-high", "vcores-low",
         "vcores-high"],
)
def test_numbers(tmp_path: Path, component: str, key: str, value: str,
                 fragments: tuple[str, ...]) -> None:
    res = seed_resources()
    res["components"][component][key] = value
    assert_refused(run_bad(tmp_path, resources=res), "resources.json",
                   f'components.{component}."{key}" = "{value}"', *fragments, "e.g.")


@pytest.mark.parametrize("label", ["gpu && fast", "gpu || fast", "gpu,fast"],
                         ids=["and", "or", "comma"])
def test_label_expression_with_several_labels(tmp_path: Path, label: str) -> None:
    res = seed_resources()
    res["components"]["worker"]["yarn.label.expression"] = label
    assert_refused(run_bad(tmp_path, resources=res), "resources.json",
                   f'components.worker."yarn.label.expression" = {json.dumps(label)}',
                   "one node label per request", 'give a single label name, e.g. "gpu"')


def test_script_that_does_not_exist(tmp_path: Path) -> None:
    app = seed_app(tmp_path)
    app["global"][ENTRY] = "no_such_script.py"
    out = assert_refused(run_bad(tmp_path, app=app), "appConfig.json",
                         f'global."{ENTRY}" = "no_such_script.py"', "no such file",
                         "create it, or give its path relative to")
    assert str(tmp_path / "scripts" / "no_such_script.py") in out


def test_bad_json_shows_line_and_column(tmp_path: Path) -> None:
    text = json.dumps(seed_resources(), indent=2).splitlines()
    # Drop the comma after the ps memory: the parser stops at the start of the next line.
    i = text.index('      "yarn.memory": "1024",')
    text[i] = text[i][:-1]
    next_key = text[i + 1]
    where = f"line {i + 2}, column {len(next_key) - len(next_key.lstrip()) + 1}"
    result = run_bad(tmp_path, resources="\n".join(text) + "\n")
    assert_refused(result, "resources.json", None,
                   f"not valid JSON: Expecting ',' delimiter at {where}",
                   f"Fix: correct the syntax at {where}.")


def test_bad_yaml_shows_line_and_column(tmp_path: Path) -> None:
    text = yaml.safe_dump(seed_resources(), sort_keys=False).splitlines()
    bad_line = next(i for i, line in enumerate(text) if "yarn.memory" in line)
    text[bad_line] = text[bad_line].replace(": ", ": [1024", 1)  # an unclosed flow sequence
    result = run_bad(tmp_path, resources="\n".join(text) + "\n",
                     resources_name="resources.yaml")
    # The flow sequence swallows the next line up to its colon, where the parser gives up.
    where = f"line {bad_line + 2}, column {text[bad_line + 1].index(':') + 1}"
    assert_refused(result, "resources.yaml", None, "not valid YAML", f"at {where}.",
                   f"Fix: correct the syntax at {where}.")


def test_every_problem_of_both_files_at_once(tmp_path: Path) -> None:
    res = seed_resources()
    res["components"]["worker"]["yarn.vcores"] = "0"
    app = seed_app(tmp_path)
    app["global"][ENTRY] = "missing.py"
    out = assert_refused(run_bad(tmp_path, resources=res, app=app), "resources.json",
                         'components.worker."yarn.vcores"', "must be between 1 and 1024")
    assert_refused(run_bad(tmp_path, resources=res, app=app), "appConfig.json",
                   f'global."{ENTRY}"', "no such file")
    assert out.count("Fix: ") == 2


# ---- --dry-run on the seed job ----

PS = "<ps-0-host:port>"
WORKERS = "<chiefworker-0-host:port>,<worker-0-host:port>,<worker-1-host:port>"


def expected_commands() -> dict[str, list[str]]:
    def command(job_name: str, task_index: int) -> str:
        return shlex.join([
            "./pyenv/bin/python", "app/mnist1.py", f"--ps_hosts={PS}", f"--worker_hosts={WORKERS}",
            f"--job_name={job_name}", f"--task_index={task_index}",
            f"--work_dir={DEFAULT_WORK_DIR}",
        ])

    return {
        "ps": [command("ps", 0)],
        "chiefworker": [command("worker", 0)],
        "worker": [command("worker", 1), command("worker", 2)],
    }


def dry_run(monkeypatch: pytest.MonkeyPatch, *extra: str) -> str:
    # In-process, so the commands name this interpreter; no yarn reachable either way, and
    # no Hadoop settings: the work dir is the local default, pre-flight skipped as asked.
    monkeypatch.setenv("PATH", env_without_yarn()["PATH"])
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, [
        "submit", "--resources", str(SEED_RESOURCES), "--app-config", str(SEED_APP_CONFIG),
        "--dry-run", "--skip-preflight", *extra,
    ])
    assert result.exit_code == 0, result.output
    assert "Submitted" not in result.output
    return result.stdout


def test_dry_run_seed_job(monkeypatch: pytest.MonkeyPatch) -> None:
    text = dry_run(monkeypatch)
    commands = expected_commands()
    task_lines = [line.strip() for line in text.splitlines() if line.startswith("  [")]
    assert task_lines == [
        f"[ps 0] {commands['ps'][0]}",
        f"[chief 0] {commands['chiefworker'][0]}",
        f"[worker 0] {commands['worker'][0]}",
        f"[worker 1] {commands['worker'][1]}",
    ]
    role_lines = {line.split(" ", 1)[0]: line for line in text.splitlines()
                  if re.match(r"(ps|chiefworker|worker) \(priority", line)}
    assert set(role_lines) == {"ps", "chiefworker", "worker"}
    assert "node label gpu" in role_lines["worker"]
    assert "2 x 1024 MB" in role_lines["worker"]
    assert "node label <default partition>" in role_lines["ps"]
    assert "node label <default partition>" in role_lines["chiefworker"]
    for line in role_lines.values():
        assert "no failure tolerated (the first fails the job)" in line
    assert f"Failure threshold: {FAILURE_THRESHOLD_MEANING}" in text
    assert "0 = no failure tolerated" in text and "-1 = unlimited" in text
    assert "Slider treated 0 as unlimited" in text


def test_dry_run_seed_job_json(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(dry_run(monkeypatch, "--json"))
    assert doc["entry"] == "mnist1.py"
    assert doc["scripts_dir"] == str(REPO / "examples")
    assert doc["work_dir"] == DEFAULT_WORK_DIR
    roles = {role["name"]: role for role in doc["roles"]}
    assert [role["name"] for role in doc["roles"]] == ["ps", "chiefworker", "worker"]
    assert sum(len(role["commands"]) for role in doc["roles"]) == 4
    assert {name: role["commands"] for name, role in roles.items()} == expected_commands()
    assert roles["worker"]["label"] == "gpu"
    assert roles["ps"]["label"] is None and roles["chiefworker"]["label"] is None
    assert [role["instances"] for role in doc["roles"]] == [1, 1, 2]
    assert [role["priority"] for role in doc["roles"]] == [1, 2, 3]
    assert roles["chiefworker"]["tf_config_task"] == [{"type": "chief", "index": 0}]
    assert roles["worker"]["tf_config_task"] == [
        {"type": "worker", "index": 0}, {"type": "worker", "index": 1},
    ]
    for role in doc["roles"]:
        assert role["failure_threshold"] == 0
        assert role["restarts"] == "no failure tolerated (the first fails the job)"
    assert doc["failure_threshold_meaning"] == FAILURE_THRESHOLD_MEANING
    assert (doc["am_memory_mb"], doc["am_vcores"], doc["am_label"]) == (512, 1, None)


def test_dry_run_of_thousands_of_tasks_is_summarised(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    resources = json.loads(SEED_RESOURCES.read_text())
    resources["components"]["worker"]["yarn.component.instances"] = "3000"
    path = write_doc(tmp_path / "resources.json", resources)
    monkeypatch.setattr(sys.modules[__name__], "SEED_RESOURCES", path)
    doc = json.loads(dry_run(monkeypatch, "--json"))
    worker = next(role for role in doc["roles"] if role["name"] == "worker")
    assert worker["instances"] == 3000
    assert worker["tasks_shown"] == [0, 1, 2, 3, 4, 5, 6, 2999]
    assert len(worker["commands"]) == len(worker["tf_config_task"]) == 8
    assert worker["tf_config_task"][-1] == {"type": "worker", "index": 2999}
    hosts = ("--worker_hosts=<chiefworker-0-host:port>,<worker-0-host:port>,"
             "<worker-1-host:port>,<worker-2-host:port>,<worker-3-host:port>,"
             "<worker-4-host:port>,...(2994 more)...,<worker-2999-host:port>")
    assert all(hosts in command for command in worker["commands"])
    assert "--task_index=3000" in worker["commands"][-1]
    assert doc["preflight"]["checked"] is False
    text = dry_run(monkeypatch)
    assert "  ... 2992 more worker tasks like these (host lists summarised)" in text
    # a screen, not a line per task: the roles and their first tasks, and the rest of the plan
    assert len(text.splitlines()) < 50 and len(text) < 20_000


# ---- Slider's TensorFlow package: no chiefworker, its data and checkpoint keys ----


def test_slider_package_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/slider/ (the package's files): worker 0 is the chief, --worker_hosts lists only
    the workers, TF_CONFIG has no chief, and the script gets the package's six flags."""
    from appmaster.common.cluster_spec import ClusterSpec
    from tfyarn.jobconfig import load_job
    from tfyarn.submission.plan import build_plan

    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        monkeypatch.delenv(name, raising=False)
    slider = REPO / "examples" / "slider"
    job = load_job(slider / "resources.json", slider / "appConfig.json", user="alice")
    plan = build_plan(job)
    assert [role.name for role in plan.roles] == ["ps", "worker"] and plan.tensorboard
    assert plan.chief == ("worker", 0)
    assert plan.work_dir == "hdfs:///user/alice/.slider/checkpoints/tfyarn-mnist.${APP_ID}"
    assert plan.data_dir == "hdfs:///user/alice/mnist-data"
    workers = [f"w{i}:1" for i in range(5)]
    spec = ClusterSpec.from_exports({"ps": {0: "p0:1", 1: "p1:1"},
                                     "worker": dict(enumerate(workers))})
    assert plan.task_command(spec, "worker", 0, "/c")[1:] == [
        "app/mnist.py", "--ps_hosts=p0:1,p1:1", f"--worker_hosts={','.join(workers)}",
        "--job_name=worker", "--task_index=0", "--data_dir=/c/data", "--ckp_dir=/c/work"]
    assert spec.tf_config("worker", 0) == {
        "cluster": {"worker": workers, "ps": ["p0:1", "p1:1"]},
        "task": {"type": "worker", "index": 0}}
    assert set(job.client.ignored) == {f"site.global.{key}" for key in (
        "hadoop.conf", "yarn.cgroup.root", "user.name", "zookeeper.quorum", "ps.port",
        "worker.port", "tensor.board.port")}
