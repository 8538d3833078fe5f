"""End-to-end jobs on the local YARN: `tfyarn submit --wait`, then what the tasks saw and left.

Each test copies its job files into tmp_path; the work dir is tfyarn's default on HDFS. The
cluster's NodeManagers are separate hosts (own address, own /tmp and HOME): what a task
wrote locally is read from its own container dir, what the job kept from HDFS. The machine
is small: jobs run one at a time with few steps.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from jobtools import (
    EXAMPLES,
    LOGS_TIMEOUT_S,
    TFYARN,
    ContainerLogs,
    JobFiles,
    app_report,
    assert_no_task_process_left,
    prepare_job,
    read_json,
    submit_and_wait,
    yarn_logs,
)
from taskrecords import assert_tf2_records, flags_records

pytestmark = pytest.mark.yarn

TASK_STDOUT = re.compile(r"(ps|chiefworker|worker)-(\d+)\.stdout")


# ---------------------------------------------------------------- yarn logs


def task_containers(logs: dict[str, ContainerLogs]) -> dict[str, ContainerLogs]:
    """`ps-0` etc. -> the one container whose logs hold that task's stdout."""
    tasks: dict[str, ContainerLogs] = {}
    for c in logs.values():
        for name in c.files:
            if match := TASK_STDOUT.fullmatch(name):
                task = f"{match.group(1)}-{match.group(2)}"
                assert task not in tasks, f"{task} ran in {tasks[task].container} and {c.container}"
                tasks[task] = c
    return tasks


def exported_address(c: ContainerLogs, task: str) -> str:
    """The address the agent exported for the task in that container."""
    pattern = re.compile(rf"{re.escape(task)} \(attempt 0, generation 0\) exported (\S+)")
    found = {m.group(1) for text in c.files.values() for m in pattern.finditer(text)}
    assert len(found) == 1, f"{task} exported {found} in {c.container}"
    return found.pop()


def gpu_node(yarn_cluster) -> str:
    """The gpu NodeManager as `yarn logs` names it (host_port)."""
    nm = next(nm for nm in yarn_cluster.layout.node_managers if nm.partition == "gpu")
    return f"{nm.host}_{yarn_cluster.layout.port(nm.rpc_port)}"


# ---------------------------------------------------------------- what each task wrote


def assert_checkpoint_on_hdfs(files: JobFiles, min_step: int) -> None:
    """The job's last checkpoint reached HDFS whole: state file, index and data."""
    state = files.remote_text("checkpoints/checkpoint")
    assert state, f"no checkpoint state file in {files.url}/checkpoints"
    latest = re.search(r'^model_checkpoint_path: "(.*?)"$', state, re.MULTILINE).group(1)
    latest = os.path.basename(latest)
    assert int(latest.rsplit("-", 1)[1]) >= min_step, state
    names = files.remote_names()
    assert f"checkpoints/{latest}.index" in names, sorted(names)
    assert any(n.startswith(f"checkpoints/{latest}.data-") for n in names), sorted(names)


# ---------------------------------------------------------------- a tiny script to swap in

SWAP_SCRIPT = '''\
"""Records argv and TF_CONFIG in its work dir; the ps (and, with --mode fail, the workers)
block until ended; the chief exits 0 after a moment, or 3 with --mode fail."""
import argparse
import json
import os
import sys
import time

parser = argparse.ArgumentParser()
for flag in ("--ps_hosts", "--worker_hosts", "--job_name", "--work_dir"):
    parser.add_argument(flag, required=True)
parser.add_argument("--task_index", type=int, required=True)
parser.add_argument("--mode", choices=["ok", "fail"], default="ok")
args = parser.parse_args()
record = {"argv": sys.argv[1:], "tf_config": json.loads(os.environ.get("TF_CONFIG") or "null"),
          "tfyarn_role": os.environ.get("TFYARN_ROLE"), "pid": os.getpid()}
path = os.path.join(args.work_dir, f"swapped_{args.job_name}_{args.task_index}.json")
with open(path + ".tmp", "w") as f:
    json.dump(record, f)
os.replace(path + ".tmp", path)
print(f"swapped {args.job_name} {args.task_index} running", flush=True)
chief = os.environ.get("TFYARN_ROLE") == "chiefworker"
if not chief:
    while True:  # ended by tfyarn when the chief ends
        time.sleep(1)
time.sleep(3)  # every task has started: the spec was published once all registered
if args.mode == "fail":
    print("tfyarn-test: the chief fails on purpose with exit code 3", file=sys.stderr,
          flush=True)
    sys.exit(3)
print("swapped done", flush=True)
'''


def swap_scripts(tmp_path: Path) -> Path:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "swap_task.py").write_text(SWAP_SCRIPT)
    return scripts


# ---------------------------------------------------------------- tests

