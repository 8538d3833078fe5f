"""Another tenant's work on the local cluster: Hadoop's own MapReduce sleep job, a real YARN
application that is not tfyarn's, for the tests and benchmarks of jobs that wait their turn
beside other work. Its jars (the MapReduce AppMaster and the job client's tests jar, which
holds the sleep job) are fetched from Maven Central once, beside the cluster's."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tfyarn.localyarn import daemons
from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.provision import ensure_jars, find_java_home

# The same names from 3.3 to 3.5 (hadoop-yarn-applications-distributedshell, the other
# candidate, is not published for 3.5.0).
ARTIFACTS = ("hadoop-mapreduce-client-app", "hadoop-mapreduce-client-jobclient",
             "hadoop-mapreduce-client-jobclient:tests")
SLEEP_JOB = "org.apache.hadoop.mapreduce.SleepJob"

def ensure_jars_fetched(layout: Layout, echo=print) -> Path:
    return ensure_jars(layout.mapreduce_lib_dir.parent, ARTIFACTS, layout.hadoop_version,
                       f"Apache Hadoop {layout.hadoop_version} MapReduce", echo,
                       pom_id="mapreduce-jars")


def command(layout: Layout, queue: str, memory_mb: int, seconds: float) -> list[str]:
    """The sleep job's client: one map task sleeping ``seconds`` in ``queue``, run "uber",
    inside the job's AppMaster: one container of ``memory_mb``. Its tasks in containers of
    their own would need the NodeManagers' MapReduce shuffle service, which the local
    cluster does not run."""
    classpath = f"{layout.conf_dir}:{layout.lib_dir}/*:{layout.mapreduce_lib_dir}/*"
    task_opts = " ".join([*daemons.JDK17_OPTIONS, "-Xmx200m"])
    settings = {
        "mapreduce.framework.name": "yarn",
        "mapreduce.job.queuename": queue,
        "mapreduce.job.ubertask.enable": "true",
        "yarn.app.mapreduce.am.resource.mb": memory_mb,
        "mapreduce.map.memory.mb": memory_mb,  # an uber task fits in its AppMaster
        "yarn.app.mapreduce.am.command-opts": task_opts,
        "mapreduce.map.java.opts": task_opts,
        # its classpath: the cluster's jars and MapReduce's, which every node of the local
        # cluster sees at the same path
        "mapreduce.application.classpath": f"{layout.conf_dir},{layout.lib_dir}/*,"
                                           f"{layout.mapreduce_lib_dir}/*",
        "mapreduce.am.max-attempts": 1,
    }
    java = find_java_home() / "bin" / "java"
    return [str(java), *daemons.JDK17_OPTIONS, "-Xmx256m", "-cp", classpath, SLEEP_JOB,
            *(f"-D{key}={value}" for key, value in settings.items()),
            "-m", "1", "-r", "0", "-mt", str(int(seconds * 1000))]


def start(layout: Layout, queue: str, memory_mb: int, seconds: float,
          log: Path) -> subprocess.Popen:
    """The sleep job submitted and followed by its client, in the background (its output in
    ``log``); the client ends with the job."""
    ensure_jars_fetched(layout)
    with log.open("w") as out:
        return subprocess.Popen(command(layout, queue, memory_mb, seconds), stdout=out,
                                stderr=subprocess.STDOUT)
