"""The `tfyarn` command. Kept free of TensorFlow imports so `--help` is instant."""

from __future__ import annotations

import click

from tfyarn import __version__
from tfyarn.cli_cluster import cluster_group


@click.group()
@click.version_option(__version__, prog_name="tfyarn")
def main() -> None:
    """Run distributed TensorFlow on Hadoop YARN.

    Describe the job in resources.json and appConfig.json (Apache Slider's format),
    then `tfyarn submit`. `tfyarn cluster up` starts a local YARN to try it on.
    """


main.add_command(cluster_group)

if __name__ == "__main__":
    main()
