"""PyTorch, JAX and Keras 3 jobs on the local YARN (site.global.framework), each shipping an
env with its framework from a client in that env, as its users would.

The env: a venv of this client's own interpreter with the suite's env but TensorFlow (hard
links: tfyarn, editable, numpy, keras, hdfs-native...) and jax[cpu] installed on top, built
once per machine (kept while its packages are the same) and shipped in layers: the
distributions it shares with the suite's env are the same layers, already on the cluster;
jax and jaxlib are new. PyPI's torch brings its CUDA
wheels (GBs): with TFYARN_TORCH=1 the same env gets torch too, and the PyTorch tests run;
docs/benchmarks.md has what that costs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import test_faults_yarn
from barenodes import make_venv
from jobtools import (
    APPS,
    EXAMPLES,
    prepare_job,
    run_tfyarn,
    status_json,
    task_processes,
    yarn_logs,
)
from test_faults_yarn import Job, assert_succeeded, restarts_of, wait_until

from appmaster.model.jobstall import STACKS_GRACE_S
from tfyarn.localyarn.layout import GPU_LABEL

pytestmark = pytest.mark.yarn

TORCH = os.environ.get("TFYARN_TORCH") == "1"
PACKAGES = ["jax[cpu]==0.10.2", "keras==3.15.1", *(["torch==2.15.0"] if TORCH else [])]
ENV_TIMEOUT_S = 1800 if TORCH else 600  # torch's wheels: GBs


# What the suite's env has that a PyTorch, JAX or Keras-on-JAX user's env would not.
TENSORFLOW = ("tensorflow-cpu", "tf-keras", "tensorboard", "tensorboard-data-server", "libclang")


@pytest.fixture(scope="session")
def framework_client() -> tuple[str, ...]:
    """`tfyarn` run by a venv with the frameworks: what its jobs ship. It holds the suite's
    env (tfyarn, editable, and the versions its jobs run) without TensorFlow, as links, and
    the frameworks on top."""
    key = hashlib.sha256("\n".join([*TENSORFLOW, *PACKAGES]).encode()).hexdigest()[:12]
    root = Path.home() / ".cache" / "tfyarn-tests" / f"frameworks-{key}"
    started = time.monotonic()
    python = make_venv(root, PACKAGES, timeout_s=ENV_TIMEOUT_S, base=sys._base_executable,
                       links_without=TENSORFLOW)
    print(f"\nframework env {root}: ready in {time.monotonic() - started:.1f} s")
    return (str(python), "-m", "tfyarn.cli.main")


def example_job(tmp_path: Path, example: str, args: list[str], **options) -> tuple[Path, Path]:
    files = EXAMPLES / example
    return prepare_job(tmp_path, args=args, resources=files / "resources.json",
                       app_config=files / "appConfig.json", **options)


@pytest.fixture
def submit_framework(yarn_cluster, skein_client,
                     framework_client: tuple[str, ...]) -> Iterator[Callable[..., Job]]:
    with test_faults_yarn.submitting(yarn_cluster, skein_client, framework_client) as submit:
        yield submit


def process_with(pid: int, variable: str) -> int | None:
    """A running process's whole-number environment variable (its rank)."""
    try:
        variables = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    prefix = f"{variable}=".encode()
    return next((int(v[len(prefix):]) for v in variables if v.startswith(prefix)), None)


def kill_rank(job: Job, script: str, variable: str, rank: int) -> float:
    procs = wait_until(f"rank {rank}'s process", lambda: [
        p for p in task_processes(job.app_id, script) if process_with(p.pid, variable) == rank],
        30, fail_fast=job.ended_early)
    os.kill(procs[0].pid, signal.SIGKILL)
    return time.monotonic()


