"""`tfyarn status`, `list`, `logs` and `kill`: watching and stopping jobs."""

from __future__ import annotations

import fnmatch
import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import click

from appmaster.common.vocabulary import Role, TaskState
from appmaster.page.view import JobView, TaskRow, cluster_words, queue_line
from tfyarn.cli import exitcodes
from tfyarn.cli.options import driver_options, iso_time
from tfyarn.errors import TfyarnError
from tfyarn.hadoop import hadoopconf
from tfyarn.hadoop.driver import FINAL_STATES, DriverSettings, plain_diagnosis, skein_client
from tfyarn.security import kerberos
from tfyarn.submission.environments import cluster_user
from tfyarn.watch import joblogs, jobreport, jobview, queuestanding
from tfyarn.watch.applications import application_report, is_tfyarn_job, report_source

ALL_STATES = ["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED",
              "KILLED"]
ACTIVE_STATES = ["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"]
LOG_ROLES = tuple(role.value for role in Role)  # every component's tasks write <role>-<i>.*
STREAMS = ("stdout", "stderr")
APPMASTER_ROLE = "appmaster"


def _view(report) -> tuple[JobView | None, str]:
    """The task table, live while the job runs, else the one the AppMaster logged last."""
    if str(report.state) == "RUNNING":
        view = jobview.live_view(report.tracking_url)
        return view, "live from the AppMaster" if view else "AppMaster not answering yet"
    if str(report.state) in FINAL_STATES:
        return jobreport.final_view(report)
    return None, f"the application is {report.state}: no task has started yet"


def _report_dict(report) -> dict:
    """An application as status/list --json show it: times in ISO 8601 with their UTC
    offset, null where there is none (an unfinished job's finish time)."""
    return {
        "id": report.id, "name": report.name, "user": report.user, "queue": report.queue,
        "state": str(report.state), "final_status": str(report.final_status),
        "tracking_url": report.tracking_url, "diagnostics": report.diagnostics,
        "start_time": iso_time(report.start_time), "finish_time": iso_time(report.finish_time),
    }


def _view_dict(view: JobView) -> dict:
    """The AppMaster's task table as status --json shows it: its points in time (the view's
    `updated`, the progress figures' and each task's last mirror sync) in ISO 8601, like
    the application's; `history` stays the page's chart data (epoch seconds)."""
    data = view.to_dict()
    data["updated"] = iso_time(view.updated / 1000 if view.updated else None)
    progress = _with_iso(data, "progress", "updated")
    _with_iso(progress or {}, "evaluation", "updated")
    for task in [*data["tasks"], *([data["tensorboard"]] if data.get("tensorboard") else [])]:
        _with_iso(task, "mirror", "last_sync")
        _with_iso(task, "progress", "updated")
    return data


def _with_iso(data: dict, part: str, key: str) -> dict | None:
    """``data[part]`` (an object) replaced by a copy whose ``key`` (epoch seconds) is in ISO
    8601; the copy, or None when there is no such object."""
    if not isinstance(data.get(part), dict):
        return None
    data[part] = {**data[part], key: iso_time(data[part].get(key))}
    return data[part]


@click.command("status")
@click.argument("app_id")
@click.option("--json", "as_json", is_flag=True,
              help="Machine-readable output: every task, whatever the filters.")
@click.option("--all", "show_all", is_flag=True,
              help=f"A row for every task [default: every task up to {jobview.SMALL_JOB} "
                   "tasks; a larger job gets a count per role and state, then the tasks "
                   "that need attention].")
@click.option("--role", type=click.Choice([r.value for r in Role if r != Role.TENSORBOARD]),
              default=None, help="Only this role's tasks.")
@click.option("--state", type=click.Choice([state.value for state in TaskState]), default=None,
              help="Only the tasks in this state (what each means: the commands reference's "
                   "task states).")
