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

FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


class SubmitError(RuntimeError):
    """The job could not be handed to YARN; the message says why and what to do."""


@dataclass(frozen=True)
class Kerberos:
    """Who tfyarn logs in as on a secure cluster (skein's driver does the login)."""

    principal: str | None = None
    keytab: str | None = None


KERBEROS = Kerberos()  # set once by the CLI's --principal/--keytab


def use_kerberos(principal: str | None, keytab: str | None) -> None:
    global KERBEROS
    if bool(principal) != bool(keytab):
        raise SubmitError("--principal and --keytab go together: give both (or neither, to "
                          "use the ticket cache from `kinit`).")
    if keytab and not Path(keytab).is_file():
        raise SubmitError(f"--keytab {keytab}: no such file.")
    KERBEROS = Kerberos(principal, keytab)


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
        return skein.Client(principal=KERBEROS.principal, keytab=KERBEROS.keytab,
                            java_options=os.environ.get("SKEIN_DRIVER_JAVA_OPTIONS",
                                                        QUICK_JVM_OPTIONS))
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
