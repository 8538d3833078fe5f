"""`tfyarn submit`: the options, the dry run and following the job, over
tfyarn/submission/api.py."""

from __future__ import annotations

import json
import shutil
import sys
import time

import click

from appmaster.common.settings import (
    AM_MEMORY,
    AM_VCORES,
    APPMASTER_COMPONENT,
    DATA,
    INSTANCES,
    LABEL,
    SCRIPT_ARGS,
)
from appmaster.page.view import queue_line
from appmaster.page.webpage import job_page_url
from tfyarn.cli import exitcodes
from tfyarn.cli.options import ScriptArgsCommand, driver_options
from tfyarn.hadoop.driver import (
    FINAL_STATES,
    DriverSettings,
    follow,
    plain_diagnosis,
    skein_client,
)
from tfyarn.submission.api import SubmitOptions, plan_job
from tfyarn.submission.plan import format_plan, format_plan_json
from tfyarn.watch import jobview, queuestanding
from tfyarn.watch.applications import application_report, report_source


@click.command("submit", cls=ScriptArgsCommand, epilog=exitcodes.epilog(), help=(
    "Submit a distributed TensorFlow job to YARN.\n\n"
    "Arguments after `--` go to the training script of every task, after\n"
    f"{SCRIPT_ARGS.key}: `tfyarn submit --wait -- --epochs 5`."))
@click.option("--resources", "resources_path", default="resources.json", show_default=True,
              type=click.Path(dir_okay=False), help="Components and their resources.")
@click.option("--app-config", "app_config_path", default="appConfig.json", show_default=True,
              type=click.Path(dir_okay=False), help="The training script and its settings.")
@click.option("--name", default=None, help="Application name [default: from appConfig].")
@click.option("--queue", default=None, help="YARN queue [default: from appConfig, or default].")
@click.option("--wait/--detach", default=False,
              help="Follow the job to its end (exit 0 only if it SUCCEEDED, 3 if it FAILED, "
                   "4 if it was KILLED), or return at once [default: --detach].")
@click.option("--kill-on-exit", is_flag=True,
              help="With --wait: kill the job if tfyarn is interrupted (Ctrl-C).")
@click.option("--dry-run", is_flag=True, help="Print the plan and submit nothing.")
@click.option("--skip-preflight", is_flag=True,
              help="Check the job files alone: ask the cluster nothing (no Hadoop "
                   "configuration needed) and leave out what pre-flight checks (the cluster's "
                   "room and queues, TensorFlow in the env shipped): for a dry run away from "
                   "any cluster.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--python-env", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A packed virtualenv or conda env (venv-pack/conda-pack .tar.gz, .tgz, "
                   ".zip) that every container runs; uploaded once per content. It must hold "
                   "skein, and TensorFlow for the tasks [default: from appConfig].")
@click.option("--docker-image", default=None,
              help="Run the tasks in this Docker image (YARN's Docker runtime) "
                   "[default: from appConfig].")
@click.option("--docker-mount", "docker_mounts", multiple=True, metavar="SRC:DEST[:ro|rw]",
              help="A host path to mount in the tasks' Docker containers (repeatable).")
@click.option("--data", "data", multiple=True, metavar="hdfs:///PATH[#NAME]",
              help="A file, directory or archive on HDFS that YARN copies into every task "
                   "(cached per node; archives unpacked) as <--data_dir>/NAME, also in "
                   f"TFYARN_DATA_DIR (repeatable; replaces {DATA.key}).")
@click.option("--tag", "tags", multiple=True, help="A YARN application tag (repeatable).")
@click.option("--am-memory", type=click.IntRange(128), default=None,
              help=f"AppMaster memory in MB [default: {APPMASTER_COMPONENT}'s {AM_MEMORY.key}, "
                   f"or {AM_MEMORY.default}].")
@click.option("--am-vcores", type=click.IntRange(1), default=None,
              help=f"AppMaster vcores [default: {APPMASTER_COMPONENT}'s {AM_VCORES.key}, "
                   f"or {AM_VCORES.default}].")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Set any job-file key, as `tfyarn config` names it, over every file "
                   f"(repeatable), e.g. --set components.worker.{INSTANCES.key}=8.")
@click.option("--am-label", default=None,
              help="Node label for the AppMaster. YARN also applies it to every component "
                   f"without its own {LABEL.key} (the plan shows it).")
@driver_options
def submit_command(driver: DriverSettings | None, resources_path: str, app_config_path: str,
                   name: str | None,
                   queue: str | None, wait: bool, kill_on_exit: bool, dry_run: bool,
                   skip_preflight: bool,
                   as_json: bool, python_env: str | None, docker_image: str | None,
                   docker_mounts: tuple[str, ...], data: tuple[str, ...],
                   tags: tuple[str, ...], sets: tuple[str, ...],
                   am_memory: int | None, am_vcores: int | None, am_label: str | None,
                   script_args: tuple[str, ...] = ()) -> None:
    """`tfyarn submit` (its help, naming a key, is the command's help= above)."""
    planned = plan_job(resources_path, app_config_path, SubmitOptions(
        name=name, queue=queue, tags=tags, am_memory=am_memory, am_vcores=am_vcores,
        am_label=am_label, python_env=python_env, docker_image=docker_image,
        docker_mounts=docker_mounts, data=data, sets=sets, script_args=script_args,
        principal=driver.principal if driver and driver.keytab else None,
        skip_preflight=skip_preflight))
    if dry_run:
        document = planned.document()
        click.echo(format_plan_json(document) if as_json
                   else "\n".join([format_plan({key: value for key, value in document.items()
                                                 if key != "preflight"}),  # its lines follow
                                    "", *planned.preflight.lines()]))
        planned.check_runnable()
        return
    environment = planned.prepare(lambda line: click.echo(line, err=True))
    with skein_client(driver) as client:
        app_id = planned.submit(client, environment, driver,
                                lambda line: click.echo(line, err=True))
        report = client.application_report(app_id)
        job_page = job_page_url(report.tracking_url)
        if as_json and not wait:
            click.echo(json.dumps({"application_id": app_id,
                                   "tracking_url": report.tracking_url,
                                   "job_page": job_page}))
            return
        click.echo(f"Submitted {app_id} ({planned.plan.name}) to queue "
                   f"{planned.plan.queue}.")
        click.echo(f"Tracking URL: {report.tracking_url}")
        click.echo(f"Job page: {job_page}")
        click.echo(f"Logs: yarn logs -applicationId {app_id}")
        if not wait:
            return
        final = follow_to_end(client, app_id, kill_on_exit)
    sys.exit(report_end(app_id, final))


