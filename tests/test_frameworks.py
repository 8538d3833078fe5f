"""site.global.framework: the job files' checks, the spec's rules, each task's command and
environment (appmaster/common/rankenv.py), the shipped env's check, the failure rule."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_first_contact import dist_info
from test_job import Cluster, restarts
from test_jobconfig import assert_problem, errors, load
from test_jobconfig import job_dir as job_dir  # the fixture

from appmaster.agent.backendhint import nccl_without_gpus_hint
from appmaster.common import rankenv
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.frameworks import of as frameworks_of
from appmaster.common.frameworks.jax import JAX_STARTUP_DIR
from appmaster.common.jobplan import JobPlan, RolePlan, SpecError
from appmaster.common.settings import FRAMEWORK, INSTANCES, PROCESSES
from appmaster.common.vocabulary import Framework, JobState
from appmaster.model.jobmessages import restored_line
from tfyarn.submission import frameworks
from tfyarn.submission.environments import JobEnvironmentError

RESOURCES = {"components": {
    "chiefworker": {"yarn.role.priority": "1", "yarn.component.instances": "1"},
    "worker": {"yarn.role.priority": "2", "yarn.component.instances": "2"}}}


def app(**settings: str) -> dict[str, Any]:
    given = {"site.global.user.scripts.entry": "ymnist.py"}
    return {"global": {**given, **{f"site.global.{k}": v for k, v in settings.items()}}}


def resources(**more: dict[str, str]) -> dict[str, Any]:
    return {"components": {**RESOURCES["components"], **more}}


# ---- the job files ----

def test_a_job_that_says_nothing_is_tensorflow(job_dir: Path) -> None:
    job = load(job_dir, RESOURCES, app())
    assert job.spec.framework is Framework.TENSORFLOW and job.spec.work_dir_flag == "--work_dir"


@pytest.mark.parametrize("name", ["pytorch", "jax"])
def test_a_pytorch_or_jax_job_takes_no_flag_of_tfyarn(job_dir: Path, name: str) -> None:
    job = load(job_dir, RESOURCES, app(framework=name))
    assert job.spec.framework == name and job.spec.work_dir_flag == ""
    given = load(job_dir, RESOURCES, app(framework=name, **{
        "user.scripts.work_dir_flag": "--snapshot_dir"}))
    assert given.spec.work_dir_flag == "--snapshot_dir"


def test_an_unknown_framework_is_refused_with_the_list(job_dir: Path) -> None:
    text = errors(job_dir, RESOURCES, app(framework="mxnet"))
    assert_problem(text, "appConfig.json", 'global."site.global.framework"',
                   'must be one of "tensorflow", "pytorch", "jax"')


@pytest.mark.parametrize("role", ["ps", "evaluator"])
def test_a_ps_or_evaluator_in_a_pytorch_job_is_refused_with_the_fix(job_dir: Path,
                                                                  role: str) -> None:
    extra = {role: {"yarn.role.priority": "3", "yarn.component.instances": "1"}}
    text = errors(job_dir, resources(**extra), app(framework="pytorch"))
    assert_problem(text, "resources.json", f'components.{role}."yarn.component.instances"',
                   f'a {role} has no place in a job whose "site.global.framework" is "pytorch"',
                   f'remove the "{role}" component')
    load(job_dir, resources(**extra), app())  # TensorFlow's own roles


def test_the_spec_refuses_what_the_files_refuse() -> None:
    ps = RolePlan("ps", 1, 1, 1024, 1)
    worker = RolePlan("worker", 2, 2, 1024, 1)
    with pytest.raises(SpecError, match=re.escape(
            f'ps: {INSTANCES.key} 1: a ps has no place in a job whose "{FRAMEWORK.key}" is "jax"')):
        JobPlan("job", "t.py", "python3", "/w", (ps, worker), framework="jax")
    with pytest.raises(SpecError, match=re.escape(f"{FRAMEWORK.key} (framework) must be one of")):
        JobPlan("job", "t.py", "python3", "/w", (worker,), framework="mxnet")
    plan = JobPlan("job", "t.py", "python3", "/w", (worker,), framework="pytorch")
    assert JobPlan.from_json(plan.to_json()) == plan


def group_resources(processes: str, **more: str) -> dict[str, Any]:
    return {"components": {
        "chiefworker": {"yarn.role.priority": "1", "yarn.component.instances": "1"},
        "worker": {"yarn.role.priority": "2", "yarn.component.instances": "2"}},
        "global": {"yarn.processes.per.container": processes, **more}}


def test_processes_per_container_reach_every_rank_role(job_dir: Path) -> None:
    job = load(job_dir, group_resources("4", **{"yarn.gpus": "4"}), app(framework="pytorch"))
    assert [r.processes for r in job.spec.roles] == [4, 4]
    assert job.spec.processes_per_container == 4
    assert JobPlan.from_json(job.spec.to_json()) == job.spec
    assert load(job_dir, RESOURCES, app(framework="jax")).spec.processes_per_container == 1


PROCESSES_KEY = '"yarn.processes.per.container"'


@pytest.mark.parametrize(("given", "framework", "key", "fragments"), [
    (group_resources("0"), "jax", f"global.{PROCESSES_KEY}", ("1",)),
    (group_resources("2"), "tensorflow", f"components.chiefworker.{PROCESSES_KEY}",
     ("TensorFlow runs one process per task", 'raise "yarn.component.instances"')),
    (group_resources("2", **{"yarn.gpus": "3"}), "pytorch", f"global.{PROCESSES_KEY}",
     ("3 GPUs per container (yarn.gpus) cannot be shared evenly by 2 processes",
      'give a number that divides 3')),
    ({"components": {
        "chiefworker": {"yarn.role.priority": "1", "yarn.component.instances": "1"},
        "worker": {"yarn.role.priority": "2", "yarn.component.instances": "2",
                   "yarn.processes.per.container": "2"}}}, "pytorch",
     f"components.worker.{PROCESSES_KEY}",
     ("the chiefworker runs 1 processes per container and each worker 2",
      "give the chiefworker and the workers the same")),
    (resources(tensorboard={"yarn.role.priority": "3", "yarn.component.instances": "1",
                            "yarn.processes.per.container": "2"}), "jax",
     f"components.tensorboard.{PROCESSES_KEY}", ("a tensorboard runs one process",)),
])
def test_processes_per_container_that_cannot_be_are_refused_with_the_fix(
        job_dir: Path, given: dict, framework: str, key: str, fragments: tuple[str, ...]) -> None:
    text = errors(job_dir, given, app(framework=framework))
    assert_problem(text, "resources.json", key, *fragments)


def test_the_spec_refuses_processes_the_files_refuse() -> None:
    with pytest.raises(SpecError, match="3 GPUs per container .yarn.gpus. cannot be shared"):
        RolePlan("worker", 2, 2, 1024, 1, gpus=3, processes=2)
    with pytest.raises(SpecError, match=re.escape(f"worker: {PROCESSES.key} (processes) must be "
                                                  "a whole number from 1 to 64, not 0")):
        RolePlan("worker", 2, 2, 1024, 1, processes=0)
    two = RolePlan("worker", 2, 2, 1024, 1, processes=2)
    with pytest.raises(SpecError, match=re.escape(
            f"worker: {PROCESSES.key} 2: TensorFlow runs one process per task")):
        JobPlan("job", "t.py", "python3", "/w", (two,))
    with pytest.raises(SpecError, match="every container of the group runs as many"):
        JobPlan("job", "t.py", "python3", "/w", (RolePlan("chiefworker", 1, 1, 1024, 1), two),
                framework="jax")


# ---- what each task runs, and with what ----

SPEC = ClusterSpec(chief=("c0:2000",), workers=("w0:2001", "w1:2002"))


def test_a_pytorch_task_runs_the_script_without_cluster_flags() -> None:
    worker = RolePlan("worker", 2, 2, 1024, 1)
    plan = JobPlan("job", "t.py", "python3", "/w", (worker,), framework="pytorch",
                   script_args=("--epochs", "2"), work_dir_flag="")
    assert plan.task_command(SPEC, "worker", 1, "/c") == ["python3", "app/t.py", "--epochs", "2"]
    flagged = JobPlan("job", "t.py", "python3", "/w", (worker,), framework="pytorch",
                      work_dir_flag="--snapshot_dir")
    assert flagged.task_command(SPEC, "worker", 1, "/c") == ["python3", "app/t.py",
                                                             "--snapshot_dir=/w"]


def test_torchrun_s_environment_for_each_rank() -> None:
    env = frameworks_of("pytorch").process_environment(SPEC, "worker", 1, generation=2,
                                      max_restarts=3, run_id="application_1_0001", environ={})
    assert env == {
        "MASTER_ADDR": "c0", "MASTER_PORT": "2000", "RANK": "2", "WORLD_SIZE": "3",
        "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "2", "GROUP_WORLD_SIZE": "3",
        "ROLE_NAME": "default", "ROLE_RANK": "2", "ROLE_WORLD_SIZE": "3",
        "TORCHELASTIC_RESTART_COUNT": "2", "TORCHELASTIC_MAX_RESTARTS": "3",
        "TORCHELASTIC_RUN_ID": "application_1_0001", "TORCHELASTIC_USE_AGENT_STORE": "False",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_NCCL_ENABLE_MONITORING": "1",
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000"}
    chief = frameworks_of("pytorch").process_environment(SPEC, "chiefworker", 0, generation=0,
                                        max_restarts=0, run_id="a", environ={})
    assert (chief["RANK"], chief["GROUP_RANK"]) == ("0", "0")


def test_nccl_s_watchdog_is_set_unless_the_job_sets_it_its_dumps_in_the_log_dir() -> None:
    env = frameworks_of("pytorch").process_environment(
        SPEC, "worker", 1, generation=0, max_restarts=0, run_id="a",
        environ={"LOG_DIRS": "/logs/c1,/logs2/c1", "TORCH_NCCL_ENABLE_MONITORING": "0",
                 "TORCH_NCCL_TRACE_BUFFER_SIZE": "0"})
    assert env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == "/logs/c1/nccl_trace_rank_"
    assert (env["TORCH_NCCL_ENABLE_MONITORING"], env["TORCH_NCCL_TRACE_BUFFER_SIZE"],
            env["TORCH_NCCL_DUMP_ON_TIMEOUT"]) == ("0", "0", "1")


def test_several_processes_per_container_count_as_torchrun_counts_them() -> None:
    env = frameworks_of("pytorch").process_environment(SPEC, "worker", 0, generation=0,
                                      max_restarts=0, run_id="a", environ={},
                                      local_rank=1, local_world_size=4)
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["GROUP_RANK"],
            env["OMP_NUM_THREADS"]) == ("5", "12", "1", "1", "1")
    mine = frameworks_of("pytorch").process_environment(SPEC, "worker", 0, generation=0,
                                       max_restarts=0, run_id="a",
                                       environ={"OMP_NUM_THREADS": "8"})
    assert mine["OMP_NUM_THREADS"] == "8"
    with pytest.raises(ValueError, match="local rank 4 of 4"):
        frameworks_of("pytorch").process_environment(SPEC, "worker", 0, generation=0,
                                    max_restarts=0, run_id="a", environ={},
                                    local_rank=4, local_world_size=4)


def test_jax_and_keras_environment_for_each_process() -> None:
    spec = ClusterSpec(workers=("w0:2001", "w1:2002"))
    env = frameworks_of("jax").process_environment(spec, "worker", 1, generation=0, max_restarts=0,
                                      run_id="a", environ={"KERAS_BACKEND": "torch"})
    startup = env.pop("PYTHONPATH")  # its sitecustomize: tfyarn's cluster for JAX
    assert startup == os.path.abspath(JAX_STARTUP_DIR)
    assert env == {
        "JAX_COORDINATOR_ADDRESS": "w0:2001", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "1",
        "KERAS_DISTRIBUTION_JOB_ADDRESSES": "w0:2001,w1:2002",
        "KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "1",
        "KERAS_BACKEND": "torch", "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo"}
    several = frameworks_of("jax").process_environment(spec, "worker", 1, generation=0,
                                          max_restarts=0, run_id="a", environ={},
                                          local_rank=1, local_world_size=2)
    assert (several["KERAS_DISTRIBUTION_JOB_ADDRESSES"], several["JAX_PROCESS_ID"],
            several["KERAS_BACKEND"]) == ("w0:2001", "3", "jax")


def test_tensorflow_tasks_get_nothing_here_and_a_ps_is_no_rank() -> None:
    assert frameworks_of("tensorflow").process_environment(SPEC, "worker", 0, generation=0,
                                       max_restarts=0, run_id="a", environ={}) == {}
    with pytest.raises(ValueError, match="a ps is no rank"):
        rankenv.group_rank(SPEC, "ps", 0)


# ---- the env to ship ----

@pytest.mark.parametrize(("framework", "package", "name"),
                         [("pytorch", "torch", "PyTorch"), ("jax", "jax", "JAX")])
def test_the_env_to_ship_needs_the_framework_the_job_names(
        tmp_path: Path, framework: str, package: str, name: str) -> None:
    entry, site = tmp_path / "train.py", tmp_path / "site-packages"
    entry.write_text("import os\n")  # its framework imported elsewhere, or not at all
    dist_info(site, "skein")
    frameworks.check_shipped_env(entry, tmp_path, [site], Path("/venvs/thin"))  # TensorFlow's
    with pytest.raises(JobEnvironmentError) as refused:
        frameworks.check_shipped_env(entry, tmp_path, [site], Path("/venvs/thin"), framework)
    text = str(refused.value)
    assert text.startswith(f'the job\'s script needs {name} (site.global.framework is '
                           f'"{framework}"), but the Python env tfyarn would ship'), text
    assert f"pip install {package}" in text.replace('"jax[cpu]"', "jax")
    dist_info(site, package)
    frameworks.check_shipped_env(entry, tmp_path, [site], Path("/venvs/ok"), framework)


def test_a_framework_declared_in_its_seam_alone_is_checked_in_the_env_to_ship(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A framework's module (its traits) is all the shipped env's check needs of it: its
    package's own distribution, its title, pip's hint."""
    from dataclasses import replace

    from appmaster.common import frameworks as seam
    from appmaster.common.frameworks.pytorch import PYTORCH

    monkeypatch.setitem(seam.KNOWN, "horovod", replace(PYTORCH, title="Horovod",
                                                        package="horovod"))
    entry, site = tmp_path / "train.py", tmp_path / "site-packages"
    entry.write_text("import horovod.torch as hvd\n")
    dist_info(site, "skein")
    with pytest.raises(JobEnvironmentError) as refused:
        frameworks.check_shipped_env(entry, tmp_path, [site], Path("/venvs/thin"), "horovod")
    assert "needs Horovod (site.global.framework is \"horovod\")" in str(refused.value)
    assert "pip install horovod in this env" in str(refused.value)
    dist_info(site, "horovod")
    frameworks.check_shipped_env(entry, tmp_path, [site], Path("/venvs/ok"), "horovod")


