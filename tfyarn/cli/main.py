"""The `tfyarn` command. Kept free of TensorFlow imports so `--help` is instant."""

from __future__ import annotations

import json

import click

from tfyarn.cli import exitcodes
from tfyarn.cli.cluster import cluster_group
from tfyarn.cli.config import config_command
from tfyarn.cli.envs import env_group
from tfyarn.cli.flex import flex_command
from tfyarn.cli.jobs import submit_command, wait_command
from tfyarn.cli.monitor import (
    kill_command,
    list_command,
    logs_command,
    report_command,
    status_command,
)
from tfyarn.cli.options import CONTEXT_SETTINGS, GlobalOptions, global_options
from tfyarn.cli.tensorboard import tensorboard_command
from tfyarn.errors import TfyarnError

ARGS = "tfyarn.args"  # the command line, as the group got it


class TfyarnGroup(click.Group):
    """The one place where tfyarn's errors become click's `Error: ...` (exit 1): every
    command, and the group's own options, run inside this invoke."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[ARGS] = list(args)  # click empties ctx.args before the command runs
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except TfyarnError as exc:
            if wants_json(ctx):  # a script reading stdout gets JSON, the error too
                click.echo(json.dumps({"error": str(exc.message), "fix": exc.hint,
                                       "context": exc.context,
                                       "exit_code": exitcodes.ERROR}))
                click.echo(f"Error: {exc.describe()}", err=True)
                ctx.exit(exitcodes.ERROR)
            raise click.ClickException(exc.describe()) from exc


def wants_json(ctx: click.Context) -> bool:
    """Whether the command was given --json (before any `--`: the script's arguments)."""
    args = ctx.meta.get(ARGS, [])
    return "--json" in (args[:args.index("--")] if "--" in args else args)


@click.group(cls=TfyarnGroup, context_settings=CONTEXT_SETTINGS, epilog=exitcodes.epilog())
@click.version_option(package_name="tfyarn", prog_name="tfyarn")  # tfyarn.__version__
@global_options
@click.pass_context
def main(ctx: click.Context, principal: str | None, keytab: str | None, verbose: bool) -> None:
    """Run distributed TensorFlow on Hadoop YARN.

    Describe the job in resources.json and appConfig.json (Apache Slider's format),
    then `tfyarn submit`. `tfyarn cluster up` starts a local YARN to try it on.
    --principal, --keytab and -v may also follow the command (`tfyarn status -v APP`).
    Shell completion (bash): eval "$(_TFYARN_COMPLETE=bash_source tfyarn)".
    """
    # Each command that talks to the cluster merges them with its own (after its name) and
    # builds the driver's settings once (tfyarn/cli/options.py, driver_options).
    ctx.obj = GlobalOptions(principal, keytab, verbose)


main.add_command(cluster_group)
main.add_command(submit_command)
main.add_command(wait_command)
main.add_command(status_command)
main.add_command(kill_command)
main.add_command(flex_command)
main.add_command(list_command)
main.add_command(logs_command)
main.add_command(report_command)
main.add_command(config_command)
main.add_command(tensorboard_command)
main.add_command(env_group)

if __name__ == "__main__":
    main()
