"""`tfyarn status`, `list`, `logs` and `kill`: watching and stopping jobs."""

from __future__ import annotations

import getpass
import json
import re
import time
from datetime import datetime
from pathlib import Path

import click

from appmaster.view import JobView
from appmaster.vocabulary import TF_ROLES, Role, TaskState
from tfyarn.errors import TfyarnError
from tfyarn.hadoop import rmrest
from tfyarn.hadoop.driver import FINAL_STATES, DriverSettings, plain_diagnosis, skein_client
from tfyarn.watch import jobreport, jobview

ALL_STATES = ["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED",
              "KILLED"]
APP_ID = re.compile(r"application_\d+_\d+")


def _report(client, app_id: str):
    """YARN's report of a tfyarn application, or a clear error for anything else."""
    if not APP_ID.fullmatch(app_id):
        raise TfyarnError(
            f"{app_id!r} is not a YARN application id (like application_1700000000000_0001); "
            "`tfyarn list` shows yours.")
    try:
        report = client.application_report(app_id)
    except Exception as exc:
        raise TfyarnError(f"YARN knows no application {app_id}: {exc}") from exc
    if "tfyarn" not in {tag.lower() for tag in report.tags}:
        raise TfyarnError(
            f"{app_id} ({report.name}) is not a tfyarn job; use `yarn application -status "
            f"{app_id}` and `yarn logs -applicationId {app_id}` for it.")
    return report


def _view(report) -> tuple[JobView | None, str]:
    """The task table, live while the job runs, else the one the AppMaster logged last."""
    if str(report.state) == "RUNNING":
        view = jobview.live_view(report.tracking_url)
        return view, "live from the AppMaster" if view else "AppMaster not answering yet"
    if str(report.state) in FINAL_STATES:
        return jobreport.final_view(report)
    return None, f"the application is {report.state}: no task has started yet"


def _report_dict(report) -> dict:
    return {
        "id": report.id, "name": report.name, "user": report.user, "queue": report.queue,
        "state": str(report.state), "final_status": str(report.final_status),
        "tracking_url": report.tracking_url, "diagnostics": report.diagnostics,
        "start_time": str(report.start_time), "finish_time": str(report.finish_time),
    }


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
              help="Only the tasks in this state.")
@click.pass_obj
def status_command(driver: DriverSettings | None, app_id: str, as_json: bool, show_all: bool,
                   role: str | None, state: str | None) -> None:
    """The application's state and a table of its tasks, with the cluster spec."""
    with _reports(driver) as client:
        report = _report(client, app_id)
    view, source = _view(report)
    if as_json:
        click.echo(json.dumps({"application": _report_dict(report),
                               "job": view.to_dict() if view else None}, indent=2))
        return
    click.echo(f"{report.id} {report.name} ({report.user}, queue {report.queue}): "
               f"{report.state}, final status {report.final_status}")
    click.echo(f"Tracking URL: {report.tracking_url}")
    if report.diagnostics:
        click.echo(f"Diagnostics: {report.diagnostics.strip()}")
    if why := jobview.launch_failure(report.id, report.diagnostics, wait_s=0):
        click.echo(why)
    if view is None:
        click.echo(f"Tasks: {source}.")
        return
    click.echo(f"\nTasks ({source}; job {view.state}, generation {view.generation}):")
    click.echo(jobview.format_status(view, role, state, show_all))
    if gpu_lines := jobview.gpu_lines(view):
        click.echo("\nGPUs (as each task saw them; its script gets CUDA_VISIBLE_DEVICES):")
        click.echo("\n".join(gpu_lines))
    if view.cluster_spec:
        click.echo(f"\nCluster spec: {json.dumps(view.cluster_spec)}")
    for line in [*jobview.progress_lines(view, time.time()),
                 *jobview.storage_lines(view, time.time()), *jobview.verdict_lines(view),
                 *jobview.liveness_lines(view)]:
        click.echo(line)
    if view.tensorboard_url:
        proxied = report.tracking_url.rstrip("/") + "/pages/tensorboard/"
        click.echo(f"TensorBoard: {view.tensorboard_url} (through YARN: {proxied})")
    for line in view.restarts:
        click.echo(f"Restart: {line}")