@click.command("wait", epilog=exitcodes.epilog())
@click.argument("app_id")
@click.option("--kill-on-exit", is_flag=True,
              help="Kill the job if tfyarn is interrupted (Ctrl-C).")
@click.option("--json", "as_json", is_flag=True,
              help="No progress; at the end, {application_id, state, final_status, "
                   "diagnostics, exit_code}.")
@driver_options
def wait_command(driver: DriverSettings | None, app_id: str, kill_on_exit: bool,
                 as_json: bool) -> None:
    """Follow a submitted job to its end, as `submit --wait` does (the same output and exit
    codes): for a job submitted with --detach, or after Ctrl-C."""
    with report_source(driver) as client:
        report = application_report(client, app_id)
        if not as_json:
            click.echo(f"Following {app_id} ({report.name}) in queue {report.queue}.")
            if report.tracking_url:  # none until YARN has started the AppMaster
                click.echo(f"Tracking URL: {report.tracking_url}")
                if str(report.state) not in FINAL_STATES:
                    click.echo(f"Job page: {job_page_url(report.tracking_url)}")
        final = follow_to_end(client, app_id, kill_on_exit, driver, show=not as_json)
    if as_json:
        code = exitcodes.of_report(final)
        click.echo(json.dumps({"application_id": app_id, "state": str(final.state),
                               "final_status": str(final.final_status),
                               "diagnostics": plain_diagnosis(final.diagnostics or ""),
                               "exit_code": code}))
        sys.exit(code)
    sys.exit(report_end(app_id, final))


def follow_to_end(client, app_id: str, kill_on_exit: bool,
                  driver: DriverSettings | None = None, show: bool = True):
    """The application's final report, its progress shown meanwhile; Ctrl-C stops
    following (and kills the job with ``kill_on_exit``) and exits 130."""
    try:
        tty = sys.stdout.isatty()
        return follow(client, app_id, LiveProgress(app_id, tty) if show else lambda r: None)
    except KeyboardInterrupt:
        if kill_on_exit:
            if hasattr(client, "kill_application"):
                client.kill_application(app_id)
            else:  # the RM's REST reader: skein's driver kills
                with skein_client(driver) as killer:
                    killer.kill_application(app_id)
            click.echo(f"\nInterrupted: killed {app_id} (--kill-on-exit).", err=True)
        else:
            click.echo(f"\nStopped following; {app_id} keeps running. Follow it again with "
                       f"`tfyarn wait {app_id}`, `tfyarn status {app_id}` or `tfyarn logs -f "
                       f"{app_id}`, kill it with `tfyarn kill {app_id}`.", err=True)
        sys.exit(exitcodes.INTERRUPTED)


def report_end(app_id: str, final) -> int:
    """Say how the job ended; its exit code (tfyarn/cli/exitcodes.py)."""
    click.echo(f"{app_id} {final.final_status}: {plain_diagnosis(final.diagnostics)}")
    if why := jobview.launch_failure(app_id, final.diagnostics):
        click.echo(why)
    return exitcodes.of_report(final)


STANDING_EVERY_S = 10.0


class LiveProgress:
    """`submit --wait`'s display: one redrawn line on a terminal, else a line per change."""

    def __init__(self, app_id: str, tty: bool) -> None:
        self.app_id, self.tty, self.last = app_id, tty, ""
        self.standing: tuple[float, str | None] = (0.0, None)  # (when asked, the RM's)

    def queue_text(self, app_id: str, queue: dict | None) -> str:
        """What the job waits for: its AppMaster's container, or the rest of its own; and
        its queue as the RM sees it, asked every STANDING_EVERY_S (a scheduler's answer
        is large on a big cluster)."""
        waits = queue_line(queue) if queue else "waiting for its AppMaster's container"
        if queue and queue.get("cluster"):
            return waits  # the AppMaster asked the RM itself
        asked_at, standing = self.standing
        if time.monotonic() - asked_at >= STANDING_EVERY_S:
            standing = queuestanding.standing_line(app_id)
            self.standing = (time.monotonic(), standing)
        return waits + (f" | {standing}" if standing else "")

    def __call__(self, report) -> None:
        state = str(report.state)
        line = f"{self.app_id} {state}"
        view = jobview.live_view(report.tracking_url) if state == "RUNNING" else None
        if view:
            line = jobview.live_line(view, jobview.chief_progress(view))
        if (view and view.queue) or state == "ACCEPTED":
            line += " | " + self.queue_text(report.id, view.queue if view else None)
        if self.tty:
            click.echo("\r\033[K" + line[: shutil.get_terminal_size().columns - 1], nl=False)
            if state in FINAL_STATES:
                click.echo()
        elif line != self.last:
            click.echo(f"{time.strftime('%H:%M:%S')} {line}")
        self.last = line
