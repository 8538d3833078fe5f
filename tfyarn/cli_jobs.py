"""`tfyarn submit`, `status` and `kill`."""

from __future__ import annotations

import sys

import click

from tfyarn.jobconfig import JobConfigError, load_job
from tfyarn.plan import build_plan, format_plan, format_plan_json, plan_document
from tfyarn.submit import SubmitError, follow, skein_client, submit


@click.command("submit")
@click.option("--resources", "resources_path", default="resources.json", show_default=True,
              type=click.Path(dir_okay=False), help="Components and their resources.")
@click.option("--app-config", "app_config_path", default="appConfig.json", show_default=True,
              type=click.Path(dir_okay=False), help="The training script and its settings.")
@click.option("--name", default=None, help="Application name [default: from appConfig].")
@click.option("--queue", default=None, help="YARN queue [default: from appConfig, or default].")
@click.option("--wait/--detach", default=False,
              help="Follow the job to its end (exit 0 only if it SUCCEEDED), or return at once.")
@click.option("--dry-run", is_flag=True, help="Print the plan and submit nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def submit_command(resources_path: str, app_config_path: str, name: str | None,
                   queue: str | None, wait: bool, dry_run: bool, as_json: bool) -> None:
    """Submit a distributed TensorFlow job to YARN."""
    try:
        job = load_job(resources_path, app_config_path)
    except JobConfigError as exc:
        raise click.ClickException(f"nothing was submitted:\n{exc}") from exc
    plan = build_plan(job, name)
    queue = queue or job.app.queue
    if dry_run:
        document = plan_document(job, plan, queue)
        click.echo(format_plan_json(document) if as_json else format_plan(document))
        return
    try:
        with skein_client() as client:
            app_id = submit(client, job, plan, queue)
            report = client.application_report(app_id)
            if as_json and not wait:
                click.echo(f'{{"application_id": "{app_id}", '
                           f'"tracking_url": "{report.tracking_url}"}}')
                return
            click.echo(f"Submitted {app_id} ({plan.name}) to queue {queue}.")
            click.echo(f"Tracking URL: {report.tracking_url}")
            click.echo(f"Logs: yarn logs -applicationId {app_id}")
            if not wait:
                return
            try:
                final = follow(client, app_id, echo=click.echo)
            except KeyboardInterrupt:
                click.echo(f"\nStopped following; {app_id} keeps running. "
                           f"Kill it with: tfyarn kill {app_id}", err=True)
                sys.exit(130)
    except SubmitError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{app_id} {final.final_status}: {final.diagnostics.strip()}")
    sys.exit(0 if str(final.final_status) == "SUCCEEDED" else 1)


@click.command("status")
@click.argument("app_id")
def status_command(app_id: str) -> None:
    """The application's state, final status and diagnostics."""
    try:
        with skein_client() as client:
            report = client.application_report(app_id)
    except SubmitError as exc:
        raise click.ClickException(str(exc)) from exc
    except Exception as exc:
        raise click.ClickException(f"no application {app_id}: {exc}") from exc
    click.echo(f"{report.id} {report.name}: {report.state} ({report.final_status})")
    click.echo(f"Tracking URL: {report.tracking_url}")
    if report.diagnostics:
        click.echo(report.diagnostics.strip())


@click.command("kill")
@click.argument("app_id")
def kill_command(app_id: str) -> None:
    """Kill the application: YARN ends every one of its containers."""
    try:
        with skein_client() as client:
            client.kill_application(app_id)
    except SubmitError as exc:
        raise click.ClickException(str(exc)) from exc
    except Exception as exc:
        raise click.ClickException(f"could not kill {app_id}: {exc}") from exc
    click.echo(f"Killed {app_id}.")