@click.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include finished jobs.")
@click.option("--user", default=None, help="Whose jobs [default: yours].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def list_command(driver: DriverSettings | None, show_all: bool, user: str | None,
                 as_json: bool) -> None:
    """Your tfyarn jobs (running ones; --all for finished ones too)."""
    user = user or getpass.getuser()
    states = ALL_STATES if show_all else ["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"]
    with _reports(driver) as client:
        reports = [r for r in client.get_applications(states=states)
                   if r.user == user and "tfyarn" in {t.lower() for t in r.tags}]
    reports.sort(key=lambda r: r.id)
    if as_json:
        click.echo(json.dumps([_report_dict(r) for r in reports], indent=2))
        return
    if not reports:
        click.echo(f"No {'' if show_all else 'running '}tfyarn jobs of {user}.")
        return
    for r in reports:
        started = datetime.fromtimestamp(r.start_time.timestamp()).strftime("%Y-%m-%d %H:%M") \
            if r.start_time else "-"
        click.echo(f"{r.id}  {str(r.state):<9} {str(r.final_status):<10} {started}  {r.name}")


@click.command("logs")
@click.argument("app_id")
@click.option("--role", type=click.Choice([role.value for role in TF_ROLES]), default=None,
              help="Only this role's tasks [default: every task].")
@click.option("--index", type=int, default=None, help="Task index within the role.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new output until the job ends.")
@click.pass_obj
def logs_command(driver: DriverSettings | None, app_id: str, role: str | None,
                 index: int | None, follow: bool) -> None:
    """The tasks' output: live from the nodes while the job runs, from YARN after it ends."""
    with _reports(driver) as client:
        report = _report(client, app_id)
        if str(report.state) in FINAL_STATES:
            _print_aggregated_logs(app_id, role, index)
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


def _print_new_live_output(view: JobView, role: str | None, index: int | None,
                           printed: dict[tuple[str, str], int], prefix: bool) -> None:
    for task in view.select(role, index):
        if not (task.node and task.yarn_container_id):
            continue
        for stream in ("stdout", "stderr"):
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


def _print_aggregated_logs(app_id: str, role: str | None, index: int | None) -> None:
    who = rf"{re.escape(role) if role else '(' + '|'.join(TF_ROLES) + ')'}-"
    who += str(index) if index is not None else r"\d+"
    text = jobview.yarn_logs(app_id, "-log_files_pattern", rf"{who}\.(stdout|stderr)")
    if not text.strip():
        raise TfyarnError(f"no task output for {app_id} yet (log aggregation may lag the end "
                          "by a few seconds)", "try again in a few seconds.")
    click.echo(text)


@click.command("report")
@click.argument("app_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              default=None, help="Where to write it [default: ./<app id>.html].")
@click.pass_obj
def report_command(driver: DriverSettings | None, app_id: str, output: Path | None) -> None:
    """Save the job's report: its page, training curves and containers' timeline in one
    HTML file that opens anywhere, with no network (for a running or finished job)."""
    with _reports(driver) as client:
        report = _report(client, app_id)
    html, source = jobreport.fetch(report)
    output = output or Path(f"{app_id}.html")
    output.write_bytes(html)
    click.echo(f"Wrote {output} ({source}).\nOpen it in a browser: {output.resolve().as_uri()}")


@click.command("kill")
@click.argument("app_id")
@click.pass_obj
def kill_command(driver: DriverSettings | None, app_id: str) -> None:
    """Kill the job: YARN ends every one of its containers; checkpoints stay."""
    with skein_client(driver) as client:
        report = _report(client, app_id)
        if str(report.state) in FINAL_STATES:
            click.echo(f"{app_id} already ended: {report.state} ({report.final_status}).")
            return
        try:
            client.kill_application(app_id)
        except Exception as exc:  # e.g. refused by the application's modify ACL
            raise TfyarnError(f"YARN refused to kill {app_id}: {plain_diagnosis(str(exc))}",
                              "only the job's owner, its modify ACL and the queue's "
                              "administrators may kill it.") from exc
    click.echo(f"Killed {app_id}.")


def _reports(driver: DriverSettings | None):
    """Where application reports come from: the RM's REST API when the configuration allows
    (no JVM to start), else skein's driver."""
    return rmrest.reports_reader() or skein_client(driver)

