"""Fresh HDFS delegation tokens for jobs that outlive theirs (Kerberos, submitted with a keytab).

A job's containers reach HDFS with the delegation tokens YARN gave them. YARN's
ResourceManager renews those, but only up to their maximum lifetime (7 days by default);
after it the NameNode refuses every new connection, so a task restarted then could not restore
its checkpoint, nor could a mirror whose connection dropped write one. As Spark does with
``--keytab``, a job submitted with ``--principal``/``--keytab`` ships the keytab to its
AppMaster only (a YARN resource private to the application, like skein's own key). The master
logs in with it and obtains new tokens long before the old ones die, with Hadoop's own
``dtutil`` (hdfs-native cannot ask for tokens), and hands them to the agents over the job's
rendezvous; each agent keeps them in a private file that HADOOP_TOKEN_FILE_LOCATION names, and
its next HDFS connections use them. Tokens appear in no log, argv or environment: only the
files' paths do.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from appmaster.common import storage
from appmaster.common.hadoopxml import site_value

log = logging.getLogger("tfyarn.tokens")

KEYTAB_FILE = ".tfyarn-keytab"  # the AppMaster's copy of the submitter's keytab
KRB5_CONF_FILE = ".tfyarn-krb5.conf"  # the client's KRB5_CONFIG, when it named one
TOKENS_FILE = ".tfyarn-hdfs-tokens"  # where a process keeps the newest tokens
TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"
DTUTIL = "org.apache.hadoop.security.token.DtUtilShell"
# Hadoop's defaults (hdfs-default.xml): a token dies unless renewed within a day, and after
# seven days whatever happens.
DEFAULT_RENEW_INTERVAL_MS = 86_400_000
DEFAULT_MAX_LIFETIME_MS = 604_800_000
RETRY_S = 30.0  # after a failed attempt: the KDC or the NameNode may be back soon
FETCH_TIMEOUT_S = 120.0


class TokenError(RuntimeError):
    """New tokens could not be obtained; the message is the tool's own last words."""


def refresh_period_s(conf_dir: str | None) -> float:
    """How often to get new tokens: half of the shorter of the NameNode's renew interval (new
    tokens are renewed by nobody) and the tokens' maximum lifetime."""
    renew = site_value(conf_dir, "hdfs-site.xml", "dfs.namenode.delegation.token.renew-interval")
    life = site_value(conf_dir, "hdfs-site.xml", "dfs.namenode.delegation.token.max-lifetime")
    shortest_ms = min(int(renew or DEFAULT_RENEW_INTERVAL_MS), int(life or DEFAULT_MAX_LIFETIME_MS))
    return shortest_ms / 1000 / 2


def file_system(work_dir: str, conf_dir: str | None) -> str:
    """The file system to get tokens for: the work dir's, else the cluster's default."""
    parts = urlsplit(work_dir)
    if parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return site_value(conf_dir, "core-site.xml", "fs.defaultFS") or f"{parts.scheme}:///"


def hadoop_classpath() -> str:
    """Hadoop's jars, as skein's Java AppMaster (this process's parent) runs with them: skein
    removes CLASSPATH from the environment of the script it starts, not from its own."""
    if os.environ.get("CLASSPATH"):
        return os.environ["CLASSPATH"]
    environ = Path(f"/proc/{os.getppid()}/environ").read_bytes().split(b"\0")
    for entry in environ:
        if entry.startswith(b"CLASSPATH="):
            return entry.split(b"=", 1)[1].decode().replace("$CLASSPATH", "")
    raise TokenError("no Hadoop classpath: neither CLASSPATH nor skein's AppMaster names one")


