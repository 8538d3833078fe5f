"""The Hadoop configuration files of the local cluster: one client/RM dir, one per NodeManager."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from tfyarn.localyarn import hasite, localfs, releases, secure
from tfyarn.localyarn.gpunode import write_stand_in
from tfyarn.localyarn.layout import (
    GPU_LABEL,
    HDFS_PORTS,
    RM_PORTS,
    Layout,
    NodeManagerSpec,
)

PREEMPTION_POLICY = ("org.apache.hadoop.yarn.server.resourcemanager.monitor.capacity."
                     "ProportionalCapacityPreemptionPolicy")
MAX_APPLICATION_PRIORITY = 10
DEFAULT_SHARE, GANG_SHARE = 45, 5  # %: default and urgent's, fifo and fair's
APP_LOG_DIR = "/app-logs"  # aggregated container logs, on HDFS: `yarn logs` reads them there

DAEMON_LOG4J = """log4j.rootLogger=INFO,RFA
log4j.appender.RFA=org.apache.log4j.FileAppender
log4j.appender.RFA.File=${hadoop.log.file}
log4j.appender.RFA.layout=org.apache.log4j.PatternLayout
log4j.appender.RFA.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.containermanager.monitor=WARN
"""

# Command-line tools (yarn logs, yarn application, skein's driver) log to stderr, warnings only.
CLIENT_LOG4J = """log4j.rootLogger=WARN,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""


def xml_document(properties: dict[str, object]) -> str:
    rows = "\n".join(
        f"  <property><name>{escape(name)}</name><value>{escape(str(value))}</value></property>"
        for name, value in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}\n</configuration>\n'


def core_site(layout: Layout, tmp_dir: Path) -> dict[str, object]:
    return {
        # HDFS is the one storage every host shares: skein's uploads, packed envs, the
        # aggregated logs and every job's work dir live there.
        "fs.defaultFS": layout.default_fs,
        "hadoop.tmp.dir": tmp_dir,
        "hadoop.security.authentication": "simple",
        **secure.core_site(layout),  # Kerberos, on a `--secure` cluster
    }


def hdfs_site(layout: Layout) -> dict[str, object]:
    """One NameNode (two on an HA cluster, hasite.py) and one DataNode on 127.0.0.1, small
    and quick to start."""
    address = {name: f"127.0.0.1:{layout.port(port)}" for name, port in HDFS_PORTS.items()}
    return hasite.hdfs_site(layout, {
        "dfs.namenode.rpc-address": address["namenode rpc"],
        "dfs.namenode.http-address": address["namenode http"],
        "dfs.datanode.address": address["datanode data"],
        "dfs.datanode.http.address": address["datanode http"],
        "dfs.datanode.ipc.address": address["datanode ipc"],
        # Otherwise the DataNode's internal web server takes a random port.
        "dfs.datanode.http.internal-proxy.port": layout.port(HDFS_PORTS["datanode internal proxy"]),
        "dfs.namenode.name.dir": f"file://{layout.hdfs_dir / 'name'}",
        "dfs.datanode.data.dir": f"file://{layout.hdfs_dir / 'data'}",
        "dfs.replication": 1,
        # Out of safe mode as soon as the one DataNode reports, not 30 s later.
        "dfs.namenode.safemode.extension": 0,
        "dfs.namenode.safemode.min.datanodes": 1,
        "dfs.heartbeat.interval": 1,
        "dfs.namenode.handler.count": 10,
        "dfs.datanode.handler.count": 5,
        "dfs.permissions.enabled": "true",
        # A nearly full CI disk must not stop writes (YARN's disk checker is relaxed too).
        "dfs.namenode.resource.du.reserved": 0,
        "dfs.datanode.du.reserved": 0,
        **secure.hdfs_site(layout),
    })


