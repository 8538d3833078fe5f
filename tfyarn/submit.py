"""Submitting a job through skein and following it to its end."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from appmaster.jobplan import JOB_FILE, JobPlan
from tfyarn.environments import JobEnvironment
from tfyarn.jobconfig import JobConfig
from tfyarn.plan import Placement

# For JVMs that live a short while (skein's driver, its AppMaster): start fast, stay lean.
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# skein's own log4j.properties logs everything at INFO; this one follows --verbose.
LOG4J = Path(__file__).with_name("driver-log4j.properties")

FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


class SubmitError(RuntimeError):
    """The job could not be handed to YARN; the message says why and what to do."""


@dataclass(frozen=True)
class DriverSettings:
    """How tfyarn starts skein's Java driver: who it logs in as on a secure cluster (the
    driver does the Kerberos login) and how much of its log4j output reaches the terminal."""

    principal: str | None = None
    keytab: str | None = None
    log_level: str = "ERROR"  # Hadoop's INFO lines say nothing a user acts on


DRIVER = DriverSettings()  # set once by the CLI's global options


def configure_driver(principal: str | None, keytab: str | None, verbose: bool = False) -> None:
    global DRIVER
    if bool(principal) != bool(keytab):
        raise SubmitError("--principal and --keytab go together: give both (or neither, to "
                          "use the ticket cache from `kinit`).")
    if keytab and not Path(keytab).is_file():
        raise SubmitError(f"--keytab {keytab}: no such file.")
    DRIVER = DriverSettings(principal, keytab, "INFO" if verbose else "ERROR")


def skein_client():
    """skein's driver needs `yarn classpath` to find the cluster's Hadoop jars and config."""
    import skein

    if shutil.which("yarn") is None:
        raise SubmitError(
            "`yarn` is not on PATH, so tfyarn cannot reach a YARN cluster. Fix: run on a "
            "machine with the Hadoop client configured (HADOOP_CONF_DIR set), or for the "
            'local cluster: tfyarn cluster up && eval "$(tfyarn cluster env)"'
        )
    try:
        # The driver lives as long as one command: start its JVM the quick way.
        java_options = os.environ.get("SKEIN_DRIVER_JAVA_OPTIONS", QUICK_JVM_OPTIONS)
        return skein.Client(principal=DRIVER.principal, keytab=DRIVER.keytab,
                            log_level=DRIVER.log_level,
                            java_options=[*java_options.split(),
                                          f"-Dlog4j.configuration=file:{LOG4J}"])
    except Exception as exc:
        raise SubmitError(f"Could not start skein's driver: {exc}") from exc


def submit(client, job: JobConfig, plan: JobPlan, placement: Placement,
           environment: JobEnvironment | None = None) -> str:
    """Upload the scripts, the AppMaster code and the plan; return the application id."""
    from tfyarn.appspec import application_spec  # imports skein: only when submitting
    with tempfile.TemporaryDirectory(prefix="tfyarn-") as tmp:
        job_file = Path(tmp) / JOB_FILE
        job_file.write_text(plan.to_json())
        spec = application_spec(plan, job.app.scripts_dir, job_file, placement,
                                job.app.secrets, environment)
        try:
            return client.submit(spec)
        except Exception as exc:
            raise SubmitError(f"YARN refused the application: {exc}") from exc


def follow(client, app_id: str, show: Callable[[object], None], poll_s: float = 1.0):
    """Call ``show(report)`` every ``poll_s`` until the application ends; return its report."""
    while True:
        report = client.application_report(app_id)
        show(report)
        if str(report.state) in FINAL_STATES:
            return report
        time.sleep(poll_s)