@click.option("--exit-code", "exit_code", is_flag=True,
              help=f"Exit with the job's state, for scripts: {exitcodes.OK} SUCCEEDED, "
                   f"{exitcodes.JOB_FAILED} FAILED, {exitcodes.JOB_KILLED} KILLED, "
                   f"{exitcodes.JOB_RUNNING} not ended yet.")
@driver_options
def status_command(driver: DriverSettings | None, app_id: str, as_json: bool, show_all: bool,
                   role: str | None, state: str | None, exit_code: bool) -> None:
    """The application's state and a table of its tasks, with the cluster spec."""
    with report_source(driver) as client:
        report = application_report(client, app_id)
    _show_status(report, as_json, show_all, role, state)
    if exit_code:
        sys.exit(exitcodes.of_report(report))


def _show_status(report, as_json: bool, show_all: bool, role: str | None,
                 state: str | None) -> None:
    view, source = _view(report)
    if as_json:
        click.echo(json.dumps({"application": _report_dict(report),
                               "job": _view_dict(view) if view else None}, indent=2))
        return
    click.echo(f"{report.id} {report.name} ({report.user}, queue {report.queue}): "
               f"{report.state}, final status {report.final_status}")
    click.echo(f"Tracking URL: {report.tracking_url}")
    if report.diagnostics:
        click.echo(f"Diagnostics: {report.diagnostics.strip()}")
    if why := jobview.launch_failure(report.id, report.diagnostics, wait_s=0):
        click.echo(why)
    if view is not None and view.queue:
        click.echo(queue_line(view.queue))
    # the AppMaster's view holds the queue as it last asked the RM; else asked here
    unknown = str(report.state) == "ACCEPTED" or (
        view is not None and view.queue and not view.queue.get("cluster")
        and view.queue["given"] < view.queue["of"])  # not once every container came
    if unknown and (standing := queuestanding.standing_line(report.id)):
        click.echo(standing)
    if view is None:
        click.echo(f"Tasks: {source}.")
        return
    click.echo(f"\nTasks ({source}; job {view.state}, generation {view.generation}):")
    click.echo(jobview.format_status(view, role, state, show_all))
    if gpu_lines := jobview.gpu_lines(view):
        click.echo("\nGPUs (as each task saw them; its script gets CUDA_VISIBLE_DEVICES):")
        click.echo("\n".join(gpu_lines))
    title, line = cluster_words(view.to_dict())
    if line:
        click.echo(f"\n{title}: {line}")
    for line in [*jobview.progress_lines(view, time.time()),
                 *jobview.storage_lines(view, time.time()), *jobview.verdict_lines(view),
                 *jobview.liveness_lines(view)]:
        click.echo(line)
    if view.tensorboard_url:
        # it answers only through YARN's proxy (appmaster/common/pageguard.py)
        proxied = report.tracking_url.rstrip("/") + "/pages/tensorboard/"
        click.echo(f"TensorBoard: {proxied} (it listens at {view.tensorboard_url} for YARN's "
                   "proxy only)")
    for line in view.restarts:
        click.echo(f"Restart: {line}")


@click.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include finished jobs (every state).")
@click.option("--state", "states", multiple=True,
              type=click.Choice([*ALL_STATES, "ALL"], case_sensitive=False),
              help="Only jobs in this YARN state (repeatable; ALL: every one), like `yarn "
                   "application -list -appStates` [default: the running ones, or every one "
                   "with --all].")
@click.option("--queue", default=None, help="Only jobs in this queue.")
@click.option("--name", default=None,
              help="Only jobs of this name (shell wildcards: 'mnist-*').")
