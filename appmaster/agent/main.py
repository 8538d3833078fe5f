"""The per-container agent: reserve a port, export it, wait for the cluster spec, run the script.

Runs as ``python -m appmaster.agent.main`` in every task container. Its exit code is the
script's, so YARN's container state says how the task ended. It talks to the master over
the job's rendezvous (appmaster/common/agentlink.py: the standard library, no skein or gRPC), so
what it costs a container is little more than a Python start.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from appmaster.agent import notice, steps
from appmaster.agent.heartbeat import Heartbeat
from appmaster.agent.mirror import MirrorStatus
from appmaster.agent.processgroup import GroupEnd, ProcessGroup
from appmaster.agent.taskdir import (
    CannotStart,
    Restore,
    TaskWorkDir,
    cannot_reach,
    wait_until_settled,
)
from appmaster.common import frameworks, gpus, registry
from appmaster.common.agentlink import AgentLink, LinkError
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.jobplan import DATA_DIR_NAME, DATA_ENTRY_PREFIX, SECRET_FILE_PREFIX, JobPlan
from appmaster.common.registry import AgentState
from appmaster.common.vocabulary import Role

# What only some tasks use is imported where it is used (a keytab's tokens, the chief's
# progress, a failed script's hints, TensorBoard's page guard and its web server): every
# agent's start is CPU its node spends before the task's script, and every module it holds
# is memory beside the script, in each of a job's containers.
if TYPE_CHECKING:
    from appmaster.common.pageguard import GuardedPage

log = logging.getLogger("tfyarn.agent")

# skein starts the containers it asked for at its own start (every task's, see
# tfyarn/submission/appspec.py) maybe before the master serves its rendezvous.
CONNECT_TIMEOUT_S = 120.0
CONNECT_RETRY_S = 0.2  # the master's start is on the way to every task's: look often


def reserve_port(port: int = 0) -> socket.socket:
    """Bind (never listen) a free port with SO_REUSEADDR and hold it for the task's life.

    Linux lets a second SO_REUSEADDR socket bind and listen on a port whose holder is not
    listening; TensorFlow's gRPC server sets SO_REUSEADDR (and refuses SO_REUSEPORT), so it
    takes the port while every other program is kept off it. The reserve-then-bind race of
    other launchers (the port taken in between) cannot happen, and since this socket never
    listens, no connection is ever routed to it.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("0.0.0.0", port))
    except OSError:  # that port is taken: any free one
        sock.bind(("0.0.0.0", 0))
    return sock


def previous_port(task: registry.TaskAssignment) -> int:
    """The port this task had before, if it was on this very node (else 0: any port).

    A replaced task back at its old address needs no new spec anywhere: TF2's
    ClusterCoordinator, for one, reconnects only to the addresses it started with.
    """
    host, _, port = (task.previous_address or "").rpartition(":")
    return int(port) if host == advertised_host() and port.isdigit() else 0


def advertised_host() -> str:
    """The NodeManager's host name: what YARN itself calls this node."""
    return os.environ.get("NM_HOST") or socket.getfqdn()


def log_dir() -> Path:
    """The container's first log directory, whose files `yarn logs` collects."""
    return Path(os.environ.get("LOG_DIRS", ".").split(",")[0])


def secret_environment(names: tuple[str, ...]) -> dict[str, str]:
    """TFYARN_SECRET_<name> = the secret file's path (never its content), readable by us only."""
    env = {}
    for name in names:
        path = Path(SECRET_FILE_PREFIX + name).resolve()
        path.chmod(0o400)
        env[f"TFYARN_SECRET_{name}"] = str(path)
    return env


def gather_data(names: Iterable[str]) -> str:
    """The data dir's path; site.global.data's entries (YARN localized each as data-<name>)
    linked into it as <name>."""
    root = Path(DATA_DIR_NAME)
    for name in names:
        root.mkdir(exist_ok=True)
        link = root / name
        if not link.is_symlink():
            link.symlink_to(Path("..") / f"{DATA_ENTRY_PREFIX}{name}")
    return os.path.abspath(DATA_DIR_NAME)


