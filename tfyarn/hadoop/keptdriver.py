"""skein's Java driver kept running between tfyarn commands (opt-in: TFYARN_DRIVER_IDLE_S).

Starting the driver's JVM is the largest client-side step of `tfyarn submit`, `status`,
`logs` and `kill` (2.7-10 s on a loaded machine, docs/benchmarks-issue14.md). skein's own
"global driver" is one per user in ~/.skein, logged in once: it would go on acting as
whoever started it after a `kinit` as someone else, and talk to whichever cluster it was
started for. A kept driver here is one per identity instead: its directory is named by a
hash of everything that decides who it is and where it talks (the Hadoop configuration
directories, the `yarn` found, JAVA_HOME, the principal and keytab, the Kerberos ticket
cache's name and content, the Java options), so a change of any of them starts another.

A small keeper process owns the driver: the driver ends when its stdin closes (skein's
driver without --daemon), and the keeper closes it once no command used the driver for
TFYARN_DRIVER_IDLE_S seconds. Like skein's global driver it listens on 127.0.0.1 behind
TLS with the user's own skein certificate (~/.skein, readable by the user only).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tfyarn.hadoop import amjar

IDLE_ENV = "TFYARN_DRIVER_IDLE_S"
DIR_ENV = "TFYARN_DRIVERS_DIR"  # where the kept drivers' directories are (tests, benches)
ADDRESS_FILE = "driver"  # "<address> <keeper pid>", written once the driver listens
USED_FILE = "used"  # its mtime: the last command that used the driver
START_TIMEOUT_S = 120.0


def idle_seconds() -> float | None:
    value = os.environ.get(IDLE_ENV, "")
    return float(value) if value else None


def _file_digest(path: str | None) -> str:
    if not path or not os.path.isfile(path):
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def identity(java_options: list[str], principal: str | None, keytab: str | None) -> str:
    """What decides who the driver is and which cluster it talks to, hashed."""
    ccache = os.environ.get("KRB5CCNAME", f"FILE:/tmp/krb5cc_{os.getuid()}")
    parts = {
        "conf": [os.environ.get(k, "") for k in ("HADOOP_CONF_DIR", "YARN_CONF_DIR",
                                                 "HADOOP_HOME", "JAVA_HOME", "KRB5_CONFIG")],
        "yarn": os.path.realpath(shutil.which("yarn") or ""),
        "principal": principal, "keytab": keytab, "keytab_content": _file_digest(keytab),
        "ccache": ccache, "ccache_content": _file_digest(ccache.removeprefix("FILE:")),
        "java": java_options, "user": os.environ.get("HADOOP_USER_NAME", ""),
        "jar": amjar.in_use(),  # tfyarn's patched AppMaster or skein's own
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def state_dir(key: str) -> Path:
    # Not under XDG_CACHE_HOME: that also moves the local cluster's jars (localyarn).
    root = Path(os.environ.get(DIR_ENV) or Path.home() / ".cache" / "tfyarn" / "drivers")
    path = root / key
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def _running_address(directory: Path) -> str | None:
    try:
        address, pid = (directory / ADDRESS_FILE).read_text().split()
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return None
    return address


def kept_client(java_options: list[str], principal: str | None, keytab: str | None,
                log_level: str, idle_s: float):
    """A skein.Client of the kept driver for this identity, started if none runs."""
    import skein

    directory = state_dir(identity(java_options, principal, keytab))
    with _locked(directory):  # one start at a time; the keeper stops only under it too
        (directory / USED_FILE).touch()
        address = _running_address(directory)
        if address is not None:
            try:
                client = skein.Client(address=address)
            except skein.exceptions.ConnectionError:
                address = None  # its keeper is alive but the driver is not: start another
        if address is None:
            (directory / ADDRESS_FILE).unlink(missing_ok=True)
            address = _start_keeper(directory, java_options, principal, keytab, log_level,
                                    idle_s)
            client = skein.Client(address=address)
    return client


def stop_all(root: Path) -> None:
    """Stop every kept driver under ``root`` now rather than when idle: each keeper is
    ended, and its driver with it (a driver ends when its stdin, the keeper's pipe, closes)."""
    for address_file in root.glob(f"*/{ADDRESS_FILE}"):
        with _locked(address_file.parent):
            try:
                pid = int(address_file.read_text().split()[1])
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError, IndexError):
                pass  # gone already
            address_file.unlink(missing_ok=True)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _start_keeper(directory: Path, java_options: list[str], principal: str | None,
                  keytab: str | None, log_level: str, idle_s: float) -> str:
    config = {"java_options": java_options, "principal": principal, "keytab": keytab,
              "log_level": log_level, "idle_s": idle_s}
    (directory / USED_FILE).touch()
    with open(directory / "keeper.log", "ab") as keeper_log:  # the child keeps its own fd
        keeper = subprocess.Popen([sys.executable, "-m", "tfyarn.hadoop.keptdriver", str(directory),
                                   json.dumps(config)], start_new_session=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=keeper_log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        address = _running_address(directory)
        if address is not None:
            return address
        if keeper.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"the kept driver did not start (see {directory / 'keeper.log'})")


def keep(directory: Path, config: dict) -> None:
    """The keeper: start the driver, publish its address, end it once idle."""
    from skein.core import Security, _start_driver  # skein 0.8's driver start, stdin kept

    amjar.use_patched_jar()

    address, driver = _start_driver(
        security=Security.from_default(), keytab=config["keytab"],
        principal=config["principal"], log=str(directory / "driver.log"),
        log_level=config["log_level"], java_options=config["java_options"])
    (directory / USED_FILE).touch()  # idle from when it is ready, not from its start
    (directory / f"{ADDRESS_FILE}.new").write_text(f"{address} {os.getpid()}")
    os.replace(directory / f"{ADDRESS_FILE}.new", directory / ADDRESS_FILE)
    idle_s = float(config["idle_s"])
    while driver.poll() is None:
        with _locked(directory):  # a command between its touch and its connection waits
            idle = time.time() - (directory / USED_FILE).stat().st_mtime
            if idle > idle_s:
                (directory / ADDRESS_FILE).unlink(missing_ok=True)
                break
        time.sleep(min(5.0, max(0.5, idle_s - idle)))
    (directory / ADDRESS_FILE).unlink(missing_ok=True)
    if driver.poll() is None:
        driver.stdin.close()  # skein's driver ends when its stdin closes
        driver.wait()


if __name__ == "__main__":
    keep(Path(sys.argv[1]), json.loads(sys.argv[2]))
