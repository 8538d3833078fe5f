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
import struct
import time
from pathlib import Path

from tfyarn.localyarn import daemons
from tfyarn.localyarn.daemons import Daemon
from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.provision import ClusterError, ensure_jars
from tfyarn.security.kerberos import KEYTAB_VERSION, keytab_entries

KDC_NAME = "kdc"
KDC_CLASS = "org.apache.hadoop.minikdc.MiniKdc"
KDC_PORT = 8026  # between HDFS's ports and the ResourceManager's; shifted by the offset
KDC_HEAP_MB = 96
REALM = "EXAMPLE.COM"  # MiniKdc's default
START_TIMEOUT_S = 60.0



def all_keys(layout: Layout) -> Path:
    return layout.kdc_dir / "all.keytab"


def ensure_kdc_jars(layout: Layout, echo=print) -> Path:
    """hadoop-minikdc and its Kerby dependencies, resolved once; returns their directory."""
    return ensure_jars(layout.kdc_lib_dir, ("hadoop-minikdc",),
                       layout.hadoop_version, f"Hadoop's MiniKdc {layout.hadoop_version}", echo,
                       pom_id="minikdc-jars")


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
    wanted = {f"{name}@{REALM}" for name in principals}
    while not (layout.krb5_conf.is_file() and _holds(all_keys(layout), wanted)
               and _answers(port)):
        if daemons.running_pid(layout, KDC_NAME) is None or time.monotonic() > deadline:
            raise ClusterError(f"The KDC did not start.\n{daemons.log_tail(layout, KDC_NAME)}"
                               f"\nFix: see {layout.daemon_out(KDC_NAME)}.")
        time.sleep(0.2)


def stop(layout: Layout) -> bool:
    return daemons.stop(layout, KDC_NAME)


def is_running(layout: Layout) -> bool:
    return daemons.running_pid(layout, KDC_NAME) is not None


def _holds(keytab: Path, principals: set[str]) -> bool:
    """Whether MiniKdc has written every principal's keys (it creates the file first)."""
    try:
        return principals <= {name for name, _ in keytab_entries(keytab.read_bytes())}
    except (OSError, ValueError, struct.error):
        return False


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
