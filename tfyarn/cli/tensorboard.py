"""`tfyarn tensorboard APP`: its options; the work is tfyarn/watch/tensorboard_local.py's."""

from __future__ import annotations

from pathlib import Path

import click

from tfyarn.cli.options import driver_options
from tfyarn.hadoop.driver import DriverSettings
from tfyarn.watch.tensorboard_local import DEFAULT_PORT, SYNC_INTERVAL_S, show_tensorboard


@click.command("tensorboard")
@click.argument("app_id")
@click.option("--once", is_flag=True,
              help="Copy the event files, print the cache's path and exit (no TensorBoard).")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the event files go, and TensorBoard's --logdir "
                   "[default: ~/.cache/tfyarn/tensorboard/<app id>].")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help=f"TensorBoard's port [default: {DEFAULT_PORT}, or a free one if taken].")
@click.option("--host", default="localhost", show_default=True,
              help="The address TensorBoard listens on (0.0.0.0: every IPv4 interface).")
@click.option("--bind-all", is_flag=True,
              help="Serve on every interface, IPv4 and IPv6 (others on the network can see "
                   "the job's curves).")
@click.option("--interval", type=click.FloatRange(min=0.5), default=SYNC_INTERVAL_S,
              show_default=True, help="Seconds between copies while the job runs.")
@click.option("--json", "as_json", is_flag=True,
              help="Machine-readable output on stdout: {application_id, cache, url} once "
                   "TensorBoard answers (--once: url null, and the event files' count).")
@driver_options
def tensorboard_command(driver: DriverSettings | None, app_id: str, once: bool,
                        cache: Path | None, port: int | None, host: str, bind_all: bool,
                        interval: float, as_json: bool) -> None:
    """TensorBoard on this machine for a job, running or finished: its event files are
    copied from HDFS into a local cache (only new bytes, every few seconds while it runs).
    """
    show_tensorboard(driver, app_id, once, cache, port, host, bind_all, interval, as_json)
