"""The `tfyarn` command. Kept free of TensorFlow imports so `--help` is instant."""

from __future__ import annotations

import importlib
import json

import click

from tfyarn.cli import exitcodes
from tfyarn.cli.options import CONTEXT_SETTINGS, GlobalOptions, global_options
from tfyarn.errors import TfyarnError

ARGS = "tfyarn.args"  # the command line, as the group got it

# Each command's module is imported when the command runs (or help lists it): a command
# started by a script's loop (`tfyarn status` every few seconds) pays for its own imports
# only, not for every other command's (about 0.4 s of CPU each time).
COMMANDS = {
    "cluster": ("tfyarn.cli.cluster", "cluster_group"),
    "submit": ("tfyarn.cli.jobs", "submit_command"),
    "wait": ("tfyarn.cli.jobs", "wait_command"),
    "status": ("tfyarn.cli.monitor", "status_command"),
    "kill": ("tfyarn.cli.monitor", "kill_command"),
    "flex": ("tfyarn.cli.flex", "flex_command"),
    "list": ("tfyarn.cli.monitor", "list_command"),
    "logs": ("tfyarn.cli.monitor", "logs_command"),
    "report": ("tfyarn.cli.monitor", "report_command"),
    "config": ("tfyarn.cli.config", "config_command"),
    "tensorboard": ("tfyarn.cli.tensorboard", "tensorboard_command"),
    "env": ("tfyarn.cli.envs", "env_group"),
}


class TfyarnGroup(click.Group):
    """The one place where tfyarn's errors become click's `Error: ...` (exit 1): every
    command, and the group's own options, run inside this invoke. Its commands are
    COMMANDS', imported when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name]
        return getattr(importlib.import_module(module), attribute)

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


if __name__ == "__main__":
    main()