# ---- the failure rule: a group without a rank cannot go on ----

def group_plan(threshold: int = 1) -> JobPlan:
    workers = RolePlan("worker", 3, 1, 1024, 1, failure_threshold=threshold)
    return JobPlan("job", "t.py", "python3", "/w", (workers,), framework="pytorch")


def test_a_failed_rank_restarts_the_whole_group_and_counts_once() -> None:
    cluster = Cluster(group_plan())
    cluster.everyone_running()
    rank_0 = cluster.container("worker", 0)
    cluster.exit("worker", 2, 1)  # not rank 0: still every rank starts again, now
    assert cluster.job.generation == 1 and cluster.job.state == JobState.RESTARTING
    assert restarts(cluster) == ["worker 2 failed: cluster restarted as generation 1"]
    # rank 0's collective broke with it: already stopped, uncounted
    assert cluster.apply(cluster.job.on_exited(rank_0, 1, cluster.now, "broken pipe")) == []
    assert cluster.job.failures == Counter(worker=1)
    cluster.everyone_running()
    assert cluster.job.state == JobState.RUNNING
    cluster.exit("worker", 1, 1)  # past the threshold
    assert cluster.end and cluster.end.status == JobState.FAILED


# ---- a backend the cluster cannot serve ----

def test_nccl_without_gpus_is_explained() -> None:
    tail = 'RuntimeError: nccl2 requires at least one CUDA device\n'
    hint = nccl_without_gpus_hint(tail, gpus=0)
    assert hint.startswith("tfyarn: the script asked torch.distributed for the nccl backend")
    assert '"yarn.gpus": "1"' in hint and "gloo" in hint
    assert nccl_without_gpus_hint(tail, gpus=1) == ""  # its GPUs were there: another cause
    assert nccl_without_gpus_hint("RuntimeError: connection reset\n", gpus=0) == ""