def task_environment(spec: ClusterSpec, task: registry.TaskAssignment, work_dir: str,
                     secrets: tuple[str, ...] = (), work_dir_url: str | None = None,
                     group: dict[str, str] | None = None) -> dict:
    """``group``: a PyTorch or JAX rank's variables (appmaster/common/frameworks/), in place
    of TF_CONFIG."""
    env = dict(os.environ)
    env.update(secret_environment(secrets))
    env.update(group if group is not None else {
        "TF_CONFIG": json.dumps(spec.tf_config(task.role, task.index))})
    env.update({
        "TFYARN_ROLE": task.role,
        "TFYARN_TASK_INDEX": str(task.index),
        "TFYARN_ATTEMPT": str(task.attempt),
        "TFYARN_GENERATION": str(task.generation),
        "TFYARN_WORK_DIR": work_dir,
        "PYTHONUNBUFFERED": "1",  # output reaches the log files as it happens
    })
    if work_dir_url:  # the job's work dir on HDFS, which tfyarn keeps work_dir in step with
        env["TFYARN_WORK_DIR_URL"] = work_dir_url
    return env


def wait_for_any_spec(link: AgentLink, generation: int) -> ClusterSpec:
    """For a task outside the cluster (the evaluator): block until a spec of its generation
    or a later one is published; the newest."""
    version = 0
    while True:
        value, version = link.wait(registry.LATEST_SPEC_KEY, after=version)
        latest = json.loads(value)
        if latest["generation"] >= generation:
            return ClusterSpec.from_json(latest["spec"])


def wait_for_spec(link: AgentLink, generation: int, own_address: str, role: str,
                  index: int) -> ClusterSpec:
    """Block until the published spec of our generation lists our own address."""
    version = 0
    while True:
        value, version = link.wait(registry.spec_key(generation), after=version)
        spec = ClusterSpec.from_json(value)
        addresses = spec.addresses(role)
        if index < len(addresses) and addresses[index] == own_address:
            return spec


def connect() -> AgentLink:
    """This container's link to the master's rendezvous, once the master serves it."""
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            return AgentLink.from_container()
        except LinkError:
            if time.monotonic() > deadline:
                raise
            time.sleep(CONNECT_RETRY_S)


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    container, app_id = os.environ["SKEIN_CONTAINER_ID"], os.environ["SKEIN_APPLICATION_ID"]
    link = connect()
    _say_started(link, container)
    if sys.argv[1:2] == [registry.CANNOT_START]:  # run by the node's own Python (appspec._launch)
        return _cannot_start(link, container, sys.argv[2], registry.NO_INTERPRETER_EXIT)
    plan = JobPlan.from_container()
    task = registry.TaskAssignment.from_json(link.wait(registry.task_key(container))[0])
    name = f"{task.role}-{task.index}"
    _keep_beating(link, container, plan)
    report_mirror = _mirror_reporter(link, container)
    try:
        work = _work_dir(plan, app_id, task, name)
        # TensorBoard and the evaluator read their files first; a TensorFlow task restores
        # while it exports and waits for the others: its export does not wait for HDFS.
        restore = Restore(work, name, report_mirror, partial(
            wait_until_settled, link, task.generation))
        if task.role in (Role.TENSORBOARD, Role.EVALUATOR):
            restore.run()
            restore.done()
        else:
            restore.start()
    except CannotStart as exc:
        return _cannot_start(link, container, str(exc))
    try:  # the GPUs its role asked YARN for, held for its life (appmaster/common/gpus.py)
        role = plan.role(task.role)
        held = gpus.take(role.gpus if role else 0, log)
    except gpus.GpuError as exc:
        return _gpus_failed(link, container, name, exc)
    # TensorBoard answers only YARN's proxy: behind a guard on its port (pageguard.py)
    page = None
    if task.role == Role.TENSORBOARD:
        from appmaster.common.pageguard import GuardedPage

        page = GuardedPage.in_container(task.role)
    reservation, address = _export_address(link, container, task, name, page)
    _status(link, container, AgentState.REGISTERED, address=address, gpus=held.summary())
    command, envs = _command_and_environment(link, plan, app_id, task, work, reservation,
                                             address, page)
    try:
        restore.done()
    except CannotStart as exc:
        return _cannot_start(link, container, str(exc))
    # CUDA_VISIBLE_DEVICES: each process its own share of the GPUs, or "" for none
    envs = [{**env, **held.process_environment(i, len(envs))} for i, env in enumerate(envs)]
    end = _run_script(link, container, plan, task.generation, work, command, envs, name,
                      address, page or reservation)
    work.finish(report_mirror)
    hinted = _with_hint(plan, name, end.code, end.tail, role.gpus if role else 0)
    code = _exit_code(link, container, name, address, end.code, hinted)
    _status(link, container, AgentState.EXITED, address=address, exit_code=code)
    return code


