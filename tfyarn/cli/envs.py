"""`tfyarn env`: the Python environments' layers that tfyarn keeps on the cluster."""

from __future__ import annotations

import click

from appmaster.common.settings import LAYERS_DIR
from tfyarn.cli import exitcodes


@click.group("env")
def env_group() -> None:
    """The Python environment layers tfyarn keeps on the cluster for your jobs."""


@env_group.command("prune", epilog=exitcodes.epilog())
@click.option("--older-than", "days", type=click.FloatRange(min=0), default=30,
              show_default=True, metavar="DAYS",
              help="Prune the layers no job used in this many days.")
@click.option("--yes", "--apply", "apply", is_flag=True,
              help="Delete them; without it, only list them and the bytes they hold.")
@click.option("--shared-dir", default=None, metavar="URL",
              help="The directory of layers all users share (default: "
                   f"{LAYERS_DIR.key} in the defaults files); pruned only by "
                   "its owner, and only the owner's own subdirectory of it.")
def prune_command(days: float, apply: bool, shared_dir: str | None) -> None:
    """Delete your environment layers no job used in DAYS days (a dry run by default).

    Your layers in your HDFS home (.tfyarn/envs), and in the shared directory if you own it.
    A layer a running job may use is never deleted. Run it on a schedule with cron, e.g.
    `0 3 * * * tfyarn env prune --older-than 30 --yes`.
    """
    from tfyarn.jobconfig import read_defaults
    from tfyarn.jobconfig.defaults import effective
    from tfyarn.submission import envprune
    from tfyarn.submission.sharedlayers import DIR_KEY

    if shared_dir is None and (setting := effective(read_defaults()).get(DIR_KEY)):
        shared_dir = setting[0]
    envprune.prune(days, apply, shared_dir, echo=click.echo)