SEED_TASKS = {  # flags file name: (TFYARN_ROLE, role index, TF_CONFIG task type)
    "ps_0": ("ps", 0, "ps"),
    "worker_0": ("chiefworker", 0, "chief"),
    "worker_1": ("worker", 0, "worker"),
    "worker_2": ("worker", 1, "worker"),
}


def swapped_records(files: JobFiles) -> dict[str, dict[str, Any]]:
    records = {}
    for path in files.glob("swapped_*.json"):
        name = path.stem.removeprefix("swapped_")
        records[name] = read_json(path)
        records[name]["own_work_dir"] = str(path.parent)
    return records


def assert_ended_by_tfyarn(run, tasks: set[str]) -> dict[str, str]:
    """Every task other than the chief was stopped by tfyarn at the end, not left running."""
    deadline = time.monotonic() + LOGS_TIMEOUT_S
    while True:  # after the end the view comes from the AppMaster's aggregated log
        status = subprocess.run([*TFYARN, "status", run.app_id, "--json"], capture_output=True,
                                text=True, timeout=120, env=os.environ)
        assert status.returncode == 0, status.stderr
        view = json.loads(status.stdout)["job"]
        if view or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert view, f"no task table for {run.app_id}"
    states = {f"{t['role']}-{t['index']}": t["state"] for t in view["tasks"]}
    assert {name for name, state in states.items() if state == "stopped"} == tasks, states
    assert_no_task_process_left(run.app_id)
    return states


def test_swapped_script(yarn_cluster, tmp_path: Path) -> None:
    """The seed config with another entry script: it runs, with the same flags."""
    res, app = prepare_job(tmp_path, scripts_dir=swap_scripts(tmp_path), args=["--mode", "ok"],
                           entry="swap_task.py")
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output

    records = swapped_records(run.files)
    assert set(records) == set(SEED_TASKS)
    assert not run.files.glob("flags"), "mnist1.py ran instead of the new script"
    ps_hosts = records["ps_0"]["argv"][0]
    worker_hosts = records["ps_0"]["argv"][1]
    for name, (role, _index, task_type) in SEED_TASKS.items():
        job_name, task_index = name.split("_")
        assert records[name]["argv"] == [
            ps_hosts, worker_hosts, f"--job_name={job_name}", f"--task_index={task_index}",
            f"--work_dir={records[name]['own_work_dir']}", "--mode", "ok",
        ]
        assert records[name]["tfyarn_role"] == role
        assert records[name]["tf_config"]["task"]["type"] == task_type
    assert re.fullmatch(r"--ps_hosts=[^,]+:\d+", ps_hosts)
    assert re.fullmatch(r"--worker_hosts=[^,]+:\d+(,[^,]+:\d+){2}", worker_hosts)
    assert_ended_by_tfyarn(run, {"ps-0", "worker-0", "worker-1"})


def test_chief_failure_fails_the_job(yarn_cluster, tmp_path: Path) -> None:
    res, app = prepare_job(tmp_path, scripts_dir=swap_scripts(tmp_path), args=["--mode", "fail"],
                           entry="swap_task.py")
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode != 0, run.output
    assert f"{run.app_id} FAILED" in run.output

    report = app_report(yarn_cluster, run.app_id)
    assert report["finalStatus"] == "FAILED"
    diagnostics = report["diagnostics"]
    assert "tfyarn-test: the chief fails on purpose with exit code 3" in diagnostics, diagnostics
    assert re.search(r"chiefworker 0\b.* failed .*exit code 3\b", diagnostics), diagnostics
    # Every task had started (the chief started after all registered); none outlives the job.
    assert set(swapped_records(run.files)) == set(SEED_TASKS)
    states = assert_ended_by_tfyarn(run, {"ps-0", "worker-0", "worker-1"})
    assert states["chiefworker-0"] == "failed", states


