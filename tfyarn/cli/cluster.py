"""`tfyarn cluster ...`: a real single-machine YARN for trying tfyarn and for its tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tfyarn.cli import exitcodes
from tfyarn.localyarn import cluster, hosts, releases
from tfyarn.localyarn.layout import (
    DEFAULT_NODES,
    GPUS_PER_GPU_NODE,
    MAX_GPUS_PER_GPU_NODE,
    MAX_NODES,
    NAMESERVICE,
    Layout,
    default_state_dir,
)

state_dir_option = click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the cluster keeps configuration, logs and pid files "
    "[default: $TFYARN_CLUSTER_DIR or ~/.local/state/tfyarn/cluster; for another Hadoop "
    f"release than {releases.DEFAULT} ($TFYARN_HADOOP_VERSION), cluster-hadoop-<release>].",
)


def _layout(state_dir: str | None, nodes: int | None = None,
            gpus: int | None = None, ha: bool | None = None) -> Layout:
    return Layout(default_state_dir() if state_dir is None else Path(state_dir).resolve(),
                  nodes=nodes, gpus=gpus, ha=ha)


@click.group("cluster")
def cluster_group() -> None:
    """A local Hadoop cluster: HDFS, a ResourceManager and NodeManagers that behave as
    separate hosts (each its own address 127.0.0.N and its own /tmp and HOME).

    The last NodeManager is in the exclusive `gpu` node-label partition. It runs YARN's GPU
    plugin, which discovers its GPUs (2 by default, --gpus) with a stand-in `nvidia-smi`
    replaying a recorded H100 node; its containers find the same `nvidia-smi` on their PATH.

    It is as strict as a production cluster: a container whose processes hold more memory
    than it asked for is killed (physical memory checked every 3 s; virtual memory not, as
    most clusters set it). The `default` and `urgent` queues are each guaranteed 45% of the
    default partition and may use all of it, and the preemption monitor takes a queue's
    share back from the other within seconds. `small` has no guarantee and a quarter at most.
    `fifo` and `fair` (5% each, half at most) order their applications fifo and fair, for
    jobs that wait their turn; application priorities go from 0 to 10.
    """


@cluster_group.command("up")
@state_dir_option
@click.option("--nodes", type=click.IntRange(2, MAX_NODES), default=None,
              help="NodeManagers (hosts), the last one in the gpu partition "
              f"[default: $TFYARN_CLUSTER_NODES, what the cluster had, or {DEFAULT_NODES}].")
@click.option("--gpus", type=click.IntRange(1, MAX_GPUS_PER_GPU_NODE), default=None,
              help="GPUs of the gpu node, as its stand-in nvidia-smi lists them and YARN's GPU "
              "plugin discovers them [default: $TFYARN_CLUSTER_GPUS, what the cluster had, or "
              f"{GPUS_PER_GPU_NODE}].")
@click.option("--secure", is_flag=True,
              help="Kerberos: a local KDC (Hadoop's MiniKdc), keytabs for every daemon, you and "
              "a second user (bob), short-lived delegation tokens. `tfyarn cluster env` then "
              "also exports KRB5_CONFIG and KRB5CCNAME (your ticket cache).")
@click.option("--ha/--no-ha", default=None,
              help="High availability as production runs it: two ResourceManagers (automatic "
              "failover through ZooKeeper, state kept there, work-preserving recovery) and two "
              f"NameNodes behind the nameservice hdfs://{NAMESERVICE} (a quorum journal, "
              "manual failover); `tfyarn cluster failover rm|nn` switches the active one "
              "[default: what the cluster had, or --no-ha].")
def up_command(state_dir: str | None, nodes: int | None, gpus: int | None,
               secure: bool, ha: bool | None) -> None:
    """Fetch the Hadoop jars (first run), then start the cluster and wait until it schedules."""
    layout = _layout(state_dir, nodes, gpus, ha)
    result = cluster.up(layout, echo=lambda line: click.echo(line, err=True), kerberos=secure)
    if result.already_running:
        click.echo(f"The local YARN cluster is already running: {result.webapp_url} (unchanged).")
        return
    click.echo(f"Local YARN cluster (Hadoop {layout.hadoop_version}) up in {result.seconds:.1f} s. "
               f"Web UI: {result.webapp_url}")
    click.echo("Strict as production: memory enforced (pmem), queues default and urgent "
               "(45% each, preempting), small (a quarter at most), fifo and fair (5% each, "
               "half at most; ordered fifo and fair), application priorities 0 to 10.")
    click.echo('Point `yarn` and tfyarn at it with: eval "$(tfyarn cluster env)"')


@cluster_group.command("down")
@state_dir_option
def down_command(state_dir: str | None) -> None:
    """Stop the daemons `up` started (by pid). Logs stay; safe to run twice."""
    layout = _layout(state_dir)
    stopped = cluster.down(layout)
    if stopped:
        click.echo(f"Stopped {', '.join(stopped)}. Logs kept in {layout.log_dir}.")
    else:
        click.echo("The local YARN cluster is not running; nothing to stop.")


@cluster_group.command("status")
@state_dir_option
@click.option("--json", "as_json", is_flag=True,
              help='Machine-readable output ({"running": false, ...} when down).')
def status_command(state_dir: str | None, as_json: bool) -> None:
    """Nodes, labels, resources and running applications. Exit code 3 when down."""
    layout = _layout(state_dir)
    if not cluster.is_running(layout):
        if as_json:
            click.echo(json.dumps({"running": False, "state_dir": str(layout.state_dir)}))
        else:
            click.echo(f"The local YARN cluster is not running (state dir {layout.state_dir}). "
                       "Start it with `tfyarn cluster up`.")
        sys.exit(exitcodes.CLUSTER_DOWN)
    if as_json:
        click.echo(json.dumps(cluster.status_document(layout, hosts.lost_hosts(layout)),
                              indent=2))
        return
    for line in cluster.status_lines(layout, hosts.lost_hosts(layout)):
        click.echo(line)


@cluster_group.command("env")
@state_dir_option
def env_command(state_dir: str | None) -> None:
    """Shell lines that point `yarn`, skein and tfyarn at this cluster.

    Use as: eval "$(tfyarn cluster env)"
    """
    lines = cluster.env_lines(_layout(state_dir))
    click.echo("\n".join(lines))


@cluster_group.command("lose-host")
@state_dir_option
@click.argument("node")
@click.option("--freeze", is_flag=True,
              help="Stop its processes (SIGSTOP) instead of killing them: a host cut off from "
                   "the network, which regain-host brings back with its old tasks.")
def lose_host_command(state_dir: str | None, node: str, freeze: bool) -> None:
    """Lose a host: kill its NodeManager and every process of its containers at once (or
    freeze them), as a power loss (or a network cut) does. NODE: nm1, 127.0.0.2, ..."""
    layout = _layout(state_dir)
    pids = hosts.lose(layout, node, freeze=freeze)
    click.echo(f"Lost {node}: {'froze' if freeze else 'killed'} {len(pids)} process(es). "
               f"YARN will notice only after its NodeManager expiry; tfyarn jobs after their "
               f"task heartbeat timeout. Bring it back: tfyarn cluster regain-host {node}")


@cluster_group.command("regain-host")
@state_dir_option
@click.argument("node")
def regain_host_command(state_dir: str | None, node: str) -> None:
    """Bring a lost host back: thaw it, or start its NodeManager again."""
    how = hosts.regain(_layout(state_dir), node)
    click.echo(f"{node} is back: {how}.")


@cluster_group.command("failover")
@state_dir_option
@click.argument("which", type=click.Choice(["rm", "nn"]))
def failover_command(state_dir: str | None, which: str) -> None:
    """Make the standby ResourceManager (rm) or NameNode (nn) of an HA cluster (`up --ha`)
    the active one. rm: the active RM stops, ZooKeeper elects the standby, and the old one
    restarts as the standby (a rolling restart). nn: `hdfs haadmin -failover`, graceful."""
    layout = _layout(state_dir)
    if not cluster.is_running(layout):
        click.echo(f"The local YARN cluster is not running (state dir {layout.state_dir}).",
                   err=True)
        sys.exit(exitcodes.CLUSTER_DOWN)
    was, now = cluster.failover(layout, which)
    click.echo(f"{'ResourceManager' if which == 'rm' else 'NameNode'} {now} is active now "
               f"(was {was}).")
