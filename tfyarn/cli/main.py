"""The `tfyarn` command. Kept free of TensorFlow imports so `--help` is instant."""

from __future__ import annotations

import click

from tfyarn import __version__
from tfyarn.cli.cluster import cluster_group
from tfyarn.cli.config import config_command
from tfyarn.cli.jobs import submit_command
from tfyarn.cli.monitor import (
    kill_command,
    list_command,
    logs_command,
    report_command,
    status_command,
)
from tfyarn.errors import TfyarnError
from tfyarn.hadoop.driver import driver_settings
from tfyarn.watch.tensorboard_local import tensorboard_command


class TfyarnGroup(click.Group):
    """The one place where tfyarn's errors become click's `Error: ...` (exit 1): every
    command, and the group's own options, run inside this invoke."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except TfyarnError as exc:
            raise click.ClickException(exc.describe()) from exc


@click.group(cls=TfyarnGroup)
@click.version_option(__version__, prog_name="tfyarn")
@click.option("--principal", envvar="TFYARN_PRINCIPAL", default=None,
              help="Kerberos principal to log in as on a secure cluster (with --keytab) "
                   "[env TFYARN_PRINCIPAL; default: the ticket cache from kinit].")
@click.option("--keytab", envvar="TFYARN_KEYTAB", default=None,
              help="Keytab file for --principal [env TFYARN_KEYTAB].")
@click.option("-v", "--verbose", is_flag=True, envvar="TFYARN_VERBOSE",
              help="Show the log of skein's Java driver (Hadoop's INFO lines) too "
                   "[env TFYARN_VERBOSE].")
@click.pass_context
def main(ctx: click.Context, principal: str | None, keytab: str | None, verbose: bool) -> None:
    """Run distributed TensorFlow on Hadoop YARN.

    Describe the job in resources.json and appConfig.json (Apache Slider's format),
    then `tfyarn submit`. `tfyarn cluster up` starts a local YARN to try it on.
    """
    ctx.obj = driver_settings(principal, keytab, verbose)  # each command passes it on


main.add_command(cluster_group)
main.add_command(submit_command)
main.add_command(status_command)
main.add_command(kill_command)
main.add_command(list_command)
main.add_command(logs_command)
main.add_command(report_command)
main.add_command(config_command)
main.add_command(tensorboard_command)

if __name__ == "__main__":
    main()
