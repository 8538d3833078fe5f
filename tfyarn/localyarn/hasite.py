"""The configuration of an HA local cluster (`tfyarn cluster up --ha`), as production sets it.

Two ResourceManagers (rm1, rm2) elect the active one through ZooKeeper (the embedded elector,
automatic failover) and keep their state there (ZKRMStateStore), so the new active one
recovers every application and its running containers (work-preserving recovery). Two
NameNodes (nn1, nn2) form the nameservice that is fs.defaultFS; their shared edits live in a
quorum journal (QJM) and failover is manual (docs/operations/local-cluster.md says why).
Every daemon runs on 127.0.0.1, so each RM and NN is told its own id (a host of its own
would find it from its address).
"""

from __future__ import annotations

from tfyarn.localyarn.layout import HDFS_PORTS, NAMESERVICE, RM_PORTS, Layout

CLUSTER_ID = "tfyarn-local"
RM_IDS = ("rm1", "rm2")
NN_IDS = ("nn1", "nn2")
RM_STATE_STORE = "org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore"
NN_FAILOVER_PROVIDER = \
    "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"

# Ports beside the non-HA cluster's (RM 8030-8033 and 8088, HDFS 8020-8025, NodeManagers
# from 8140): rm1 and nn1 keep those, the rest fit 8034-8087 and 8089-8139.
ZOOKEEPER_PORT = 8034
RM2_PORTS = {
    "address": 8042,
    "scheduler.address": 8040,
    "resource-tracker.address": 8041,
    "admin.address": 8043,
    "webapp.address": 8089,
}
NN2_PORTS = {"namenode rpc": 8050, "namenode http": 8051}
JOURNALNODE_PORTS = {"rpc": 8060, "http": 8061}


def rm_ports(rm_id: str) -> dict[str, int]:
    return RM_PORTS if rm_id == RM_IDS[0] else RM2_PORTS


def nn_ports(nn_id: str) -> dict[str, int]:
    return HDFS_PORTS if nn_id == NN_IDS[0] else NN2_PORTS


def rm_web_url(layout: Layout, rm_id: str) -> str:
    return f"http://127.0.0.1:{layout.port(rm_ports(rm_id)['webapp.address'])}"


def nn_web_url(layout: Layout, nn_id: str) -> str:
    return f"http://127.0.0.1:{layout.port(nn_ports(nn_id)['namenode http'])}"


def nn_rpc_address(layout: Layout, nn_id: str) -> str:
    return f"127.0.0.1:{layout.port(nn_ports(nn_id)['namenode rpc'])}"


def zookeeper_address(layout: Layout) -> str:
    return f"127.0.0.1:{layout.port(ZOOKEEPER_PORT)}"


def journal_uri(layout: Layout) -> str:
    return f"qjournal://127.0.0.1:{layout.port(JOURNALNODE_PORTS['rpc'])}/{NAMESERVICE}"


def yarn_site(layout: Layout, props: dict[str, object]) -> dict[str, object]:
    """``props`` (the non-HA cluster's) with one RM's addresses replaced by the pair's."""
    if not layout.is_ha:
        return props
    props = {key: value for key, value in props.items()
             if key != "yarn.resourcemanager.hostname"
             and key.removeprefix("yarn.resourcemanager.") not in RM_PORTS}
    for rm_id in RM_IDS:
        props[f"yarn.resourcemanager.hostname.{rm_id}"] = "127.0.0.1"
        props.update({f"yarn.resourcemanager.{key}.{rm_id}": f"127.0.0.1:{layout.port(port)}"
                      for key, port in rm_ports(rm_id).items()})
    props.update({
        "yarn.resourcemanager.ha.enabled": "true",
        "yarn.resourcemanager.ha.rm-ids": ",".join(RM_IDS),
        "yarn.resourcemanager.cluster-id": CLUSTER_ID,
        # The elector runs inside each RM (no separate failover controller) and ZooKeeper
        # decides: the standby takes over within seconds of the active one's end.
        "yarn.resourcemanager.ha.automatic-failover.enabled": "true",
        "yarn.resourcemanager.ha.automatic-failover.embedded": "true",
        "hadoop.zk.address": zookeeper_address(layout),
        "yarn.resourcemanager.zk-address": zookeeper_address(layout),
        "hadoop.zk.timeout-ms": 10000,
        # The state store survives restarts: the new active RM recovers every application,
        # and the running containers stay (work-preserving): their AMs re-register.
        "yarn.resourcemanager.recovery.enabled": "true",
        "yarn.resourcemanager.work-preserving-recovery.enabled": "true",
        "yarn.resourcemanager.store.class": RM_STATE_STORE,
        # Containers the NMs report again in the first seconds after a failover are kept;
        # production waits 10 s for the NMs before scheduling, here 3 s.
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms": 3000,
        # A standby RM opens no RPC port: until the new active one has started its
        # services, every RM refuses. The non-HA cluster's clients give up after 10 s;
        # here NodeManagers and AppMasters must outlast a failover (production: 15 minutes).
        "yarn.resourcemanager.connect.max-wait.ms": 180000,
        "yarn.client.failover-max-attempts": 150,
        "yarn.client.failover-sleep-base-ms": 500,
        "yarn.client.failover-sleep-max-ms": 2000,
    })
    return props