def test_the_dry_run_says_a_failure_restarts_every_rank() -> None:
    from tfyarn.submission.plan import restart_limit

    workers = RolePlan("worker", 3, 1, 1024, 1, failure_threshold=2)
    assert restart_limit(workers, group=True) == (
        "2 failure(s) tolerated, each restarting every rank")
    assert restart_limit(workers) == "2 failure(s) tolerated, each replaced"


def test_status_and_the_page_say_how_many_processes_each_container_runs() -> None:
    from appmaster.page import jobpage
    from appmaster.page.view import JobView
    from tfyarn.watch import jobview

    workers = RolePlan("worker", 2, 1, 4096, 4, gpus=4, processes=4,
                       failure_threshold=1)
    cluster = Cluster(JobPlan("job", "t.py", "python3", "/w", (workers,), framework="pytorch"))
    cluster.everyone_running()
    view = JobView.of(cluster.job, "application_1_0001", None, cluster.now)
    assert [task.processes for task in view.tasks] == [4, 4]
    table = jobview.format_table(view).splitlines()
    column = table[0].index("PROCS")
    assert [line[column:].split()[0] for line in table[1:]] == ["4", "4"]
    assert "<th>processes</th>" in jobpage.tasks_html(view.to_dict())
    single = Cluster(group_plan())
    single.everyone_running()
    assert "PROCS" not in jobview.format_table(
        JobView.of(single.job, "application_1_0002", None, single.now))


