"""Issue 35, "Run the script they have": a script that defines only Slider's four flags
(TensorFlow's own mnist_replica.py: absl; or argparse's parse_args()) runs unmodified with
site.global.user.scripts.work_dir_flag "" and stops at once without it, the job's diagnostics
naming the setting; a script written for --model_dir gets its work dir there, the very one
the dry run shows. Light jobs (tests/apps/absl_task.py, argparse_task.py: no TensorFlow), a ps
and a chief each.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from jobtools import APPS, JobFiles, app_report, prepare_job, read_json, run_tfyarn, submit_and_wait

from appmaster.agent.refusedflags import WORK_DIR_FLAG_KEY
from tfyarn.submission.plan import CONTAINER_DIR

pytestmark = pytest.mark.yarn

LIGHT = {"ps": {"yarn.memory": "256"}, "chiefworker": {"yarn.memory": "256"},
         "worker": {"yarn.component.instances": "0"}}
TASKS = {"ps_0", "worker_0"}  # the ps and the chief (Slider's worker 0)


def light_job(tmp_path: Path, entry: str, work_dir_flag: str | None) -> tuple[Path, Path]:
    settings = {} if work_dir_flag is None else {"user.scripts.work_dir_flag": work_dir_flag}
    return prepare_job(tmp_path, scripts_dir=APPS, entry=entry, settings=settings,
                       components=LIGHT)


def received(files: JobFiles) -> dict[str, dict[str, Any]]:
    """What each task received (argv, its directory, TFYARN_WORK_DIR), from its own
    container's work dir: "<job name>_<task index>" -> record."""
    return {path.stem: read_json(path) for path in files.glob("received/*.json")}


def four_flags(argv: list[str]) -> list[str]:
    return [arg.partition("=")[0] for arg in argv]


def test_an_absl_script_with_only_the_four_flags_runs_with_no_work_dir_flag(
        yarn_cluster, tmp_path: Path) -> None:
    res, app = light_job(tmp_path, "absl_task.py", "")
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0 and f"{run.app_id} SUCCEEDED" in run.output, run.output
    records = received(run.files)
    assert set(records) == TASKS, records
    for record in records.values():
        assert four_flags(record["argv"]) == [
            "--ps_hosts", "--worker_hosts", "--job_name", "--task_index"], record
        assert record["work_dir_env"] == f"{record['cwd']}/work", record


def test_an_absl_script_refusing_work_dir_fails_naming_the_setting(
        yarn_cluster, tmp_path: Path) -> None:
    res, app = light_job(tmp_path, "absl_task.py", None)
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode != 0 and f"{run.app_id} FAILED" in run.output, run.output
    diagnostics = app_report(yarn_cluster, run.app_id)["diagnostics"]
    assert "Unknown command line flag 'work_dir'" in diagnostics, diagnostics
    assert (f"tfyarn: the script does not define --work_dir, which tfyarn passes every task: "
            f"set {WORK_DIR_FLAG_KEY} to the flag your script uses") in diagnostics, diagnostics
    assert not received(run.files), "the script ran past its flags"


def test_a_script_written_for_model_dir_gets_the_dry_runs_work_dir(
        yarn_cluster, tmp_path: Path) -> None:
    res, app = light_job(tmp_path, "argparse_task.py", "--model_dir")
    dry = run_tfyarn(yarn_cluster, "submit", "--resources", str(res), "--app-config", str(app),
                     "--dry-run", "--json", timeout_s=180)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    document = json.loads(dry.stdout)
    shown = {f"{role['name']}-{index}": shlex.split(command)[-1]
             for role in document["roles"]
             for index, command in zip(role["tasks_shown"], role["commands"], strict=True)}
    assert shown == {"ps-0": f"--model_dir={CONTAINER_DIR}/work",
                     "chiefworker-0": f"--model_dir={CONTAINER_DIR}/work"}, shown

    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0 and f"{run.app_id} SUCCEEDED" in run.output, run.output
    records = received(run.files)
    assert set(records) == TASKS, records
    for name, record in records.items():
        task = "ps-0" if name == "ps_0" else "chiefworker-0"
        assert record["argv"][-1] == shown[task].replace(CONTAINER_DIR, record["cwd"]), record
        assert record["argv"][-1] == f"--model_dir={record['work_dir_env']}", record
        assert "--work_dir" not in " ".join(record["argv"]), record