def yarn_site(layout: Layout) -> dict[str, object]:
    """Settings every daemon and client shares."""
    props: dict[str, object] = {
        "yarn.resourcemanager.hostname": "127.0.0.1",
        **{
            f"yarn.resourcemanager.{key}": f"127.0.0.1:{layout.port(port)}"
            for key, port in RM_PORTS.items()
        },
        # YARN's default, 1 s: at 250 ms an idle cluster's ResourceManager and NodeManagers
        # took twice the CPU (6 CPU-s a minute, 3 at 1 s), and a job gained little from it (on
        # Hadoop 3.5 a thread of the scheduler's own places containers; the 3.3 and 3.4 lines
        # place them on node heartbeats, many at once: see the capacity scheduler's settings).
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": 1000,
        # Fail fast when the RM is down instead of retrying for 15 minutes.
        "yarn.resourcemanager.connect.max-wait.ms": 10000,
        "yarn.resourcemanager.connect.retry-interval.ms": 500,
        "yarn.resourcemanager.am.max-attempts": 4,
        "yarn.resourcemanager.recovery.enabled": "false",
        # Applications' priorities within a queue (0 to this, YARN's default 0 turns them
        # off): a job's site.global.priority; a queue's default stays 0.
        "yarn.cluster.max-application-priority": MAX_APPLICATION_PRIORITY,
        "yarn.scheduler.minimum-allocation-mb": 128,
        "yarn.scheduler.maximum-allocation-mb": 8192,
        "yarn.scheduler.minimum-allocation-vcores": 1,
        "yarn.scheduler.maximum-allocation-vcores": 8,
        "yarn.application.classpath": f"{layout.conf_dir},{layout.lib_dir}/*",
        # Memory is enforced as on a production cluster: a container whose process tree's
        # resident memory passes its yarn.memory is killed (KILLED_EXCEEDED_PMEM, -104).
        # The virtual-memory check is off, as production clusters commonly set it (Cloudera's
        # and EMR's defaults): TensorFlow and the JVM map gigabytes they never touch (a TF
        # task ~2.8 GB), so a vmem limit kills healthy tasks and protects nothing.
        "yarn.nodemanager.pmem-check-enabled": "true",
        # Without it the check above is silently skipped: "enforced" (the default) leaves
        # memory to cgroups' OOM killer, which only the LinuxContainerExecutor with memory
        # cgroups sets up. This cluster runs the DefaultContainerExecutor (no setuid
        # binary), so the NodeManager's monitor polls the process tree every 3 s instead.
        "yarn.nodemanager.resource.memory.enforced": "false",
        "yarn.nodemanager.vmem-check-enabled": "false",
        # The ResourceManager takes capacity back from a queue running past its guaranteed
        # share when another queue needs its own (see capacity_scheduler()): a job can be
        # preempted (PREEMPTED, -102), as on a shared cluster. Production runs the same
        # policy every 3 s and waits 15 s before killing; here 1 s and 10 s, so tests see it
        # quickly yet YARN's notice (in the AppMaster's allocate response) leaves the job
        # time to save a checkpoint, and a round may take back everything owed at once.
        "yarn.resourcemanager.scheduler.monitor.enable": "true",
        "yarn.resourcemanager.scheduler.monitor.policies": PREEMPTION_POLICY,
        "yarn.resourcemanager.monitor.capacity.preemption.monitoring_interval": 1000,
        "yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill": 10000,
        "yarn.resourcemanager.monitor.capacity.preemption.total_preemption_per_round": 1.0,
        "yarn.resourcemanager.monitor.capacity.preemption.natural_termination_factor": 1.0,
        "yarn.resourcemanager.monitor.capacity.preemption.max_ignored_over_capacity": 0,
        # YARN's placement constraints (SchedulingRequests: no two of a role's containers on
        # one node, ANTI_AFFINITY_REQUIRED) handled by the CapacityScheduler itself, as a
        # production cluster turns them on (the default, disabled, refuses them). The same key
        # and value in Hadoop 3.1 to 3.5.
        "yarn.resourcemanager.placement-constraints.handler": "scheduler",
        # A nearly full CI disk must not mark the nodes UNHEALTHY.
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": 99.9,
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": 0,
        # A disk that filled and was freed counts again within seconds, not 2 minutes.
        "yarn.nodemanager.disk-health-checker.interval-ms": 10000,
        "yarn.nodemanager.env-whitelist": (
            "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,"
            "CLASSPATH_PREPEND_DISTCACHE,HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ"
        ),
        # Finished containers' dirs stay 10 minutes, so tests (and people) can look at what
        # each task left on its own host's disk, as YARN's debug setting allows anywhere.
        "yarn.nodemanager.delete.debug-delay-sec": 600,
        # Containers start with a bare PATH; put the cluster's `hadoop`/`yarn` and JDK 17 on
        # it, as a real cluster's nodes have them.
        "yarn.nodemanager.admin-env": (
            f"MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,PATH={layout.bin_dir}:"
            "/usr/local/bin:/usr/bin:/bin"
        ),
        # `yarn logs -applicationId` reads containers' output after the app ends.
        "yarn.log-aggregation-enable": "true",
        "yarn.nodemanager.remote-app-log-dir": APP_LOG_DIR,
        "yarn.log-aggregation.retain-seconds": 7 * 24 * 3600,
        "yarn.node-labels.enabled": "true",
        "yarn.node-labels.fs-store.root-dir": f"file://{layout.label_store_dir}",
        # Each NodeManager declares its own partition (the gpu NM in its config).
        "yarn.node-labels.configuration-type": "distributed",
        "yarn.webapp.ui2.enable": "false",
        "yarn.timeline-service.enabled": "false",
        **secure.yarn_site(layout),
    }
    return hasite.yarn_site(layout, props)