def test_keras_on_jax_two_containers_of_two_processes_a_killed_one_restarts_all(
        yarn_cluster, tmp_path: Path, submit_framework: Callable[..., Job]) -> None:
    """examples/keras_jax.py as Keras's guide writes it: keras.distribution.initialize()
    with no arguments, DataParallel over every process's devices, two containers of two
    processes each (yarn.processes.per.container). kill -9 process 1 (the first
    container's second) once process 0's weights are on HDFS: its agent stops process 0,
    all four start again as generation 1, load the weights restored from HDFS, and the job
    SUCCEEDS, each process seeing all four devices."""
    epochs = 10
    job = submit_framework(*example_job(
        tmp_path, "keras_jax", ["--epochs", str(epochs), "--step_sleep", "0.05"],
        settings={"checkpoint.mirror.interval": "2"},
        components={"worker": {"yarn.processes.per.container": "2", "yarn.memory": "1536"}}))

    def saved_epochs() -> int | None:
        state = job.files.remote_json("epochs.json") if "epochs.json" in (
            job.files.remote_names()) else None
        return state["epochs"] if state and state["epochs"] >= 2 else None

    at_kill = wait_until("process 0's weights of epoch 2 on HDFS", saved_epochs, 300,
                         poll_s=0.5, fail_fast=job.ended_early)
    killed_at = kill_rank(job, "keras_jax.py", "KERAS_DISTRIBUTION_PROCESS_ID", 1)
    app = job.final()
    print(f"[{job.app_id}] process 1 killed after epoch {at_kill} -> ended "
          f"{time.monotonic() - killed_at:.1f} s later ({time.monotonic() - job.submitted_at:.1f}"
          " s after submit)")
    assert_succeeded(job, app)
    (restart,) = restarts_of(app["diagnostics"])
    assert "cluster restarted as generation 1" in restart, restart
    print(app["diagnostics"])
    result = job.result()
    # each process has one CPU device: four in all means each sees the others'
    assert (result["processes"], result["devices"], result["epochs"]) == (4, 4, epochs), result
    assert at_kill <= result["first_epoch"] < epochs, result  # resumed from HDFS
    job.assert_no_process_left()


@pytest.mark.skipif(not TORCH, reason="PyTorch's env is GBs: TFYARN_TORCH=1 runs it")
def test_pytorch_ddp_three_ranks_killed_rank_restarts_the_group(
        yarn_cluster, tmp_path: Path, submit_framework: Callable[..., Job]) -> None:
    """examples/pytorch_ddp.py, unmodified torchrun script, 3 ranks with gloo: kill -9 rank
    1 once rank 0's snapshot is on HDFS; the whole group restarts as generation 1
    (TORCHELASTIC_RESTART_COUNT 1), every rank loads the snapshot restored from HDFS, and
    the job SUCCEEDS."""
    # The ranks and the AppMaster on the gpu partition's one node: the local cluster's
    # nodes share one disk, and each node that runs one of them holds the whole 5.7 GB env.
    one_node = {"yarn.label.expression": GPU_LABEL}
    job = submit_framework(*example_job(
        tmp_path, "pytorch_ddp", ["--epochs", "12", "--step_sleep", "0.1"],
        settings={"checkpoint.mirror.interval": "2"},
        components={"worker": one_node, "slider-appmaster": one_node}))
    wait_until("rank 0's snapshot on HDFS", lambda: "snapshot.pt" in job.files.remote_names(),
               300, poll_s=0.5, fail_fast=job.ended_early)
    killed_at = kill_rank(job, "pytorch_ddp.py", "RANK", 1)
    app = job.final()
    print(f"[{job.app_id}] rank 1 killed -> ended {time.monotonic() - killed_at:.1f} s later")
    assert_succeeded(job, app)
    (restart,) = restarts_of(app["diagnostics"])
    assert "cluster restarted as generation 1, restored snapshot.pt of " in restart, restart
    result = job.result()
    assert result["world_size"] == 3 and result["restart_count"] == 1, result
    assert 0 < result["first_epoch"] < result["epochs"], result  # resumed from the snapshot
    job.assert_no_process_left()


@pytest.mark.skipif(not TORCH, reason="PyTorch's env is GBs: TFYARN_TORCH=1 runs it")
def test_pytorch_ddp_saves_on_yarns_preemption_notice_and_resumes_from_there(
        yarn_cluster, skein_client, tmp_path: Path,
        submit_framework: Callable[..., Job]) -> None:
    """examples/pytorch_ddp.py, 3 ranks of 6 GB on the default partition: past the default
    queue's guaranteed share. Another team's job in the urgent queue takes its share back:
    YARN's notice reaches the rank it will take and rank 0 (worker 0), which saves a
    snapshot after the step it is on; the preempted rank's end restarts the group
    (uncounted: threshold 0), and generation 1 goes on from that step or a later one."""
    from test_verdicts_yarn import WORKER_MB, preempting

    ranks = {"yarn.memory": str(WORKER_MB), "yarn.label.expression": "",
             "yarn.container.failure.threshold": "0"}
    job = submit_framework(*example_job(
        tmp_path, "pytorch_ddp", ["--epochs", "60", "--step_sleep", "0.2"],
        settings={"checkpoint.mirror.interval": "1"}, components={"worker": ranks}))
    wait_until("rank 0's snapshot on HDFS", lambda: "snapshot.pt" in job.files.remote_names(),
               600, poll_s=0.5, fail_fast=job.ended_early)
    with preempting(yarn_cluster, skein_client, job, 120):
        print(f"[{job.app_id}] a rank preempted")
    app = job.final(timeout_s=600)
    assert_succeeded(job, app)
    restarts = restarts_of(app["diagnostics"])
    notice = next(i for i, line in enumerate(restarts) if "told by YARN" in line)
    kill = next(i for i, line in enumerate(restarts) if "preempted by YARN" in line)
    assert notice < kill and "cluster restarted as generation 1" in restarts[kill], restarts
    rank_0 = "".join(c.files["worker-0.stdout"] for c in yarn_logs(
        yarn_cluster, job.app_id, {"worker-0.stdout"}, copies=2).values()
        if "worker-0.stdout" in c.files)
    saved = re.search(r"preemption notice: snapshot saved after step (\d+)", rank_0)
    assert saved, rank_0[-3000:]
    result = job.result()
    print(f"[{job.app_id}] rank 0 saved after step {saved[1]} on the notice; generation 1 "
          f"started at step {result['first_step']}; restarts: {restarts}")
    assert result["restart_count"] == 1 and result["first_step"] >= int(saved[1]), result
    job.assert_no_process_left()


