"""Find JDK 17 and Maven, and fetch the pinned Hadoop jars from Maven Central once."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path

from tfyarn.errors import TfyarnError
from tfyarn.localyarn.layout import Layout, cache_root


class ClusterError(TfyarnError, RuntimeError):
    """A local-cluster failure with what went wrong and how to fix it."""


# Each artifact brings its runtime dependencies; the RM/NM poms declare hadoop-common
# `provided`, so it is listed itself. mapreduce-client-core: skein's driver imports TokenCache.
ARTIFACTS = (
    "hadoop-common",
    "hadoop-yarn-server-resourcemanager",
    "hadoop-yarn-server-nodemanager",
    "hadoop-yarn-client",
    "hadoop-mapreduce-client-core",
    # The RM's web app binds timeline-collector classes even with the timeline service off.
    "hadoop-yarn-server-timelineservice",
    # HDFS: the NameNode and DataNode (hadoop-hdfs marks the client `provided`).
    "hadoop-hdfs",
    "hadoop-hdfs-client",
)

POM_TEMPLATE = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tfyarn.localyarn</groupId>
  <artifactId>{pom_id}</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""


def find_java_home() -> Path:
    """JDK 17: Hadoop 3.5 needs >= 17, and on 23+ UserGroupInformation breaks (HADOOP-19212)."""
    explicit = os.environ.get("TFYARN_JAVA_HOME")
    if explicit:  # a setting is taken at its word, not searched around
        version = java_major_version(Path(explicit))
        if version == 17:
            return Path(explicit)
        found = f"Java {version}" if version else "no working bin/java"
        raise ClusterError(
            f"TFYARN_JAVA_HOME={explicit} holds {found}; Hadoop 3.5 needs JDK 17 (on 23+ its "
            "UserGroupInformation breaks). Fix: point TFYARN_JAVA_HOME at a JDK 17, or unset it "
            "to let tfyarn search /usr/lib/jvm and PATH."
        )
    candidates: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    candidates.extend(sorted(Path("/usr/lib/jvm").glob("*17*")))
    java_on_path = shutil.which("java")
    if java_on_path:
        candidates.append(Path(java_on_path).resolve().parent.parent)
    for home in candidates:
        if java_major_version(home) == 17:
            return home
    raise ClusterError(
        "No Java 17 found (looked at $TFYARN_JAVA_HOME, $JAVA_HOME, /usr/lib/jvm/*17*, java on "
        "PATH). Hadoop 3.5 needs JDK 17. Fix: install it (Debian: apt-get install "
        "openjdk-17-jdk-headless) or point TFYARN_JAVA_HOME at a JDK 17."
    )


def java_major_version(home: Path) -> int | None:
    java = home / "bin" / "java"
    if not java.is_file():
        return None
    try:
        out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)', out)
    return int(match.group(1)) if match else None


def ensure_hadoop_jars(layout: Layout, echo=print) -> Path:
    """Resolve the Hadoop jars into the cache once; later calls return at once."""
    return ensure_jars(layout.hadoop_home, ARTIFACTS, layout.hadoop_version,
                       f"Apache Hadoop {layout.hadoop_version}", echo)


def ensure_jars(home: Path, artifacts: tuple[str, ...], version: str, what: str, echo=print,
                pom_id: str = "hadoop-jars") -> Path:
    """Resolve org.apache.hadoop ``artifacts`` and their runtime dependencies into
    ``home``/lib once; later calls return at once."""
    # The marker holds the pom that was resolved: a changed artifact list resolves again.
    lib, marker = home / "lib", home / ".complete"
    pom_text = _pom(version, artifacts, pom_id)

    def resolved() -> bool:
        return marker.is_file() and marker.read_text() == pom_text

    if resolved():
        return lib
    home.mkdir(parents=True, exist_ok=True)
    cache_root().mkdir(parents=True, exist_ok=True)
    # One Maven at a time: two clusters started at once on a fresh machine (two lanes, two
    # terminals) would run two into one directory and one local repository, and one of them
    # fails. The second waits, then finds the first's marker.
    with open(cache_root() / "maven.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not resolved():
            _fetch(home, lib, pom_text, what, echo)
            marker.write_text(pom_text)
    return lib


def _fetch(home: Path, lib: Path, pom_text: str, what: str, echo=print) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError(
            f"Maven (mvn) is not on PATH; it fetches the {what} jars from Maven Central. "
            "Fix: install it (Debian: apt-get install maven)."
        )
    pom = home / "pom.xml"
    pom.write_text(pom_text)
    # Jars are only ever added (a cluster may be running from this directory): an earlier,
    # shorter or half-finished list is completed in place.
    echo(f"Fetching {what} jars with Maven (first run only)...")
    env = dict(os.environ, JAVA_HOME=str(find_java_home()))
    result = subprocess.run(
        [mvn, "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
         "-DincludeScope=runtime", f"-DoutputDirectory={lib}"],
        capture_output=True, text=True, env=env,
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise ClusterError(
            f"Maven could not fetch the {what.removeprefix('Apache ')} jars:\n{tail}\n"
            "Fix: check that Maven Central is reachable (proxy settings in ~/.m2/settings.xml) "
            "and that the version exists."
        )


def _pom(version: str, artifacts: tuple[str, ...], pom_id: str) -> str:
    """``artifacts``: names, each with ``:classifier`` where it is one (``:tests``)."""
    def dependency(artifact: str) -> str:
        name, _, classifier = artifact.partition(":")
        return ("    <dependency><groupId>org.apache.hadoop</groupId>"
                f"<artifactId>{name}</artifactId><version>{version}</version>"
                + (f"<classifier>{classifier}</classifier>" if classifier else "")
                + "</dependency>")

    dependencies = "\n".join(map(dependency, artifacts))
    return POM_TEMPLATE.format(version=version, dependencies=dependencies, pom_id=pom_id)