def node_manager_site(layout: Layout, nm: NodeManagerSpec) -> dict[str, object]:
    node_dir = layout.node_dir(nm)
    props = yarn_site(layout)
    props.update({
        # Its own address is its host name: what YARN, the tasks and their peers call it.
        "yarn.nodemanager.hostname": nm.host,
        "yarn.nodemanager.address": f"{nm.host}:{layout.port(nm.rpc_port)}",
        "yarn.nodemanager.localizer.address": f"{nm.host}:{layout.port(nm.localizer_port)}",
        "yarn.nodemanager.webapp.address": f"{nm.host}:{layout.port(nm.webapp_port)}",
        "yarn.nodemanager.collector-service.address":
            f"{nm.host}:{layout.port(nm.collector_port)}",
        # Containers' HOME: the node's own (each host sees a private one, see hostview.py).
        "yarn.nodemanager.user-home-dir": str(Path.home()),
        "yarn.nodemanager.local-dirs": node_dir / "local",
        "yarn.nodemanager.log-dirs": node_dir / "containers",
        "yarn.nodemanager.resource.memory-mb": nm.memory_mb,
        "yarn.nodemanager.resource.cpu-vcores": nm.vcores,
        "yarn.nodemanager.recovery.enabled": "false",
        **hasite.node_manager_site(layout, node_dir / "recovery"),
    })
    if nm.partition:
        props["yarn.nodemanager.node-labels.provider"] = "config"
        props["yarn.nodemanager.node-labels.provider.configured-node-partition"] = nm.partition
    if nm.gpus:
        props.update(gpu_plugin_site(layout, nm))
    return props