STALL_SETTINGS = {"stall.timeout": "20", "progress.interval": "2"}
STALL_TIMEOUT_S, PROGRESS_INTERVAL_S = 20, 2


TWO_WORKERS = frozenset({("worker", 0), ("worker", 1)})
THREE_WORKERS = TWO_WORKERS | {("worker", 2)}


def assert_stall_recovered(yarn_cluster, job: Job, step: int, stacked_in: str,
                           ranks: frozenset[tuple[str, int]] = THREE_WORKERS) -> dict:
    """The job of ``ranks``, whose worker 1 stalled after ``step`` in generation 0 (its
    script printed "stalling after step N at <time>"), SUCCEEDED after the watchdog fired
    within its time plus the report interval, with worker 1 named stalled at ``step`` (the
    verdict stalled, counted), every rank's thread stacks in `tfyarn logs` (worker 1's
    inside ``stacked_in``), and its group restarted as generation 1. The view, for more
    checks."""
    app = job.final()
    assert_succeeded(job, app)
    (restart,) = restarts_of(app["diagnostics"])
    assert re.fullmatch(rf"worker 1 stalled at step {step}: cluster restarted as generation 1, "
                        r"restored (?!nothing).+", restart), restart
    view = status_json(yarn_cluster, job.app_id)["job"]
    assert f"worker 1 at step {step}" in view["watchdog"], view["watchdog"]
    assert view["verdicts"] == {"stalled": 1}, view["verdicts"]
    logs = run_tfyarn(yarn_cluster, "logs", job.app_id, "--all", "--json", timeout_s=180)
    assert logs.returncode == 0, logs.stderr
    files = json.loads(logs.stdout)
    stacks = {(f["role"], f["index"]): f["text"] for f in files
              if f.get("stream") == "stderr" and "most recent call first" in f["text"]}
    assert set(stacks) == ranks, stacks
    assert stacked_in in stacks[("worker", 1)], stacks[("worker", 1)]  # where it sleeps
    stalled_at = float(re.search(r"stalling after step \d+ at ([\d.]+)", "".join(
        f["text"] for f in files)).group(1))
    judged_at = next(t for t, kind, _ in view["history"]["marks"] if kind == "stalled")
    fired_s = judged_at - STACKS_GRACE_S - stalled_at
    running_again = max(span["running"] for span in view["history"]["spans"]
                        if span["generation"] == 1)
    print(f"[{job.app_id}] stalled at {stalled_at:.1f}: watchdog fired {fired_s:.1f} s later "
          f"(timeout {STALL_TIMEOUT_S} s, reports every {PROGRESS_INTERVAL_S} s), the group "
          f"ran again {running_again - stalled_at:.1f} s after the last step "
          f"({running_again - judged_at:.1f} s after the stalled task was judged)")
    assert STALL_TIMEOUT_S <= fired_s <= STALL_TIMEOUT_S + PROGRESS_INTERVAL_S + 3, fired_s
    return view


def test_keras_on_jax_a_stalled_process_is_found_its_stacks_logged_and_the_group_restarts(
        yarn_cluster, tmp_path: Path, submit_framework: Callable[..., Job]) -> None:
    """examples/keras_jax.py, two containers of one process, each reporting its step
    (tfyarn.progress.report_step) as a batch begins. Process 1 sleeps after step 45 in
    generation 0 (its first epoch's weights on HDFS), process 0 waits for it in step 46's
    collective: the stall watchdog (20 s, reports every 2 s) finds worker 1 behind, every
    process writes its stacks, the group restarts from the weights on HDFS and the job
    SUCCEEDS."""
    job = submit_framework(*example_job(
        tmp_path, "keras_jax", ["--epochs", "6", "--step_sleep", "0.05",
                                "--stall_at", "45", "--stall_process", "1"],
        settings={"checkpoint.mirror.interval": "2", **STALL_SETTINGS},
        components={"worker": {"yarn.component.instances": "2"}}))
    assert_stall_recovered(yarn_cluster, job, 45, "on_train_batch_end", ranks=TWO_WORKERS)
    result = job.result()
    assert result["processes"] == 2 and 0 < result["first_epoch"] < 6, result  # resumed