def _say_started(link: AgentLink, container: str) -> None:
    """Tell the master this agent runs, and where."""
    node = f"{os.environ.get('NM_HOST')}:{os.environ.get('NM_HTTP_PORT')}"
    _status(link, container, AgentState.STARTED, yarn_container_id=os.environ.get("CONTAINER_ID"),
            node=node, user=os.environ.get("USER"))


def _keep_beating(link: AgentLink, container: str, plan: JobPlan) -> None:
    """Heartbeats to the master for the task's life. A job submitted with a keytab: the
    master's new HDFS tokens, if it has some yet, before this task's first HDFS connection,
    then whenever a heartbeat says there are newer ones."""
    on_tokens = None
    if plan.principal:
        from appmaster.common.hdfstokens import TokenFollower  # its siteconf reads XML

        on_tokens = TokenFollower(lambda: link.get_versioned(registry.TOKENS_KEY)).follow
        on_tokens()
    Heartbeat(link, container, plan.heartbeat_interval_s, plan.heartbeat_timeout_s,
              on_tokens=on_tokens).start()


def _mirror_reporter(link: AgentLink, container: str) -> Callable[[MirrorStatus], None]:
    """How the task's work dir mirror tells the master where it stands."""
    def report_mirror(status: MirrorStatus) -> None:
        link.put(registry.mirror_key(container), json.dumps(status.to_dict()).encode())

    return report_mirror


def _work_dir(plan: JobPlan, app_id: str, task: registry.TaskAssignment,
              name: str) -> TaskWorkDir:
    """The task's work dir, not restored yet (:class:`Restore`); :class:`CannotStart` if it
    cannot be."""
    try:
        return TaskWorkDir(plan, app_id, task.role, task.index)
    except Exception as exc:
        raise cannot_reach(name, plan.resolved_work_dir(app_id), exc) from exc


def _gpus_failed(link: AgentLink, container: str, name: str, exc: gpus.GpuError) -> int:
    """The task's GPUs could not be taken: it fails before its script, with why."""
    reason = f"{name} cannot start: its GPUs: {exc}"
    log.error("%s", reason)
    with open(log_dir() / f"{name}.stderr", "a") as err:  # where `tfyarn logs` looks
        err.write(f"tfyarn: {reason}\n")
    link.put(registry.tail_key(container), reason.encode())
    _status(link, container, AgentState.EXITED, exit_code=gpus.GPU_FAILED_EXIT,
            gpus={"error": str(exc)})
    return gpus.GPU_FAILED_EXIT