def test_a_restart_says_what_its_chief_restored_and_claims_nothing_before() -> None:
    """The restart's line names what rank 0 of the new generation restored, once it has
    (its mirror's report), and the time it was written; nothing restored is said so."""
    cluster = Cluster(group_plan(threshold=5))
    cluster.everyone_running()
    cluster.exit("worker", 2, 1)
    cluster.everyone_running()
    rank_0 = cluster.container("worker", 0)
    cluster.job.on_status(rank_0, mirror={"restore_done": False})  # restoring still
    assert restarts(cluster) == ["worker 2 failed: cluster restarted as generation 1"]
    done = {"restore_done": True, "restored": "snapshot.pt", "restored_written": "12:03:10"}
    cluster.job.on_status(rank_0, mirror=done)
    cluster.job.on_status(rank_0, mirror=done)  # told once
    assert restarts(cluster) == ["worker 2 failed: cluster restarted as generation 1, "
                                 "restored snapshot.pt of 12:03:10"]
    cluster.exit("worker", 1, 1)
    cluster.everyone_running()
    cluster.job.on_status(cluster.container("worker", 0), mirror={"restore_done": True})
    assert restarts(cluster)[-1] == ("worker 1 failed: cluster restarted as generation 2, "
                                     "restored nothing: the job starts over")