@pytest.mark.skipif(not TORCH, reason="PyTorch's env is GBs: TFYARN_TORCH=1 runs it")
def test_pytorch_ddp_a_stalled_rank_is_found_its_stacks_logged_and_the_group_restarts(
        yarn_cluster, tmp_path: Path, submit_framework: Callable[..., Job]) -> None:
    """examples/pytorch_ddp.py (gloo, 3 ranks), which writes its step into
    TFYARN_PROGRESS_FILE itself: rank 1 sleeps after step 40 in the group's first run; the
    same as Keras's above, from the snapshot on HDFS."""
    one_node = {"yarn.label.expression": GPU_LABEL}  # as the killed rank's test, above
    job = submit_framework(*example_job(
        tmp_path, "pytorch_ddp", ["--epochs", "8", "--step_sleep", "0.05",
                                  "--stall_at", "40", "--stall_rank", "1"],
        settings={"checkpoint.mirror.interval": "2", **STALL_SETTINGS},
        components={"worker": one_node, "slider-appmaster": one_node}))
    assert_stall_recovered(yarn_cluster, job, 40, "_run_epoch")
    result = job.result()
    assert result["world_size"] == 3 and result["restart_count"] == 1, result
    assert 0 < result["first_epoch"] < result["epochs"], result


def test_a_snapshot_saved_just_before_a_rank_fails_is_what_the_group_restarts_from(
        yarn_cluster, tmp_path: Path, submit_framework: Callable[..., Job]) -> None:
    """A group of 2 (framework jax; the script saves its own snapshot, no framework needed:
    tests/apps/snapshot_steps.py). Rank 0 saves at steps 50 and 100; the mirror's interval
    is 10 minutes, so nothing reaches HDFS on it. Rank 1 is killed once step 100's snapshot
    is written: tfyarn asks rank 0 to stop, its agent copies the work dir up before its
    container goes, and generation 1 restores it: every rank starts at step 100, the restart
    line says so, and no unfinished copy is left on HDFS."""
    from appmaster.common.storage import TEMPORARY_MARK

    job = submit_framework(*example_job(
        tmp_path, "jax_data_parallel",
        ["--steps", "300", "--snapshot_at", "50,100", "--step_sleep", "0.05"],
        scripts_dir=APPS, entry="snapshot_steps.py",
        settings={"checkpoint.mirror.interval": "600"},
        components={"worker": {"yarn.memory": "512"}}))

    def saved_step() -> int | None:
        path = job.files.local("snapshot.pt")
        step = json.loads(path.read_text())["step"] if path else 0
        return step if step >= 100 else None

    wait_until("rank 0's snapshot of step 100 in its work dir", saved_step, 300, poll_s=0.2,
               fail_fast=job.ended_early)
    assert "snapshot.pt" not in job.files.remote_names()  # not mirrored on the interval
    kill_rank(job, "snapshot_steps.py", "JAX_PROCESS_ID", 1)
    app = job.final()
    assert_succeeded(job, app)
    (restart,) = restarts_of(app["diagnostics"])
    print(restart)
    assert re.fullmatch(r"worker 1 failed: cluster restarted as generation 1, restored "
                        r"snapshot\.pt of \d\d:\d\d:\d\d", restart), restart
    assert job.result() == {"generation": 1, "first_step": 100}
    leftovers = [s.path for s in job.files.remote().client.list_status(
        job.files.remote().root, recursive=True) if TEMPORARY_MARK in s.path]
    assert leftovers == []
    job.assert_no_process_left()


def test_jax_distributed_initialize_with_no_arguments(
        yarn_cluster, tmp_path: Path, submit_framework: Callable[..., Job]) -> None:
    """examples/jax_data_parallel.py calls jax.distributed.initialize() with no arguments:
    JAX finds the coordinator, the count and the id through tfyarn's ClusterEnv (shipped with
    the job); two containers make one computation over both processes' devices."""
    job = submit_framework(*example_job(tmp_path, "jax_data_parallel", ["--steps", "20"]))
    assert_succeeded(job, job.final())
    result = job.result()
    assert (result["processes"], result["devices"]) == (2, 2), result
