"""Start and stop the Hadoop daemons as plain JVM processes, tracked by pid files."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.proctable import scan_processes

RM_CLASS = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NM_CLASS = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
NAMENODE_CLASS = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE_CLASS = "org.apache.hadoop.hdfs.server.datanode.DataNode"

# What Hadoop's own scripts pass on JDK 17: its reflection needs these packages opened.
ADD_OPENS = [
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in (
        "java.io", "java.lang", "java.lang.reflect", "java.math", "java.net", "java.nio",
        "java.text", "java.util", "java.util.concurrent", "java.util.concurrent.atomic",
        "java.util.regex", "java.util.zip", "sun.nio.ch", "sun.security.util",
        "sun.security.x509",
    )
]
JDK17_OPTIONS = ["-XX:+IgnoreUnrecognizedVMOptions", *ADD_OPENS]


@dataclass(frozen=True)
class Daemon:
    name: str  # "rm", "nm1", "namenode", ...
    main_class: str
    conf_dir: Path
    heap_mb: int
    args: tuple[str, ...] = ()
    wrapper: tuple[str, ...] = ()  # runs the JVM, e.g. in a host view of its own
    classpath: str | None = None  # instead of the cluster's (the KDC has jars of its own)


def java_command(layout: Layout, java_home: Path, daemon: Daemon) -> list[str]:
    return [
        *daemon.wrapper,
        str(java_home / "bin" / "java"),
        f"-Xmx{daemon.heap_mb}m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # short-lived dev cluster: faster start, less JIT memory
        "-Xss512k",
        # Without libhadoop.so (Maven publishes none) Hadoop forks for what it cannot do in
        # Java (file modes: see localfs.py); vfork makes each fork cheap.
        "-Djdk.lang.Process.launchMechanism=VFORK",
        *JDK17_OPTIONS,
        f"-Dlog4j.configuration=file:{layout.conf_dir / 'log4j-daemon.properties'}",
        f"-Dhadoop.log.dir={layout.log_dir}",
        f"-Dyarn.log.dir={layout.log_dir}",
        f"-Dhadoop.log.file={layout.daemon_log(daemon.name)}",
        *kerberos_options(layout),
        "-cp",
        daemon.classpath or classpath(layout, daemon.conf_dir),
        daemon.main_class,
        *daemon.args,
    ]


def classpath(layout: Layout, conf_dir: Path, *extra: Path) -> str:
    """A daemon's: its configuration first, then the Hadoop jars (and ``extra``)."""
    return ":".join(map(str, (conf_dir, f"{layout.lib_dir}/*", layout.webapps_dir, *extra)))


def kerberos_options(layout: Layout) -> list[str]:
    """Java reads no KRB5_CONFIG: a secure cluster's JVMs are told where its KDC is."""
    return [f"-Djava.security.krb5.conf={layout.krb5_conf}"] if layout.krb5_conf.is_file() \
        else []


def daemon_environment(layout: Layout, java_home: Path) -> dict[str, str]:
    """NodeManagers pass JAVA_HOME, PATH and HADOOP_CONF_DIR on to containers (env-whitelist)."""
    env = dict(os.environ)
    env.pop("CLASSPATH", None)
    env["JAVA_HOME"] = str(java_home)
    env["HADOOP_CONF_DIR"] = str(layout.conf_dir)
    env["PATH"] = f"{java_home / 'bin'}:{layout.bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def start(layout: Layout, java_home: Path, daemon: Daemon) -> int:
    layout.log_dir.mkdir(parents=True, exist_ok=True)
    layout.run_dir.mkdir(parents=True, exist_ok=True)
    layout.daemon_log(daemon.name).unlink(missing_ok=True)
    with open(layout.daemon_out(daemon.name), "wb") as out:
        process = subprocess.Popen(
            java_command(layout, java_home, daemon),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=daemon_environment(layout, java_home),
            cwd=layout.state_dir,
            start_new_session=True,  # survives the CLI that started it
        )
    # The start time tells our process from a later one that reuses the pid.
    layout.pid_file(daemon.name).write_text(f"{process.pid} {_start_time(process.pid)}\n")
    return process.pid


def run_tool(layout: Layout, java_home: Path, tool: Daemon) -> subprocess.CompletedProcess:
    """Run a one-off JVM (a NameNode's -format, say) to its end, its output captured."""
    layout.log_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(java_command(layout, java_home, tool), capture_output=True, text=True,
                          env=daemon_environment(layout, java_home))


def running_pid(layout: Layout, name: str) -> int | None:
    """The daemon's pid if that process is alive and really is ours (pids get reused)."""
    try:
        pid_text, started = layout.pid_file(name).read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) and _start_time(pid) == started else None


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def stop(layout: Layout, name: str, grace_s: float = 15.0) -> bool:
    """SIGTERM, then SIGKILL after ``grace_s``. Returns whether a process was stopped."""
    return bool(stop_together(layout, [name], grace_s))


def stop_together(layout: Layout, names: list[str], grace_s: float = 15.0) -> list[str]:
    """Stop these daemons at once: SIGTERM to each, SIGKILL to those alive after ``grace_s``
    (a NodeManager may wait that long for its applications). The names of those stopped."""
    pids = {}
    for name in names:
        pid = running_pid(layout, name)
        layout.pid_file(name).unlink(missing_ok=True)
        if pid is not None:
            send_signal(pid, signal.SIGTERM)
            pids[name] = pid
    deadline = time.monotonic() + grace_s
    while any(map(_alive, pids.values())) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids.values():
        if _alive(pid):
            send_signal(pid, signal.SIGKILL)
    return list(pids)


def kill_leftover_containers(layout: Layout) -> int:
    """Container processes run in their own sessions; kill any still working under our dirs."""
    state = str(layout.state_dir) + "/"
    leftovers = [p for p in scan_processes() if p.cwd.startswith(state) and "/local/" in p.cwd]
    for proc in leftovers:
        send_signal(proc.pid, signal.SIGKILL)
    return len(leftovers)


def log_tail(layout: Layout, name: str, lines: int = 20) -> str:
    chunks = []
    for path in (layout.daemon_out(name), layout.daemon_log(name)):
        if path.is_file():
            text = path.read_text(errors="replace").strip().splitlines()
            if text:
                chunks.append(f"--- {path} (last lines) ---\n" + "\n".join(text[-lines:]))
    return "\n".join(chunks) or f"(no log written by {name})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def send_signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