def test_a_tensorflow_checkpoint_restored_names_its_step() -> None:
    assert restored_line({"restored": "ckpt/model.ckpt-100"}) == (
        "restored ckpt/model.ckpt-100 (step 100)")


def test_jax_finds_tfyarns_cluster_with_no_arguments(tmp_path: Path) -> None:
    """jax.distributed.initialize()'s detection, as jax 0.10.2's ClusterEnv does it (a fake
    jax._src.clusters with its registry), through the sitecustomize a JAX process starts
    with: tfyarn's detector comes first, defined only once JAX imports its clusters, and
    an env's own sitecustomize still runs."""
    fake = tmp_path / "fake"
    (fake / "jax" / "_src" / "clusters").mkdir(parents=True)
    (fake / "jax" / "__init__.py").write_text("")
    (fake / "jax" / "_src" / "__init__.py").write_text("")
    (fake / "jax" / "_src" / "clusters" / "__init__.py").write_text(
        "class ClusterEnv:\n"
        "    _cluster_types = []\n"
        "    def __init_subclass__(cls, **kwargs):\n"
        "        super().__init_subclass__(**kwargs)\n"
        "        cls._cluster_types.append(cls)\n"
        "class SlurmCluster(ClusterEnv):\n"
        "    pass\n")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os; os.environ['THEIRS'] = 'ran'\n")
    probe = ("import os, sys\n"
             "assert 'jax._src.clusters' not in sys.modules\n"
             "from jax._src.clusters import ClusterEnv\n"
             "first = ClusterEnv._cluster_types[0]\n"
             "print(first.name, first.is_env_present(), first.get_coordinator_address(),\n"
             "      first.get_process_count(), first.get_process_id(), os.environ['THEIRS'])\n")
    env = {**frameworks_of("jax").process_environment(ClusterSpec(workers=("w0:2001", "w1:2002")),
                                         "worker", 1, generation=0, max_restarts=0,
                                         run_id="a", environ={}),
           "TFYARN_GENERATION": "0"}
    repo = Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join([str(repo / JAX_STARTUP_DIR), str(repo),
                                         str(fake), str(theirs)])
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["tfyarn", "True", "w0:2001", "2", "1", "ran"], done.stderr



