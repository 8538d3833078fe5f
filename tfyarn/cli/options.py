"""What several commands share: the global options (accepted before the command and after
it), `--` and the script's arguments, times as JSON shows them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import click

from tfyarn.hadoop.driver import driver_settings

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}  # subcommands inherit it

PRINCIPAL_HELP = ("Kerberos principal to log in as on a secure cluster (with --keytab) "
                  "[env TFYARN_PRINCIPAL; default: the ticket cache from kinit].")
KEYTAB_HELP = "Keytab file for --principal [env TFYARN_KEYTAB]."
VERBOSE_HELP = ("Show the log of skein's Java driver (Hadoop's INFO lines) too "
                "[env TFYARN_VERBOSE].")


@dataclass(frozen=True)
class GlobalOptions:
    """The group's --principal/--keytab/-v (before the command), for the command to merge
    with its own (after it) and turn into DriverSettings once."""

    principal: str | None = None
    keytab: str | None = None
    verbose: bool = False


def global_options(function: Callable) -> Callable:
    """The group's options: --principal, --keytab, -v/--verbose, each with its env var."""
    function = click.option("-v", "--verbose", is_flag=True, envvar="TFYARN_VERBOSE",
                            help=VERBOSE_HELP)(function)
    function = click.option("--keytab", envvar="TFYARN_KEYTAB", default=None,
                            help=KEYTAB_HELP)(function)
    return click.option("--principal", envvar="TFYARN_PRINCIPAL", default=None,
                        help=PRINCIPAL_HELP)(function)


def driver_options(command: Callable) -> Callable:
    """A command that talks to the cluster: it also takes --principal, --keytab and -v after
    its name (`tfyarn status -v APP`), which beat the same given before it, and gets the
    DriverSettings built from them, once, as its first argument. Use it as the innermost
    decorator (in place of click.pass_obj): its options are listed last."""

    @functools.wraps(command)
    def with_driver(*args: Any, principal: str | None, keytab: str | None, verbose: bool,
                    **kwargs: Any) -> Any:
        given = click.get_current_context().find_object(GlobalOptions) or GlobalOptions()
        principal, keytab = principal or given.principal, keytab or given.keytab
        if bool(principal) != bool(keytab):  # the command line itself is wrong: exit 2
            raise click.UsageError("--principal and --keytab go together: give both (or "
                                   "neither, to use the ticket cache from `kinit`).")
        driver = driver_settings(principal, keytab, verbose or given.verbose)
        return command(driver, *args, **kwargs)

    # No env vars here: those are the group's, and an option given before the command must
    # not lose to the environment.
    with_driver = click.option("-v", "--verbose", is_flag=True,
                               help="As `tfyarn -v`: show the log of skein's Java driver (Hadoop's "
                               "INFO lines) too.")(with_driver)
    with_driver = click.option("--keytab", default=None,
                               help="As `tfyarn --keytab`: keytab file for --principal."
                               )(with_driver)
    return click.option("--principal", default=None,
                        help="As `tfyarn --principal`: Kerberos principal to log in as."
                        )(with_driver)


class ScriptArgsCommand(click.Command):
    """A command whose arguments after `--` go to the training script: the callback gets
    them as ``script_args`` (a tuple). `--` with nothing after it is a usage error."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        script_args: tuple[str, ...] = ()
        if "--" in args:
            at = args.index("--")
            args, script_args = args[:at], tuple(args[at + 1:])
            if not script_args and not ctx.resilient_parsing:
                raise click.UsageError(
                    "nothing after --: give the script's arguments after it (`tfyarn submit "
                    "... -- --epochs 5`), or leave -- out.", ctx)
        rest = super().parse_args(ctx, args)
        ctx.params["script_args"] = script_args
        return rest

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [*super().collect_usage_pieces(ctx), "[-- SCRIPT_ARGS...]"]


def iso_time(value: datetime | float | int | None) -> str | None:
    """A time as ISO 8601 with its UTC offset (a naive datetime is this machine's local
    time, as skein's and the RM's reports give them); None for none (an unfinished job's
    finish time, YARN's 0)."""
    if value is None or value == 0:
        return None
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, timezone.utc).astimezone().isoformat()
    return value.astimezone().isoformat()
