"""The `tfyarn` command. Kept free of TensorFlow imports so `--help` is instant."""

from __future__ import annotations

import click

from tfyarn import __version__
from tfyarn.cli_cluster import cluster_group
from tfyarn.cli_jobs import submit_command
from tfyarn.cli_monitor import kill_command, list_command, logs_command, status_command


@click.group()
@click.version_option(__version__, prog_name="tfyarn")
def main() -> None:
    """Run distributed TensorFlow on Hadoop YARN.

    Describe the job in resources.json and appConfig.json (Apache Slider's format),
    then `tfyarn submit`. `tfyarn cluster up` starts a local YARN to try it on.
    """


main.add_command(cluster_group)
main.add_command(submit_command)
main.add_command(status_command)
main.add_command(kill_command)
main.add_command(list_command)
main.add_command(logs_command)

if __name__ == "__main__":
    main()
