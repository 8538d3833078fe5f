"""Submitting a job through skein and following it to its end."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfyarn.errors import TfyarnError
from tfyarn.hadoop import amjar, hadoopconf, keptdriver
from tfyarn.hadoop.jvm import QUICK_JVM_OPTIONS
from tfyarn.security.kerberos import check_login, login_from_keytab

# skein's own log4j.properties logs everything at INFO; this one follows --verbose.
LOG4J = Path(__file__).with_name("driver-log4j.properties")

FINAL_STATES = ("FINISHED", "FAILED", "KILLED")

log = logging.getLogger(__name__)
# A Java stack frame ("\tat org.apache...(File.java:42)", "... 12 more") and a class name
# in front of a message ("org.apache.hadoop.yarn.exceptions.YarnException: ").
_FRAME = re.compile(r"^\s*(at [\w$.<>/]+\(.*\)|\.\.\. \d+ more)\s*$")
_JAVA_CLASS = re.compile(r"\b(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)(?::\s*|$)")
# skein's and Hadoop's wrappers around the RM's own words.
_WRAPPERS = re.compile(r"^(Failed to submit application, exception:\s*|Failed to submit "
                       r"application_\d+_\d+ to YARN : )")


class SubmitError(TfyarnError, RuntimeError):
    """The job could not be handed to YARN; the message says why and what to do."""


@dataclass(frozen=True)
class DriverSettings:
    """How tfyarn starts skein's Java driver: who it logs in as on a secure cluster (the
    driver does the Kerberos login) and how much of its log4j output reaches the terminal."""

    principal: str | None = None
    keytab: str | None = None
    log_level: str = "ERROR"  # Hadoop's INFO lines say nothing a user acts on


def driver_settings(principal: str | None = None, keytab: str | None = None,
                    verbose: bool = False) -> DriverSettings:
    """The driver's settings from the CLI's global options (or the Python API's), checked; a
    keytab logs in at once, since tfyarn's own HDFS checks need a ticket cache too."""
    if bool(principal) != bool(keytab):
        raise SubmitError("--principal and --keytab go together: give both (or neither, to "
                          "use the ticket cache from `kinit`).")
    if keytab and not Path(keytab).is_file():
        raise SubmitError(f"--keytab {keytab}: no such file.")
    if principal and keytab:
        login_from_keytab(principal, Path(keytab))
    if verbose:  # tfyarn's own debug log (YARN's stack frames, say) goes to stderr too
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger("tfyarn").addHandler(handler)
        logging.getLogger("tfyarn").setLevel(logging.DEBUG)
    return DriverSettings(principal, keytab, "INFO" if verbose else "ERROR")


def _unrepeat(line: str) -> str:
    """YARN sometimes pastes a message into itself: "P" then "P and more" becomes the latter."""
    for k in range(20, len(line) // 2 + 1):
        if line.startswith(line[:k], k):
            return line[k:]
    return line


def plain_diagnosis(text: str) -> str:
    """YARN's diagnosis in plain words, once: no Java stack frames, class names or wrappers.

    The full text goes to the debug log (`tfyarn -v`)."""
    text = str(text).strip()
    lines: list[str] = []
    for raw in text.splitlines():
        if _FRAME.match(raw):
            continue
        line = _unrepeat(_JAVA_CLASS.sub("", _WRAPPERS.sub("", raw.strip())).strip())
        if line.startswith("Caused by:"):
            line = line.removeprefix("Caused by:").strip()
        if line and not any(line in seen for seen in lines):
            lines.append(line)
    plain = "\n".join(lines)
    if plain != text:
        log.debug("YARN's full diagnosis:\n%s", text)
    return plain


def krb5_java_options() -> list[str]:
    """Java reads no KRB5_CONFIG: the driver gets the krb5.conf MIT's tools use (its first)."""
    conf = os.environ.get("KRB5_CONFIG", "").split(":")[0]
    return [f"-Djava.security.krb5.conf={conf}"] if conf else []


def skein_client(driver: DriverSettings | None = None):
    """skein's driver, started with ``driver``'s login and log level; it needs `yarn
    classpath` to find the cluster's Hadoop jars and config."""
    import skein

    driver = driver or DriverSettings()

    if shutil.which("yarn") is None:
        raise SubmitError(
            "`yarn` is not on PATH, so tfyarn cannot reach a YARN cluster.",
            hint="run on a machine with the Hadoop client configured (HADOOP_CONF_DIR set), "
            'or for the local cluster: tfyarn cluster up && eval "$(tfyarn cluster env)"')
    if driver.keytab is None:  # skein's driver logs in from a keytab itself
        check_login(hadoopconf.client_configuration())  # else its words are a Java error's
    try:
        # The driver lives as long as one command: start its JVM the quick way.
        java_options = [*os.environ.get("SKEIN_DRIVER_JAVA_OPTIONS", QUICK_JVM_OPTIONS).split(),
                        f"-Dlog4j.configuration=file:{LOG4J}", *krb5_java_options()]
        amjar.use_patched_jar()  # the AppMaster's jar is the driver's
        idle_s = keptdriver.idle_seconds()
        if idle_s and driver.log_level != "INFO":  # -v shows a driver's log: its own one
            return keptdriver.kept_client(java_options, driver.principal, driver.keytab,
                                          driver.log_level, idle_s)
        return skein.Client(principal=driver.principal, keytab=driver.keytab,
                            log_level=driver.log_level, java_options=java_options)
    except Exception as exc:
        raise SubmitError(f"Could not start skein's driver: {exc}") from exc


def follow(client, app_id: str, show: Callable[[object], None], poll_s: float = 1.0):
    """Call ``show(report)`` every ``poll_s`` until the application ends; return its report."""
    while True:
        report = client.application_report(app_id)
        show(report)
        if str(report.state) in FINAL_STATES:
            return report
        time.sleep(poll_s)
