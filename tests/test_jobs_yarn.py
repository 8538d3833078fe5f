"""End-to-end jobs on the local YARN: `tfyarn submit --wait`, then what the tasks saw and left.

Each test copies its job files into tmp_path and points the work dir there, so nothing is
written under ~/tfyarn. The machine is small: jobs run one at a time with few steps.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from jobtools import (
    EXAMPLES,
    ContainerLogs,
    app_report,
    assert_no_task_process_left,
    prepare_job,
    read_json,
    submit_and_wait,
    yarn_logs,
)

from tfyarn.localyarn.layout import NODE_MANAGERS

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
    nm = next(nm for nm in NODE_MANAGERS if nm.partition == "gpu")
    return f"localhost_{yarn_cluster.layout.port(nm.rpc_port)}"


# ---------------------------------------------------------------- processes, REST


def flags_records(work_dir: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: read_json(p) for p in sorted((work_dir / "flags").glob("*.json"))}


# ---------------------------------------------------------------- a tiny script to swap in

SWAP_SCRIPT = '''\
"""Records argv and TF_CONFIG; the ps (and, with --mode fail, the workers) block until
ended; the chief waits for every task's record, then exits 0, or 3 with --mode fail."""
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
if args.job_name == "ps" or (args.mode == "fail" and not chief):
    while True:
        time.sleep(1)
if chief:
    tasks = len([h for h in args.ps_hosts.split(",") if h]) + len(args.worker_hosts.split(","))
    deadline = time.time() + 120
    while time.time() < deadline:
        names = [n for n in os.listdir(args.work_dir) if n.startswith("swapped_")
                 and n.endswith(".json")]
        if len(names) == tasks:
            break
        time.sleep(0.2)
    # Which tasks' processes the test's /proc scan would see now (so its "none left" counts).
    alive = {}
    for name in names:
        with open(os.path.join(args.work_dir, name)) as f:
            pid = json.load(f)["pid"]
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                alive[name] = args.work_dir.encode() in f.read()
        except OSError:
            alive[name] = False
    with open(os.path.join(args.work_dir, "alive_seen.json"), "w") as f:
        json.dump(alive, f)
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


def test_swapped_script(yarn_cluster, tmp_path: Path) -> None:
    """The seed config with another entry script: it runs, with the same flags."""
    res, app = prepare_job(tmp_path, scripts_dir=swap_scripts(tmp_path), args=["--mode", "ok"],
                           entry="swap_task.py")
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output

    records = {p.stem.removeprefix("swapped_"): read_json(p)
               for p in run.work_dir.glob("swapped_*.json")}
    assert set(records) == set(SEED_TASKS)
    assert not (run.work_dir / "flags").exists(), "mnist1.py ran instead of the new script"
    ps_hosts = records["ps_0"]["argv"][0]
    worker_hosts = records["ps_0"]["argv"][1]
    for name, (role, _index, task_type) in SEED_TASKS.items():
        job_name, task_index = name.split("_")
        assert records[name]["argv"] == [
            ps_hosts, worker_hosts, f"--job_name={job_name}", f"--task_index={task_index}",
            f"--work_dir={run.work_dir}", "--mode", "ok",
        ]
        assert records[name]["tfyarn_role"] == role
        assert records[name]["tf_config"]["task"]["type"] == task_type
    assert re.fullmatch(r"--ps_hosts=[^,]+:\d+", ps_hosts)
    assert re.fullmatch(r"--worker_hosts=[^,]+:\d+(,[^,]+:\d+){2}", worker_hosts)
    # The ps was running (and findable by its work dir) when the chief ended; now it is gone.
    assert read_json(run.work_dir / "alive_seen.json")["swapped_ps_0.json"] is True
    assert_no_task_process_left(run.work_dir)


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
    # Every task had started (the chief waited for them); none outlives the job.
    started = {p.stem for p in run.work_dir.glob("swapped_*.json")}
    assert started == {f"swapped_{name}" for name in SEED_TASKS}
    alive = read_json(run.work_dir / "alive_seen.json")
    assert alive == {f"swapped_{name}.json": True for name in SEED_TASKS}, alive
    assert_no_task_process_left(run.work_dir)


def test_seed_job(yarn_cluster, tmp_path: Path) -> None:
    res, app = prepare_job(tmp_path, args=["--train_steps", "100"])
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output
    work = run.work_dir

    # --- what each task received
    records = flags_records(work)
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
            f"--job_name={job_name}", f"--task_index={task_index}", f"--work_dir={work}",
            "--train_steps", "100",
        ], name
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

    # --- the training's outcome
    checkpoints = work / "checkpoints"
    assert (checkpoints / "checkpoint").is_file()
    assert list(checkpoints.glob("model.ckpt-*")), sorted(os.listdir(checkpoints))
    result = read_json(work / "result.json")
    assert result["global_step"] >= 100

    assert_no_task_process_left(work)


def assert_tf2_records(work: Path, tasks: dict[str, tuple[str, int]],
                       script_args: list[str]) -> None:
    """Each task's TF_CONFIG matches its role and agrees with the legacy flags it was given.

    `tasks`: flags file name (TF_CONFIG type_index) -> (TFYARN_ROLE, index).
    """
    records = flags_records(work)
    assert set(records) == set(tasks), sorted(records)
    clusters = [r["tf_config"]["cluster"] for r in records.values()]
    assert all(c == clusters[0] for c in clusters)
    spec = clusters[0]
    for name, (role, index) in tasks.items():
        record = records[name]
        task_type = name.rsplit("_", 1)[0]
        assert record["tf_config"]["task"] == {"type": task_type, "index": index}, name
        assert (record["tfyarn_role"], record["tfyarn_task_index"]) == (role, index), name
        assert len(spec[task_type]) > index
        job_name = "ps" if role == "ps" else "worker"
        task_index = index + (len(spec.get("chief", [])) if role == "worker" else 0)
        assert record["argv"] == [
            f"--ps_hosts={','.join(spec.get('ps', []))}",
            f"--worker_hosts={','.join(spec.get('chief', []) + spec.get('worker', []))}",
            f"--job_name={job_name}", f"--task_index={task_index}", f"--work_dir={work}",
            *script_args,
        ], name


@pytest.mark.parametrize(("example", "tasks", "cluster"), [
    ("tf2_ps", {"ps_0": ("ps", 0), "chief_0": ("chiefworker", 0), "worker_0": ("worker", 0)},
     {"chief", "worker", "ps"}),
    # MultiWorkerMirroredStrategy: no ps, since its component has 0 instances.
    ("tf2_mwms", {"chief_0": ("chiefworker", 0), "worker_0": ("worker", 0)},
     {"chief", "worker"}),
], ids=["parameter_server_strategy", "multi_worker_mirrored_strategy"])
def test_tf2_example(yarn_cluster, tmp_path: Path, example: str,
                     tasks: dict[str, tuple[str, int]], cluster: set[str]) -> None:
    files = EXAMPLES / example
    args = ["--train_steps", "50"]
    res, app = prepare_job(tmp_path, args=args, resources=files / "resources.json",
                           app_config=files / "appConfig.json")
    run = submit_and_wait(yarn_cluster, tmp_path, res, app)
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output
    assert_tf2_records(run.work_dir, tasks, args)
    spec = flags_records(run.work_dir)["chief_0"]["tf_config"]["cluster"]
    assert set(spec) == cluster
    assert read_json(run.work_dir / "result.json")["global_step"] >= 50
    assert (run.work_dir / "checkpoints" / "checkpoint").is_file()
    assert_no_task_process_left(run.work_dir)