def gpu_plugin_site(layout: Layout, nm: NodeManagerSpec) -> dict[str, object]:
    """YARN's GPU plugin, as a real GPU node runs it: the node's yarn.io/gpu comes from
    discovery (`nvidia-smi -q -x`, here the stand-in of gpunode.py), not from a number.
    With the DefaultContainerExecutor the plugin discovers and counts, but assigns and
    isolates nothing (docs/gpus.md); tfyarn's agent assigns (appmaster/common/gpus.py)."""
    stand_in = layout.node_dir(nm) / "bin" / "nvidia-smi"
    discovery = (stand_in.parent if releases.gpu_discovery_wants_directory(layout.hadoop_version)
                 else stand_in)
    return {
        "yarn.nodemanager.resource-plugins": "yarn.io/gpu",
        "yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables": discovery,
        "yarn.nodemanager.resource-plugins.gpu.allowed-gpu-devices": "auto",
        # The node's containers find the same nvidia-smi on their PATH, as on a real node.
        "yarn.nodemanager.admin-env": (
            f"MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,PATH={stand_in.parent}:{layout.bin_dir}:"
            "/usr/local/bin:/usr/bin:/bin"
        ),
    }


def resource_types(max_gpus: int) -> dict[str, object]:
    """Declare yarn.io/gpu; the cap (the gpu node's GPUs) makes YARN reject (not queue
    forever) oversized asks."""
    return {
        "yarn.resource-types": "yarn.io/gpu",
        "yarn.resource-types.yarn.io/gpu.maximum-allocation": max_gpus,
    }


def capacity_scheduler() -> dict[str, object]:
    return {
        "yarn.scheduler.capacity.root.queues": "default,urgent,small,fifo,fair",
        # default and urgent are each guaranteed 45% of the default partition (14.4 GB) and
        # may grow to all of it (a user to 90%: user-limit-factor 2), so a job in one can run
        # past its share and be preempted when the other asks for its own, as between teams
        # on a shared cluster.
        "yarn.scheduler.capacity.root.default.capacity": DEFAULT_SHARE,
        "yarn.scheduler.capacity.root.default.maximum-capacity": 100,
        "yarn.scheduler.capacity.root.default.user-limit-factor": 2,
        "yarn.scheduler.capacity.root.default.state": "RUNNING",
        "yarn.scheduler.capacity.root.urgent.capacity": DEFAULT_SHARE,
        "yarn.scheduler.capacity.root.urgent.maximum-capacity": 100,
        "yarn.scheduler.capacity.root.urgent.user-limit-factor": 2,
        "yarn.scheduler.capacity.root.urgent.accessible-node-labels": " ",
        "yarn.scheduler.capacity.root.urgent.state": "RUNNING",
        # A queue with no guaranteed share that may grow to a quarter of the default
        # partition, without the gpu label: for tests of jobs a queue can never hold.
        "yarn.scheduler.capacity.root.small.capacity": 0,
        "yarn.scheduler.capacity.root.small.maximum-capacity": 25,
        "yarn.scheduler.capacity.root.small.accessible-node-labels": " ",
        "yarn.scheduler.capacity.root.small.state": "RUNNING",
        # Two queues for gang jobs queued behind each other, each guaranteed 5% and able to
        # grow to half of the default partition: fifo offers free containers to its oldest
        # application first (YARN's default ordering), fair to the one that holds least,
        # where two jobs can each hold part of what they need.
        **gang_queue("fifo", "fifo"),
        **gang_queue("fair", "fair"),
        "yarn.scheduler.capacity.maximum-am-resource-percent": 0.5,
        # GPUs and vcores count, not only memory.
        "yarn.scheduler.capacity.resource-calculator":
            "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator",
        # Label requests are off-switch: by default one per node per heartbeat.
        "yarn.scheduler.capacity.per-node-heartbeat.multiple-assignments-enabled": "true",
        "yarn.scheduler.capacity.per-node-heartbeat.maximum-offswitch-assignments": 100,
        "yarn.scheduler.capacity.node-locality-delay": -1,
        # Hadoop 3.5 schedules asynchronously by default (YARN-7327), a pass over every node
        # each 5 ms: on a 2-core machine that thread alone took a third of a core, doing
        # nothing. Every 100 ms still places a container well before the AppMaster's next
        # heartbeat asks for it; the 3.3 and 3.4 lines schedule on node heartbeats instead.
        "yarn.scheduler.capacity.schedule-asynchronously.scheduling-interval-ms": 100,
        # The default queue may use the whole gpu partition.
        "yarn.scheduler.capacity.root.accessible-node-labels": GPU_LABEL,
        f"yarn.scheduler.capacity.root.accessible-node-labels.{GPU_LABEL}.capacity": 100,
        "yarn.scheduler.capacity.root.default.accessible-node-labels": GPU_LABEL,
        f"yarn.scheduler.capacity.root.default.accessible-node-labels.{GPU_LABEL}.capacity": 100,
        f"yarn.scheduler.capacity.root.default.accessible-node-labels.{GPU_LABEL}"
        ".maximum-capacity": 100,
    }


