"""Handing a planned job to YARN: the plan written as the job file, the code packs uploaded,
skein's application spec submitted."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import requests

from appmaster.common.jobplan import PLAN_FILE, JobPlan
from appmaster.common.settings import APPLICATION_PRIORITY
from tfyarn.hadoop import rmrest
from tfyarn.hadoop.driver import DriverSettings, SubmitError, plain_diagnosis
from tfyarn.jobconfig import JobConfig
from tfyarn.submission import codepack
from tfyarn.submission.environments import JobEnvironment
from tfyarn.submission.plan import AppSpecExtras


def submit(client, job: JobConfig, plan: JobPlan, extras: AppSpecExtras,
           environment: JobEnvironment | None = None,
           driver: DriverSettings | None = None) -> str:
    """Upload the scripts, the AppMaster code and the plan; return the application id."""
    from tfyarn.submission.appspec import (  # imports skein: when submitting
        application_spec,
        code_packs,
    )

    driver = driver or DriverSettings()
    with tempfile.TemporaryDirectory(prefix="tfyarn-") as tmp:
        job_file = Path(tmp) / PLAN_FILE
        job_file.write_text(plan.to_json())
        packs = codepack.upload(code_packs(job.client.scripts_dir, job_file.parent))
        spec = application_spec(plan, job.client.scripts_dir, job_file, extras,
                                job.client.secret_files, environment, driver.keytab, packs)
        try:
            return client.submit(spec)
        except Exception as exc:
            raise SubmitError(f"YARN refused the application: {plain_diagnosis(exc)}") from exc


def set_priority(app_id: str, priority: int, user: str) -> str:
    """YARN's application priority of the job just submitted (skein's submission carries
    none): through the RM's REST API, else `yarn application -updatePriority` (a web UI that
    cannot tell who asks refuses the REST call; the RPC knows the user). What happened, in a
    line: the job runs at the queue's default priority where both failed."""
    reader = rmrest.reports_reader()
    why = "the ResourceManager's REST API did not answer"
    if reader is not None:
        try:
            given = reader.set_priority(app_id, priority, user)
            return _priority_line(app_id, priority, given)
        except (rmrest.RestError, requests.RequestException, ValueError) as exc:
            why = f"the REST API refused ({exc})"
    try:
        result = subprocess.run(["yarn", "application", "-appId", app_id, "-updatePriority",
                                 str(priority)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        result = None
        why += f"; `yarn application -updatePriority` could not run ({exc})"
    if result is not None and result.returncode == 0:
        return _priority_line(app_id, priority, priority)
    if result is not None:
        said = (result.stderr or result.stdout).strip().splitlines()
        why += "; `yarn application -updatePriority` failed: " + (
            plain_diagnosis(said[-1]) if said else f"exit {result.returncode}")
    return (f"Warning: {app_id} runs at its queue's default priority, not "
            f"{APPLICATION_PRIORITY.key} {priority}: {why}.")


def _priority_line(app_id: str, asked: int, given: int) -> str:
    if given == asked:
        return f"{app_id} has YARN application priority {given} in its queue."
    return (f"Warning: YARN gave {app_id} application priority {given}, not {asked} "
            f"({APPLICATION_PRIORITY.key}): the most the queue allows you.")