def test_a_jax_process_runs_the_stacks_and_the_jax_sitecustomize_then_the_envs_once(
        tmp_path: Path) -> None:
    """A JAX task's process starts with both of tfyarn's sitecustomize modules on its path
    (the stacks on a signal, first; JAX's cluster detector), each running the next after it,
    and the env's own at the end, once: none hides another, none runs twice."""
    from appmaster.agent.steps import SITE_DIR

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text(
        "import os\nos.environ['THEIRS'] = os.environ.get('THEIRS', '') + 'ran'\n")
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "TFYARN_STACKS_SIGNAL": str(signal.SIGRTMIN + 3),
           "PYTHONPATH": os.pathsep.join([str(SITE_DIR), str(repo / JAX_STARTUP_DIR),
                                          str(repo), str(theirs)])}
    probe = ("import os, signal, sys, time\n"
             "os.kill(os.getpid(), signal.SIGRTMIN + 3); time.sleep(0.5)\n"
             "print('tfyarn.jaxcluster' in sys.modules, os.environ['THEIRS'])\n")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["True", "ran"], done.stderr
    assert "most recent call first" in done.stderr, done.stderr  # the stacks, on the signal


# ---- a PyTorch or JAX job in its own words ----

TENSORFLOW_WORDS = re.compile(
    r"TensorFlow|Cluster spec|\bps\b|checkpoint|TF_CONFIG|\bchief\b|global step", re.I)


@pytest.mark.parametrize("framework", ["pytorch", "jax"])
def test_status_the_page_and_flex_of_a_group_speak_its_framework(framework: str) -> None:
    """What a user reads of a running PyTorch or JAX job (status's lines, `submit --wait`'s
    progress line, the job page, the flex refusals, a preemption notice, the success
    diagnostics) holds no TensorFlow word: ranks, rank 0, the process group, snapshots."""
    from appmaster.model.jobflex import flex_refusal
    from appmaster.page.jobpage import render_page
    from appmaster.page.view import JobView, cluster_words
    from tfyarn.watch import jobview

    workers = RolePlan("worker", 3, 1, 1024, 1, failure_threshold=1, processes=2)
    job_plan = JobPlan("job", "t.py", "python3", "hdfs:///w", (workers,), framework=framework)
    cluster = Cluster(job_plan)
    cluster.everyone_running()
    rank_0 = cluster.container("worker", 0)
    cluster.job.on_status(rank_0, mirror={"interval_s": 10.0, "last_sync": 1.0, "files_up": 2,
                                          "remote": "hdfs:///w"})
    cluster.job.on_status(rank_0, progress={"step": 120, "steps_per_s": 4.0, "updated": 1.0},
                          now=cluster.now)
    cluster.job.on_preempt_notice(cluster.container("worker", 2), cluster.now)
    view = JobView.of(cluster.job, "application_1_0001", "hdfs:///w", cluster.now)
    title, line = cluster_words(view.to_dict())
    status = "\n".join([jobview.format_status(view), f"{title}: {line}",
                        *jobview.storage_lines(view, 2.0), *jobview.progress_lines(view, 2.0),
                        *view.restarts])
    assert "rank 0's first (where the group meets)" in status, status
    assert "Process group: 6 ranks (3 containers x 2 processes)" in status, status
    assert "Training: step 120" in status and "rank 0 may save a snapshot first" in status
    live = jobview.live_line(view, "epoch 3 loss 0.25")
    assert live.endswith(" | rank 0: epoch 3 loss 0.25"), live
    page = render_page(view.to_dict())
    refusals = [flex_refusal(job_plan, JobState.RUNNING, role, count) for role, count in
                [("ps", 1), ("chiefworker", 2), ("evaluator", 1), ("worker", 0)]]
    assert "flex takes worker" in refusals[0] and "process group" in refusals[3]
    cluster.exit("worker", 0, 0)
    assert cluster.end is not None
    diagnostics = cluster.end.diagnostics
    assert diagnostics.startswith("Rank 0 finished successfully."), diagnostics
    for text in (status, live, page, *refusals, diagnostics):
        assert not TENSORFLOW_WORDS.search(re.sub(r"flex takes worker|no role 'ps'", "", text)
                                           ), text


