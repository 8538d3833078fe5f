"""`tfyarn flex`: a running job's role to a new count (the logic: tfyarn/watch/flexing.py)."""

from __future__ import annotations

import json

import click

from tfyarn.cli import exitcodes
from tfyarn.cli.options import driver_options
from tfyarn.errors import TfyarnError
from tfyarn.hadoop.driver import DriverSettings, skein_client
from tfyarn.jobconfig import describe_problems
from tfyarn.watch import flexing, jobview
from tfyarn.watch.applications import application_report


@click.command("flex", epilog=exitcodes.epilog())
@click.argument("app_id")
@click.argument("count", metavar="ROLE=N")
@click.option("--json", "as_json", is_flag=True,
              help="Machine-readable output: {application_id, role, count, accepted, text}.")
@driver_options
def flex_command(driver: DriverSettings | None, app_id: str, count: str,
                 as_json: bool) -> None:
    """Change a running job's number of workers (or a TensorFlow job's ps: Slider's flex),
    e.g. worker=3. A job's cluster is fixed once it started (TensorFlow's cluster, a PyTorch
    or JAX process group), so the job restarts as a new generation with the new count,
    training on from its newest checkpoint or snapshot. Refused where the role cannot change
    (the chief worker, the evaluator, TensorBoard, a role the job has none of, fewer than 1)
    or where the cluster can never hold the job with the new count."""
    asked = flexing.parse(count)
    with skein_client(driver) as client:
        report = application_report(client, app_id)
        if str(report.state) != "RUNNING":
            raise TfyarnError(f"{app_id} is {report.state}: only a running job can flex",
                              "wait until `tfyarn status` shows it running.")
        view = jobview.live_view(report.tracking_url)
        if view is None:
            raise TfyarnError(f"{app_id}'s AppMaster is not answering yet",
                              "try again in a few seconds.")
        app = client.connect(app_id)
        checked = flexing.check_capacity(app, view, asked, report.queue)
        if checked.problems:
            raise TfyarnError(f"the cluster cannot hold {app_id} with {asked.option}:\n"
                              f"{describe_problems(checked.problems)}")
        accepted, text = flexing.ask(app, asked)
    if as_json:
        click.echo(json.dumps({"application_id": app_id, "role": asked.role,
                               "count": asked.count, "accepted": accepted, "text": text}))
    if not accepted:
        raise TfyarnError(f"{app_id} cannot flex {asked.option}: {text}")
    if not as_json:
        click.echo(f"{app_id}: {text}.")
