"""The secure local cluster's KDC: Hadoop's MiniKdc (Apache Kerby), a plain JVM, no root.

Its jars come from Maven Central once, into their own directory beside the Hadoop jars (the
daemons' classpath stays as it was). MiniKdc starts with the principals named on its command
line, random keys, and writes them all to one keytab; `split_keytab` gives each holder only
its own entries.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tfyarn.kerberos import KEYTAB_VERSION, keytab_entries
from tfyarn.localyarn import daemons
from tfyarn.localyarn.daemons import Daemon
from tfyarn.localyarn.layout import Layout, cache_root
from tfyarn.localyarn.provision import ClusterError, find_java_home

KDC_NAME = "kdc"
KDC_CLASS = "org.apache.hadoop.minikdc.MiniKdc"
KDC_PORT = 8026  # between HDFS's ports and the ResourceManager's; shifted by the offset
KDC_HEAP_MB = 96
REALM = "EXAMPLE.COM"  # MiniKdc's default
START_TIMEOUT_S = 60.0

KDC_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tfyarn.localyarn</groupId>
  <artifactId>minikdc-jars</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-minikdc</artifactId>
      <version>{version}</version></dependency>
  </dependencies>
</project>
"""


def all_keys(layout: Layout) -> Path:
    return layout.kdc_dir / "all.keytab"


def ensure_kdc_jars(layout: Layout, echo=print) -> Path:
    """hadoop-minikdc and its Kerby dependencies, resolved once; returns their directory."""
    home = cache_root() / f"minikdc-{layout.hadoop_version}"
    lib, marker = home / "lib", home / ".complete"
    pom_text = KDC_POM.format(version=layout.hadoop_version)
    if marker.is_file() and marker.read_text() == pom_text:
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterError("Maven (mvn) is not on PATH; it fetches Hadoop's MiniKdc for "
                           "--secure. Fix: install it (Debian: apt-get install maven).")
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(pom_text)
    echo(f"Fetching Hadoop's MiniKdc {layout.hadoop_version} with Maven (first run only)...")
    result = subprocess.run(
        [mvn, "-B", "-q", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
         "-DincludeScope=runtime", f"-DoutputDirectory={lib}"],
        capture_output=True, text=True, env=dict(os.environ, JAVA_HOME=str(find_java_home())))
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise ClusterError(f"Maven could not fetch hadoop-minikdc {layout.hadoop_version}:\n"
                           f"{tail}\nFix: check that Maven Central is reachable.")
    marker.write_text(pom_text)
    return lib


def kdc_daemon(layout: Layout, principals: list[str], lib: Path) -> Daemon:
    """MiniKdc's own main: <work dir> <properties> <keytab> <principal>..."""
    directory = layout.kdc_dir
    return Daemon(KDC_NAME, KDC_CLASS, directory, KDC_HEAP_MB, classpath=f"{lib}/*",
                  args=(str(directory), str(directory / "kdc.properties"),
                        str(all_keys(layout)), *principals))


def start(layout: Layout, java_home: Path, principals: list[str], echo=print) -> None:
    """A fresh KDC (new keys every start) holding ``principals``; waits until it answers."""
    lib = ensure_kdc_jars(layout, echo)
    directory = layout.kdc_dir
    shutil.rmtree(directory, ignore_errors=True)  # old keys and tickets mean nothing now
    directory.mkdir(parents=True)
    port = layout.port(KDC_PORT)
    # Tickets live long enough for any test; tokens, not tickets, are what jobs live on.
    (directory / "kdc.properties").write_text(
        f"kdc.port={port}\nkdc.bind.address=127.0.0.1\nmax.ticket.lifetime=86400000\n"
        "max.renewable.lifetime=604800000\ntransport=TCP\n")
    daemon = kdc_daemon(layout, principals, lib)
    daemons.start(layout, java_home, daemon)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (layout.krb5_conf.is_file() and all_keys(layout).is_file() and _answers(port)):
        if daemons.running_pid(layout, KDC_NAME) is None or time.monotonic() > deadline:
            raise ClusterError(f"The KDC did not start.\n{daemons.log_tail(layout, KDC_NAME)}"
                               f"\nFix: see {layout.daemon_out(KDC_NAME)}.")
        time.sleep(0.2)


def stop(layout: Layout) -> bool:
    return daemons.stop(layout, KDC_NAME)


def is_running(layout: Layout) -> bool:
    return daemons.running_pid(layout, KDC_NAME) is not None


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def split_keytab(source: Path, target: Path, principals: set[str]) -> None:
    """Write to ``target`` (mode 600) only the keys of ``principals`` found in ``source``."""
    kept = [entry for name, entry in keytab_entries(source.read_bytes()) if name in principals]
    target.unlink(missing_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(b"".join([KEYTAB_VERSION, *kept]))