def fetch(principal: str, keytab: Path, fs_url: str, into: Path) -> None:
    """New HDFS delegation tokens, logged in from the keytab, written to ``into`` in Hadoop's
    token file format (what HADOOP_TOKEN_FILE_LOCATION names)."""
    java = Path(os.environ.get("JAVA_HOME", "/usr")) / "bin" / "java"
    options = ["-Xmx64m", "-XX:TieredStopAtLevel=1"]  # one call: start fast, stay small
    if Path(KRB5_CONF_FILE).is_file():  # Java reads no KRB5_CONFIG
        options.append(f"-Djava.security.krb5.conf={Path(KRB5_CONF_FILE).resolve()}")
    env = {k: v for k, v in os.environ.items()
           # the AppMaster's own JVM options, and tokens: new ones come only from Kerberos
           if k not in ("JAVA_TOOL_OPTIONS", TOKEN_FILE_ENV, "CLASSPATH")}
    command = [str(java), *options, "-cp", hadoop_classpath(), DTUTIL, "-keytab", str(keytab),
               "-principal", principal, "get", fs_url, "-format", "java", str(into)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=FETCH_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TokenError(f"Hadoop's dtutil could not run: {exc}") from exc
    if done.returncode != 0 or not into.is_file() or into.stat().st_size == 0:
        words = [line for line in (done.stderr + done.stdout).splitlines()
                 if line.strip() and not line.startswith(("\tat ", "Picked up"))]
        raise TokenError(f"Hadoop's dtutil failed (exit {done.returncode}): "
                         f"{' / '.join(words[-3:]) or 'no output'}")


def install(tokens: bytes, directory: str | Path = ".") -> Path:
    """Keep ``tokens`` in this process's private token file and use them from now on: the
    file is replaced whole, HADOOP_TOKEN_FILE_LOCATION names it (for HDFS clients made
    later, and scripts started later) and the HDFS clients are made again."""
    target = Path(directory).resolve() / TOKENS_FILE
    descriptor, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{TOKENS_FILE}.")
    with os.fdopen(descriptor, "wb") as out:  # mkstemp: mode 0600, readable by us only
        out.write(tokens)
    os.replace(partial, target)
    os.environ[TOKEN_FILE_ENV] = str(target)
    storage.tokens_changed()
    return target


class TokenRefresher:
    """The master's side: new tokens every ``period_s``, each handed to ``publish``."""

    def __init__(self, principal: str, keytab: Path, fs_url: str, period_s: float,
                 publish: Callable[[bytes], None]) -> None:
        self.principal, self.keytab, self.fs_url = principal, keytab, fs_url
        self.period_s, self.publish = period_s, publish
        self.obtained = 0
        self._stop = threading.Event()

    @classmethod
    def for_job(cls, principal: str | None, work_dir: str,
                publish: Callable[[bytes], None]) -> TokenRefresher | None:
        """One when the job was submitted with a keytab, works on HDFS and the cluster uses
        Kerberos (without it HDFS hands out no tokens), else None."""
        conf_dir = os.environ.get("HADOOP_CONF_DIR")
        auth = site_value(conf_dir, "core-site.xml", "hadoop.security.authentication") or ""
        if not (principal and Path(KEYTAB_FILE).is_file() and storage.is_remote(work_dir)
                and auth.lower() == "kerberos"):
            return None
        return cls(principal, Path(KEYTAB_FILE).resolve(), file_system(work_dir, conf_dir),
                   refresh_period_s(conf_dir), publish)

    def start(self) -> None:
        log.info("new HDFS tokens for %s every %.0f s, as %s (keytab)", self.fs_url,
                 self.period_s, self.principal)
        threading.Thread(target=self._run, daemon=True, name="hdfs-tokens").start()

    def stop(self) -> None:
        self._stop.set()

    def refresh(self) -> None:
        # In the container's directory (mode 0700), not the node's /tmp: an AppMaster killed
        # during a fetch leaves no tokens behind there, as YARN removes its directory.
        with tempfile.TemporaryDirectory(prefix="tfyarn-tokens-", dir=".") as private:
            into = Path(private) / "tokens"
            fetch(self.principal, self.keytab, self.fs_url, into)
            tokens = into.read_bytes()
        self.obtained += 1
        self.publish(tokens)
        log.info("new HDFS tokens obtained (%d so far); the agents take them on their next "
                 "heartbeat", self.obtained)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.refresh()
                wait_s = next_fetch_in(self.period_s, time.monotonic() - started)
            except (TokenError, OSError) as exc:
                log.error("could not get new HDFS tokens (trying again in %.0f s): %s",
                          RETRY_S, exc)
                wait_s = min(RETRY_S, self.period_s)
            self._stop.wait(wait_s)


def next_fetch_in(period_s: float, took_s: float) -> float:
    """Seconds until the next fetch: the period counts from this fetch's start, since a fetch
    (a JVM, the KDC, the NameNode) can take a good part of it on a busy node, and the tokens
    handed out must not grow older than the period meant."""
    return max(0.0, period_s - took_s)


class TokenFollower:
    """The agent's side: takes the master's newest tokens when their version rises."""

    def __init__(self, get: Callable[[], tuple[bytes, int] | None]) -> None:
        self.get = get
        self.version = 0

    def follow(self, version: int | None = None) -> None:
        """``version``: what the master says it has (None: ask). Installs newer tokens."""
        if version is not None and version <= self.version:
            return
        found = self.get()
        if found is None or found[1] <= self.version:
            return
        install(found[0])
        self.version = found[1]
        log.info("using new HDFS tokens from the AppMaster (version %d)", self.version)