def gang_queue(name: str, ordering: str) -> dict[str, object]:
    """A leaf queue ordered by ``ordering`` (fifo or fair): 5% of the default partition
    guaranteed, half of it at most."""
    path = f"yarn.scheduler.capacity.root.{name}"
    return {
        f"{path}.capacity": GANG_SHARE,
        f"{path}.maximum-capacity": 50,
        # one user may use the queue's maximum (ten times its guarantee; the -1 of newer
        # releases, no limit, is not in every release)
        f"{path}.user-limit-factor": 10,
        # a user's AppMasters may take the whole guarantee (1.6 GB, three AppMasters), as
        # on a large queue, so that jobs wait with their AppMaster up: at YARN's 0.5 they
        # would start one at a time
        f"{path}.maximum-am-resource-percent": 1.0,
        f"{path}.ordering-policy": ordering,
        f"{path}.accessible-node-labels": " ",
        f"{path}.state": "RUNNING",
    }


def write_configuration(layout: Layout) -> None:
    """(Re)write every configuration directory; cheap, so done on every `up`."""
    max_gpus = max(nm.gpus for nm in layout.node_managers)
    _write_dir(
        layout.conf_dir,
        core=core_site(layout, layout.state_dir / "tmp" / "rm"),
        yarn=yarn_site(layout),
        max_gpus=max_gpus,
    )
    (layout.conf_dir / "hdfs-site.xml").write_text(xml_document(hdfs_site(layout)))
    for web_app in ("hdfs", "datanode"):  # the NameNode and DataNode refuse to start without
        web_xml = layout.webapps_dir / "webapps" / web_app / "WEB-INF" / "web.xml"
        web_xml.parent.mkdir(parents=True, exist_ok=True)
        web_xml.write_text("<web-app/>\n")
    (layout.conf_dir / "capacity-scheduler.xml").write_text(
        xml_document({**capacity_scheduler(), **secure.capacity_scheduler(layout)}))
    (layout.conf_dir / "log4j-daemon.properties").write_text(DAEMON_LOG4J)
    for nm in layout.node_managers:
        conf = layout.node_conf_dir(nm)
        _write_dir(
            conf,
            core={**core_site(layout, layout.node_dir(nm) / "tmp"), **localfs.core_site()},
            yarn=node_manager_site(layout, nm),
            max_gpus=max_gpus,
        )
        (conf / "hdfs-site.xml").write_text(xml_document(hdfs_site(layout)))
        # The gpu node's yarn.io/gpu comes from its plugin's discovery, never from a count
        # (an older state dir may hold one).
        (conf / "node-resources.xml").unlink(missing_ok=True)
        if nm.gpus:
            write_stand_in(layout.node_dir(nm), nm.host, nm.gpus)
        else:  # a state dir where this node was the gpu one (another --nodes)
            (layout.node_dir(nm) / "bin" / "nvidia-smi").unlink(missing_ok=True)


def _write_dir(conf: Path, core: dict, yarn: dict, max_gpus: int) -> None:
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "core-site.xml").write_text(xml_document(core))
    (conf / "yarn-site.xml").write_text(xml_document(yarn))
    (conf / "resource-types.xml").write_text(xml_document(resource_types(max_gpus)))
    (conf / "log4j.properties").write_text(CLIENT_LOG4J)