def example_dry_run(example: str, *overrides: tuple[str, str]) -> str:
    """The dry run of an example's own job files, with ``--set KEY=VALUE`` ``overrides``."""
    from tfyarn.jobconfig import Defaults, Override, load_job
    from tfyarn.submission.plan import AppSpecExtras, build_plan, format_plan, plan_document

    files = Path(__file__).resolve().parent.parent / "examples" / example
    job = load_job(str(files / "resources.json"), str(files / "appConfig.json"),
                   defaults=Defaults(), overrides=[Override(key, value, f"--set {key}")
                                                   for key, value in overrides])
    return format_plan(plan_document(job, build_plan(job), AppSpecExtras()))


@pytest.mark.parametrize(("example", "ranks"), [("pytorch_ddp", "3 ranks (3 containers x 1 "
                                                 "process)"),
                                                ("jax_data_parallel", "2 ranks (2 containers "
                                                 "x 1 process)")])
def test_the_dry_run_of_a_group_speaks_its_framework(example: str, ranks: str) -> None:
    """The dry run of a PyTorch or JAX example's own job files holds no TensorFlow word but
    in setting keys (site.global.checkpoint.mirror.interval is every framework's), and says
    the group's world size."""
    from appmaster.common.settings import SETTINGS

    text = example_dry_run(example)
    assert "  rank 0: worker 0" in text and "when rank 0 exits 0" in text, text
    assert f"  framework: {frameworks_of(example.split('_')[0]).word}, {ranks}\n" in text, text
    keys = re.compile("|".join(re.escape(s.key) for s in SETTINGS))
    assert not TENSORFLOW_WORDS.search(keys.sub("", text)), TENSORFLOW_WORDS.search(
        keys.sub("", text))


def test_the_dry_run_of_several_processes_per_container_counts_ranks_and_shares_gpus() -> None:
    """2 containers of 4 GPUs, 2 processes each: 4 ranks, each process told 2 of its
    container's GPUs."""
    text = example_dry_run("pytorch_ddp", ("worker.yarn.component.instances", "2"),
                           ("worker.yarn.gpus", "4"),
                           ("worker.yarn.processes.per.container", "2"))
    assert "  framework: pytorch, 4 ranks (2 containers x 2 processes)\n" in text, text
    assert ("  GPUs: 4 yarn.io/gpu per task (8 in all) on <default partition>; each of its 2 "
            "processes (ranks) gets its own 2 in CUDA_VISIBLE_DEVICES") in text, text


def test_logs_all_leaves_out_yarns_directory_listings_unless_asked() -> None:
    """A torch env's directory.info is 1.4 MB a container: `tfyarn logs --all` shows the
    job's output, not YARN's listings of every file (--directory-info brings them)."""
    from tfyarn.watch.joblogs import LogFile, without_listings

    logs = [LogFile("container_1_01_000002", "nm1", name, "text")
            for name in ("worker-0.stderr", "directory.info", "prelaunch.err")]
    kept, left_out = without_listings(logs)
    assert [log.name for log in kept] == ["worker-0.stderr", "prelaunch.err"] and left_out == 1