def node_manager_site(layout: Layout, recovery_dir: object) -> dict[str, object]:
    """NodeManager recovery, as production pairs it with RM HA: a restarted NM keeps its
    running containers (supervised: its containers outlive a stop)."""
    if not layout.is_ha:
        return {}
    return {
        "yarn.nodemanager.recovery.enabled": "true",
        "yarn.nodemanager.recovery.supervised": "true",
        "yarn.nodemanager.recovery.dir": recovery_dir,
    }


def hdfs_site(layout: Layout, props: dict[str, object]) -> dict[str, object]:
    """``props`` (the non-HA cluster's) with one NameNode replaced by the nameservice."""
    if not layout.is_ha:
        return props
    props = {key: value for key, value in props.items()
             if key not in ("dfs.namenode.rpc-address", "dfs.namenode.http-address",
                            "dfs.namenode.name.dir")}
    props.update({
        "dfs.nameservices": NAMESERVICE,
        f"dfs.ha.namenodes.{NAMESERVICE}": ",".join(NN_IDS),
        **{f"dfs.namenode.rpc-address.{NAMESERVICE}.{nn_id}": nn_rpc_address(layout, nn_id)
           for nn_id in NN_IDS},
        **{f"dfs.namenode.http-address.{NAMESERVICE}.{nn_id}":
           f"127.0.0.1:{layout.port(nn_ports(nn_id)['namenode http'])}" for nn_id in NN_IDS},
        f"dfs.client.failover.proxy.provider.{NAMESERVICE}": NN_FAILOVER_PROVIDER,
        "dfs.namenode.shared.edits.dir": journal_uri(layout),
        "dfs.journalnode.edits.dir": layout.hdfs_dir / "journal",
        "dfs.journalnode.rpc-address": f"127.0.0.1:{layout.port(JOURNALNODE_PORTS['rpc'])}",
        "dfs.journalnode.http-address": f"127.0.0.1:{layout.port(JOURNALNODE_PORTS['http'])}",
        # Manual failover (`tfyarn cluster failover nn`): a graceful one needs no fencing;
        # HAAdmin insists on a method all the same.
        "dfs.ha.automatic-failover.enabled": "false",
        "dfs.ha.fencing.methods": "shell(/bin/true)",
        # The standby reads the journal every 2 s (not 60), so a failover has little to
        # catch up on; clients fail over after at most a second or two of retries.
        "dfs.ha.tail-edits.period": 2,
        "dfs.client.failover.sleep.base.millis": 200,
        "dfs.client.failover.sleep.max.millis": 2000,
    })
    return props


def own_id_site(layout: Layout, daemon: str) -> dict[str, object]:
    """What only ``daemon`` (rm1, nn2, ...) is told: its own id, and a NameNode its dirs."""
    if daemon in RM_IDS:
        return {"yarn.resourcemanager.ha.id": daemon}
    return {"dfs.ha.namenode.id": daemon, "dfs.nameservice.id": NAMESERVICE,
            "dfs.namenode.name.dir": f"file://{layout.hdfs_dir / daemon}"}


def zookeeper_conf(layout: Layout) -> str:
    """zoo.cfg of the one ZooKeeper server (production runs three on their own hosts)."""
    return "\n".join([
        "tickTime=500",
        "initLimit=10",
        "syncLimit=5",
        f"dataDir={layout.state_dir / 'zookeeper'}",
        f"clientPort={layout.port(ZOOKEEPER_PORT)}",
        "clientPortAddress=127.0.0.1",
        # Its admin web server would take port 8080, outside the cluster's window.
        "admin.enableServer=false",
        "maxSessionTimeout=20000",
        "",
    ])


def ports(layout: Layout) -> dict[str, int]:
    """The HA cluster's ports beyond the non-HA one's, by what listens there."""
    if not layout.is_ha:
        return {}
    return {
        "ZooKeeper": ZOOKEEPER_PORT,
        **{f"ResourceManager rm2 {key}": port for key, port in RM2_PORTS.items()},
        **{f"NameNode nn2 {key}": port for key, port in NN2_PORTS.items()},
        **{f"JournalNode {key}": port for key, port in JOURNALNODE_PORTS.items()},
    }