def _export_address(link: AgentLink, container: str, task: registry.TaskAssignment,
                    name: str, page: GuardedPage | None = None,
                    ) -> tuple[socket.socket | None, str | None]:
    """The port reserved for the task's server and the address exported for it: none for
    the evaluator, outside the TensorFlow cluster (it listens nowhere). TensorBoard's
    export also carries its page's secret path, for the master to give skein's UI."""
    if task.role == Role.EVALUATOR:
        return None, None
    reservation = reserve_port(previous_port(task))
    address = f"{advertised_host()}:{reservation.getsockname()[1]}"
    export = registry.Export(address, container, task.generation,
                             page.secret if page else "")
    link.put(registry.export_key(task.role, task.index), export.to_json().encode())
    log.info("%s (attempt %d, generation %d) exported %s", name, task.attempt,
             task.generation, address)
    return reservation, address


def _command_and_environment(link: AgentLink, plan: JobPlan, app_id: str,
                             task: registry.TaskAssignment, work: TaskWorkDir,
                             reservation: socket.socket | None, address: str | None,
                             page: GuardedPage | None = None) -> tuple[list[str], list[dict]]:
    """What the task runs, and with what environment, one per process: TensorBoard at once,
    on loopback behind its guard on the exported port; a task once its generation's spec is
    out (the evaluator, once training is done)."""
    if page is not None:  # TensorBoard: not part of the TensorFlow cluster, no spec to wait for
        command = plan.tensorboard_command(page.upstream_port, work.path, page.write_flags())
        page.start(reservation)
        return command, [{**os.environ, "PYTHONUNBUFFERED": "1"}]
    spec = (wait_for_any_spec(link, task.generation) if address is None else
            wait_for_spec(link, task.generation, address, task.role, task.index))
    # its work dir and data dir (localized by YARN) in this container's directory
    command = plan.task_command(spec, task.role, task.index, os.getcwd(), app_id)
    groups = _group_environments(plan, spec, task, app_id)
    env = task_environment(spec, task, work.path, plan.secrets,
                           work.job_dir if work.mirror else None, groups[0] if groups else None)
    if plan.data_dir or plan.data:  # what --data_dir says, for scripts without the flag
        env["TFYARN_DATA_DIR"] = gather_data(entry.name for entry in plan.data)
    if task.role == Role.EVALUATOR:
        env["TFYARN_TRAINING_DONE_FILE"] = str(work.done_file)
        work.wait_for_training(link)
    return command, [{**env, **group} for group in groups] if groups else [env]


def _group_environments(plan: JobPlan, spec: ClusterSpec, task: registry.TaskAssignment,
                        app_id: str) -> list[dict[str, str]]:
    """A group's task's processes' variables, one per process of its container (their
    ranks); none for a framework whose cluster is in flags and TF_CONFIG."""
    traits = frameworks.of(plan.framework)
    if not traits.ranks:
        return []
    role = plan.role(task.role)
    processes = plan.processes_per_container
    return [traits.process_environment(
        spec, task.role, task.index, generation=task.generation,
        max_restarts=role.failure_threshold if role else 0, run_id=app_id, environ=os.environ,
        local_rank=local_rank, local_world_size=processes) for local_rank in range(processes)]


def _run_script(link: AgentLink, container: str, plan: JobPlan, generation: int,
                work: TaskWorkDir, command: list[str], envs: list[dict], name: str,
                address: str | None, reservation: socket.socket | GuardedPage | None,
                ) -> GroupEnd:
    """The task's script, one process per environment (appmaster/agent/processgroup.py), its
    progress reported while it runs (its port let go once it ends): how it ended."""
    progress = None
    page = None if reservation is None or isinstance(reservation, socket.socket) else reservation
    if work.reports_progress:
        from appmaster.agent.progress import ProgressReporter, report_to

        progress = ProgressReporter(work.path, report_to(
            link, registry.progress_key(container)), plan.progress_interval_s).start()
    log.info("starting %s (%d process(es)): %s", name, len(envs), " ".join(command))
    notified = notice.follow(link, container, name, work.mirror if work.is_chief else None)
    _status(link, container, AgentState.RUNNING, address=address)
    if page is None:  # a training process: its steps, its stacks on the watchdog's request
        envs = [{**env, **steps.process_environment(i, env)} for i, env in enumerate(envs)]
    group = ProcessGroup(command, [{**env, **notified} for env in envs], name, log_dir(),
                         page.secret if page else "")
    reporter = None
    if page is None:
        reporter = steps.StepReporter(
            [Path(env[registry.PROGRESS_FILE_ENV]) for env in envs],
            steps.report_to(link, container), plan.progress_interval_s).start()
        steps.follow_stack_requests(link, name, generation, group.children)
    group.forward_signals()
    _stop_when_asked(link, container, name, group)
    end = group.wait()
    if reporter is not None:
        reporter.stop()
        reporter.read()
    if reservation is not None:
        reservation.close()
    log.info("%s exited with code %d%s", name, end.code,
             "" if end.failed is None else f" (local rank {end.failed} failed first)")
    if progress is not None:
        progress.finish()
    return end