@click.option("--user", default=None,
              help="Whose jobs (ALL: everyone's) [default: yours: your Kerberos principal's "
                   "short name on a secure cluster, else HADOOP_USER_NAME or your login].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@driver_options
def list_command(driver: DriverSettings | None, show_all: bool, states: tuple[str, ...],
                 queue: str | None, name: str | None, user: str | None,
                 as_json: bool) -> None:
    """Your tfyarn jobs (running ones; --all or --state for others)."""
    user = user or default_user(driver)
    wanted = list_states(states, show_all)
    with report_source(driver) as client:
        reports = [r for r in client.get_applications(states=wanted)
                   if is_tfyarn_job(r) and listed(r, user, queue, name)]
    reports.sort(key=lambda r: r.id)
    if as_json:
        click.echo(json.dumps([_report_dict(r) for r in reports], indent=2))
        return
    if not reports:
        which = " or ".join(wanted) if states else ("" if show_all else "running")
        whose = "anyone" if user.upper() == "ALL" else user
        click.echo(" ".join(["No", *([which] if which else []), "tfyarn jobs of", whose]
                            + ([f"in queue {queue}"] if queue else [])
                            + ([f"named {name}"] if name else [])) + ".", err=True)
        return
    rows = [["ID", "STATE", "FINAL", "STARTED", "NAME"]]
    for r in reports:
        started = datetime.fromtimestamp(r.start_time.timestamp()).strftime("%Y-%m-%d %H:%M") \
            if r.start_time else "-"
        rows.append([r.id, str(r.state), str(r.final_status), started, r.name])
    click.echo(jobview.aligned(rows))


def list_states(states: tuple[str, ...], show_all: bool) -> list[str]:
    """YARN's states to ask for: those given (ALL: every one), else the running ones or,
    with --all, every one."""
    given = [state.upper() for state in states]
    if "ALL" in given or (show_all and not given):
        return list(ALL_STATES)
    return [state for state in ALL_STATES if state in given] if given else list(ACTIVE_STATES)


def listed(report, user: str, queue: str | None, name: str | None) -> bool:
    """Whether `list` shows the application: its user (ALL: anyone's), queue and name (a
    shell pattern) as asked."""
    return ((user.upper() == "ALL" or report.user == user)
            and (queue is None or report.queue == queue)
            and (name is None or fnmatch.fnmatchcase(report.name, name)))


def default_user(driver: DriverSettings | None) -> str:
    """Whose jobs `list` shows by default: the user YARN knows you as. On a Kerberos
    cluster, the short name (up to / and @) of --principal or of the ticket cache's default
    principal; elsewhere HADOOP_USER_NAME or your login name."""
    principal = driver.principal if driver else None
    if not principal and hadoopconf.client_configuration().get(
            "hadoop.security.authentication", "simple").lower() == "kerberos":
        principal = kerberos.default_principal()
    return kerberos.short_name(principal) if principal else cluster_user()


@click.command("logs")
@click.argument("app_id")
@click.option("--role", type=click.Choice([*LOG_ROLES, APPMASTER_ROLE]), default=None,
              help="Only this role's tasks (the evaluator's and the tensorboard component's "
                   "too), or the AppMaster's log (appmaster: why a job failed before its "
                   "tasks started) [default: every task].")
@click.option("--index", type=int, default=None, help="Task index within the role.")
@click.option("--all", "every", is_flag=True,
              help="Every log file of every container, the AppMaster's and YARN's own "
                   "(launch scripts, prelaunch.err) included; YARN's directory.info listings "
                   "of the containers' files only with --directory-info.")
@click.option("--directory-info", is_flag=True,
              help="With --all: YARN's directory.info listing of each container's files too.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new output until the job ends.")
@click.option("--json", "as_json", is_flag=True,
              help="Machine-readable output: a list of {role, index, container, node, stream, "
                   "text}, one per log file (live: each file's last 64 KB).")
@driver_options
def logs_command(driver: DriverSettings | None, app_id: str, role: str | None,
                 index: int | None, every: bool, directory_info: bool, follow: bool,
                 as_json: bool) -> None:
    """The tasks' output: live from the nodes while the job runs, from YARN after it ends
    (where the cluster aggregates logs)."""
    if as_json and follow:
        raise click.UsageError("--json and --follow exclude each other: --json prints the "
                               "logs as they are now, once.")
    whole = every or role == APPMASTER_ROLE
    if whole and (follow or index is not None or (every and role)):
        raise click.UsageError("--all and --role appmaster show whole log files, once: "
                               "without --follow, --index or another --role.")
    with report_source(driver) as client:
        report = application_report(client, app_id)
        if whole:
            _print_whole_logs(app_id, every, as_json, directory_info)
            return
        if str(report.state) in FINAL_STATES:
            _print_aggregated_logs(app_id, role, index, as_json,
                                   plain_diagnosis(report.diagnostics or ""))
            return
        if as_json:
            view = jobview.live_view(report.tracking_url)
            click.echo(json.dumps(_live_log_entries(view, role, index) if view else [],
                                  indent=2))
            return
        printed: dict[tuple[str, str], int] = {}
        while True:
            view = jobview.live_view(report.tracking_url)
            if view:
                _print_new_live_output(view, role, index, printed, prefix=follow)
            if not follow:
                return
            time.sleep(1.0)
            report = client.application_report(app_id)
            if str(report.state) in FINAL_STATES:
                click.echo(f"[tfyarn] {app_id} ended: {report.state} ({report.final_status})")
                return


def _log_tasks(view: JobView, role: str | None, index: int | None) -> list[TaskRow]:
    """The tasks whose logs are asked for, the tensorboard component's included."""
    board = [view.tensorboard] if view.tensorboard else []
    return [task for task in [*view.tasks, *board]
            if (role is None or task.role == role) and (index is None or task.index == index)]


def _live_log_entries(view: JobView, role: str | None, index: int | None) -> list[dict]:
    entries = []
    for task in _log_tasks(view, role, index):
        if not (task.node and task.yarn_container_id):
            continue
        for stream in STREAMS:
            try:
                chunk = jobview.node_log_tail(task.node, task.yarn_container_id,
                                              f"{task.role}-{task.index}.{stream}")
            except Exception:
                continue  # the container may just have ended
            entries.append({"role": str(task.role), "index": task.index,
                            "container": task.yarn_container_id, "node": task.node,
                            "stream": stream, "text": chunk.text})
    return entries


def _print_new_live_output(view: JobView, role: str | None, index: int | None,
                           printed: dict[tuple[str, str], int], prefix: bool) -> None:
    for task in _log_tasks(view, role, index):
        if not (task.node and task.yarn_container_id):
            continue
        for stream in STREAMS:
            name = f"{task.role}-{task.index}.{stream}"
            key = (task.yarn_container_id, name)
            try:
                chunk = jobview.node_log_tail(task.node, task.yarn_container_id, name)
            except Exception:
                continue  # the container may just have ended
            new = chunk.length - printed.get(key, 0)
            if new <= 0:
                continue
            printed[key] = chunk.length
            text = chunk.text[-new:] if new < len(chunk.text) else chunk.text
            if prefix:
                text = "".join(f"[{name}] {line}\n" for line in text.splitlines())
            else:
                click.echo(f"==> {name} ({task.yarn_container_id} on {task.node}) <==")
            click.echo(text, nl=not text.endswith("\n"))


def log_file_pattern(role: str | None, index: int | None) -> str:
    """`yarn logs -log_files_pattern`'s regex for the tasks' stdout and stderr files."""
    who = rf"{re.escape(role) if role else '(' + '|'.join(LOG_ROLES) + ')'}-"
    who += str(index) if index is not None else r"\d+"
    return rf"{who}\.({'|'.join(STREAMS)})"


TASK_LOG = re.compile(rf"({'|'.join(LOG_ROLES)})-(\d+)\.({'|'.join(STREAMS)})")


def log_entries(text: str, every: bool = False) -> list[dict]:
    """`yarn logs`' output as logs --json shows it: one entry per task log file (``every``:
    per file, the AppMaster's and YARN's included, with its name as "file")."""
    return [entry for log in joblogs.files(text) if (entry := log_entry(log, every))]


def log_entry(log: joblogs.LogFile, every: bool) -> dict | None:
    """A task's log file with its role, index and stream; any other file (``every``) by name."""
    if match := TASK_LOG.fullmatch(log.name):
        return {"role": match[1], "index": int(match[2]), "container": log.container,
                "node": log.node, "stream": match[3], "text": log.text}
    if every:
        return {"role": APPMASTER_ROLE if log.appmaster else None, "index": None,
                "container": log.container, "node": log.node, "file": log.name,
                "text": log.text}
    return None


def _print_whole_logs(app_id: str, every: bool, as_json: bool,
                      directory_info: bool = False) -> None:
    """--all (every file) or --role appmaster (the AppMaster's files)."""
    logs = joblogs.files(joblogs.fetch(app_id) or "") if every else joblogs.appmaster_files(app_id)
    if not logs:
        raise joblogs.not_aggregated(app_id)
    left_out = 0
    if not directory_info:
        logs, left_out = joblogs.without_listings(logs)
    if as_json:
        click.echo(json.dumps([log_entry(log, every=True) for log in logs], indent=2))
        return
    click.echo("\n".join(joblogs.show(log) for log in logs))
    if left_out:
        click.echo(f"[tfyarn] {left_out} {joblogs.DIRECTORY_LISTING} listing(s) of the "
                   "containers' files left out: --all --directory-info shows them")


def _print_aggregated_logs(app_id: str, role: str | None, index: int | None,
                           as_json: bool = False, diagnosis: str = "") -> None:
    text = joblogs.fetch(app_id, log_file_pattern(role, index))
    if text is None:
        present = (joblogs.fetch(app_id, log_file_pattern(None, None))
                   if role is not None or index is not None else None)
        if present:
            raise joblogs.no_such_role(app_id, role, index, joblogs.files(present))
        shown, error = joblogs.before_tasks(app_id, diagnosis)
        click.echo(shown, err=as_json)
        raise error
    click.echo(json.dumps(log_entries(text), indent=2) if as_json else text)


@click.command("report")
@click.argument("app_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              default=None, help="Where to write it [default: ./<app id>.html].")
@click.option("--json", "as_json", is_flag=True,
              help="Machine-readable output: {application_id, path, source}.")
@driver_options
def report_command(driver: DriverSettings | None, app_id: str, output: Path | None,
                   as_json: bool) -> None:
    """Save the job's report: its page, training curves and containers' timeline in one
    HTML file that opens anywhere, with no network (for a running or finished job)."""
    with report_source(driver) as client:
        report = application_report(client, app_id)
    html, source = jobreport.fetch(report)
    output = output or Path(f"{app_id}.html")
    output.write_bytes(html)
    if as_json:
        click.echo(json.dumps({"application_id": app_id, "path": str(output.resolve()),
                               "source": source}))
        return
    click.echo(f"Wrote {output} ({source}).\nOpen it in a browser: {output.resolve().as_uri()}")


@click.command("kill")
@click.argument("app_id")
@click.option("--json", "as_json", is_flag=True,
              help="Machine-readable output: {application_id, killed, state, final_status} "
                   "(killed: false when it had already ended).")
@driver_options
def kill_command(driver: DriverSettings | None, app_id: str, as_json: bool) -> None:
    """Kill the job: YARN ends every one of its containers; checkpoints stay."""
    with skein_client(driver) as client:
        report = application_report(client, app_id)
        if str(report.state) in FINAL_STATES:
            if as_json:
                click.echo(json.dumps({"application_id": app_id, "killed": False,
                                       "state": str(report.state),
                                       "final_status": str(report.final_status)}))
                return
            click.echo(f"{app_id} already ended: {report.state} ({report.final_status}).")
            return
        try:
            client.kill_application(app_id)
        except Exception as exc:  # e.g. refused by the application's modify ACL
            raise TfyarnError(f"YARN refused to kill {app_id}: {plain_diagnosis(str(exc))}",
                              "only the job's owner, its modify ACL and the queue's "
                              "administrators may kill it.") from exc
    if as_json:
        click.echo(json.dumps({"application_id": app_id, "killed": True, "state": "KILLED",
                               "final_status": "KILLED"}))
        return
    click.echo(f"Killed {app_id}.")