def test_seed_job(yarn_cluster, tmp_path: Path) -> None:
    res, app = prepare_job(tmp_path, args=["--train_steps", "100"])
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output
    # the client's env, shipped to the bare nodes once (by the session's warm-up)
    assert re.search(r"in (\d+) layers on the cluster \(\1 there already, 0 uploaded now",
                     run.output), run.output

    # --- what each task received
    records = flags_records(run.files)
    assert set(records) == set(SEED_TASKS), sorted(records)
    chief = records["worker_0"]
    ps_hosts = chief["flags"]["ps_hosts"].split(",")
    worker_hosts = chief["flags"]["worker_hosts"].split(",")
    assert len(ps_hosts) == 1 and len(worker_hosts) == 3
    assert len(set(ps_hosts + worker_hosts)) == 4
    assert chief["tfyarn_role"] == "chiefworker"
    assert {(r["flags"]["job_name"], r["flags"]["task_index"]) for r in records.values()} == {
        ("ps", 0), ("worker", 0), ("worker", 1), ("worker", 2)
    }
    cluster_spec = {"chief": worker_hosts[:1], "worker": worker_hosts[1:], "ps": ps_hosts}
    for name, (role, index, task_type) in SEED_TASKS.items():
        record = records[name]
        job_name, task_index = name.split("_")
        assert record["argv"] == [
            f"--ps_hosts={','.join(ps_hosts)}", f"--worker_hosts={','.join(worker_hosts)}",
            f"--job_name={job_name}", f"--task_index={task_index}",
            f"--work_dir={record['own_work_dir']}", "--train_steps", "100",
        ], name
        # Each task works in a directory on its own host's disk, not a shared one.
        assert f"/appcache/{run.app_id}/container_" in record["own_work_dir"], record
        assert (record["tfyarn_role"], record["tfyarn_task_index"]) == (role, index), name
        assert record["tfyarn_attempt"] == 0
        assert record["tf_config"] == {
            "cluster": cluster_spec, "task": {"type": task_type, "index": index}
        }, name

    # --- the containers and what each logged
    expected_stdout = {"ps-0", "chiefworker-0", "worker-0", "worker-1"}
    logs = yarn_logs(yarn_cluster, run.app_id,
                     {f"{t}.stdout" for t in expected_stdout} | {"application.master.log"})
    tasks = task_containers(logs)
    assert set(tasks) == expected_stdout
    am = [c for c in logs.values() if "application.master.log" in c.files]
    assert len(am) == 1 and am[0] not in tasks.values()
    assert set(logs) == {c.container for c in tasks.values()} | {am[0].container}, sorted(logs)
    assert len(logs) == 5

    gpu = gpu_node(yarn_cluster)
    assert tasks["worker-0"].node == gpu and tasks["worker-1"].node == gpu
    assert tasks["ps-0"].node != gpu and tasks["chiefworker-0"].node != gpu
    # Tasks on different hosts have different host names (the cluster's own addresses).
    assert len({worker_hosts[1].split(":")[0], ps_hosts[0].split(":")[0]}) == 2

    position = {  # task -> (its flags record, where its address must be)
        "ps-0": ("ps_0", ps_hosts[0]),
        "chiefworker-0": ("worker_0", worker_hosts[0]),
        "worker-0": ("worker_1", worker_hosts[1]),
        "worker-1": ("worker_2", worker_hosts[2]),
    }
    for task, (record_name, address) in position.items():
        c = tasks[task]
        # The agent in this container exported the address found at the task's position,
        # on this container's node, and the task's own TensorFlow server listened there.
        assert exported_address(c, task) == address, task
        assert address.rsplit(":", 1)[0] == c.node.rsplit("_", 1)[0], (task, c.node)
        assert f"Started server with target: grpc://{address}" in c.files[f"{task}.stderr"], task
        stdout = c.files[f"{task}.stdout"]
        flags_line = next(line for line in stdout.splitlines()
                          if line.startswith("tfyarn-example flags "))
        printed = json.loads(flags_line.removeprefix("tfyarn-example flags "))
        assert printed["argv"] == records[record_name]["argv"], task
    assert "tfyarn-example done" in tasks["chiefworker-0"].files["chiefworker-0.stdout"]
    for task in ("ps-0", "worker-0", "worker-1"):
        assert "tfyarn-example done" not in tasks[task].files[f"{task}.stdout"]
    for task in ("chiefworker-0", "worker-0", "worker-1"):
        assert re.search(r"^step \d+ loss ", tasks[task].files[f"{task}.stdout"], re.MULTILINE)
    assert not re.search(r"^step ", tasks["ps-0"].files["ps-0.stdout"], re.MULTILINE)

    # --- the training's outcome, kept on HDFS (the chief's host keeps its own copy only)
    assert_checkpoint_on_hdfs(run.files, 100)
    assert run.files.remote_json("result.json")["global_step"] >= 100
    assert "checkpoints/checkpoint" in run.files.remote_names()

    assert_no_task_process_left(run.app_id)


@pytest.mark.parametrize(("example", "tasks", "cluster"), [
    # MultiWorkerMirroredStrategy: no ps, since its component has 0 instances.
    ("tf2_mwms", {"chief_0": ("chiefworker", 0), "worker_0": ("worker", 0)},
     {"chief", "worker"}),
], ids=["multi_worker_mirrored_strategy"])
def test_tf2_example(yarn_cluster, tmp_path: Path, example: str,
                     tasks: dict[str, tuple[str, int]], cluster: set[str]) -> None:
    files = EXAMPLES / example
    args = ["--train_steps", "50"]
    res, app = prepare_job(tmp_path, args=args, resources=files / "resources.json",
                           app_config=files / "appConfig.json")
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output
    assert_tf2_records(run.files, tasks, args)
    spec = flags_records(run.files)["chief_0"]["tf_config"]["cluster"]
    assert set(spec) == cluster
    assert run.files.remote_json("result.json")["global_step"] >= 50
    assert_checkpoint_on_hdfs(run.files, 50)
    assert_no_task_process_left(run.app_id)