def _stop_when_asked(link: AgentLink, container: str, name: str, group: ProcessGroup) -> None:
    """tfyarn ends this task (a group restart, a flex, a stall, the job's end): its processes
    get SIGTERM and their grace, then the agent goes on as after any end of its script (the
    chief's work dir goes up in full) instead of dying with YARN's kill mid-copy."""
    def wait() -> None:
        try:
            link.wait(registry.stop_key(container))
        except Exception as exc:  # the master gone: its heartbeat tells the agent
            log.debug("no stop to wait for: %s", exc)
            return
        log.info("tfyarn stops %s: SIGTERM to its processes", name)
        group.stop()

    threading.Thread(target=wait, daemon=True, name="stop").start()


def _with_hint(plan: JobPlan, name: str, code: int, tail: str, gpus: int = 0) -> str:
    """A failed script's stderr tail, with the fix when it refused a flag tfyarn passed it
    (appmaster/agent/refusedflags.py), a ps could not save its part of a checkpoint
    (appmaster/agent/splitsave.py) or it asked for nccl without GPUs (backendhint.py), also
    added to its stderr file (`tfyarn logs`)."""
    if code == 0:
        return tail
    from appmaster.agent.backendhint import nccl_without_gpus_hint
    from appmaster.agent.refusedflags import refused_flag_hint
    from appmaster.agent.splitsave import split_save_hint

    hint = (refused_flag_hint(tail, plan.work_dir_flag, bool(plan.data_dir or plan.data))
            or split_save_hint(tail) or nccl_without_gpus_hint(tail, gpus))
    if not hint:
        return tail
    log.error("%s", hint)
    with open(log_dir() / f"{name}.stderr", "a") as err:
        err.write(hint + "\n")
    return tail.rstrip("\n") + "\n" + hint + "\n"


def _exit_code(link: AgentLink, container: str, name: str, address: str | None, code: int,
               tail: str) -> int:
    """The task's exit code as the master reads it: a port taken under the script is not
    its failure; a failure's stderr lines go to the master."""
    if code != 0 and any(sign in tail for sign in registry.PORT_TAKEN_SIGNS):
        log.warning("%s could not bind %s: another process listens there", name, address)
        code = registry.PORT_TAKEN_EXIT
    if code != 0:
        link.put(registry.tail_key(container), tail.encode())
    return code


def _cannot_start(link: AgentLink, container: str, reason: str,
                  exit_code: int = registry.STORAGE_FAILED_EXIT) -> int:
    """Fail the task before its script: the reason goes to its log and the job's diagnostics."""
    log.error("%s", reason)
    link.put(registry.tail_key(container), reason.encode())
    _status(link, container, AgentState.EXITED, exit_code=exit_code)
    return exit_code


def _status(link: AgentLink, container: str, state: AgentState, **extra: Any) -> None:
    record = registry.AgentStatus(state, time.time(), **extra)
    link.put(registry.status_key(container), record.to_json().encode())


if __name__ == "__main__":
    sys.exit(main())
