"""Handing a planned job to YARN: the plan written as the job file, the code packs uploaded,
skein's application spec submitted."""

from __future__ import annotations

import tempfile
from pathlib import Path

from appmaster.common.jobplan import JOB_FILE, JobPlan
from tfyarn.hadoop.driver import DriverSettings, SubmitError, plain_diagnosis
from tfyarn.jobconfig import JobConfig
from tfyarn.submission import codepack
from tfyarn.submission.environments import JobEnvironment
from tfyarn.submission.plan import Placement


def submit(client, job: JobConfig, plan: JobPlan, placement: Placement,
           environment: JobEnvironment | None = None,
           driver: DriverSettings | None = None) -> str:
    """Upload the scripts, the AppMaster code and the plan; return the application id."""
    from tfyarn.submission.appspec import (  # imports skein: when submitting
        application_spec,
        code_packs,
    )

    driver = driver or DriverSettings()
    with tempfile.TemporaryDirectory(prefix="tfyarn-") as tmp:
        job_file = Path(tmp) / JOB_FILE
        job_file.write_text(plan.to_json())
        packs = codepack.upload(code_packs(job.client.scripts_dir, job_file.parent))
        spec = application_spec(plan, job.client.scripts_dir, job_file, placement,
                                job.client.secret_files, environment, driver.keytab, packs)
        try:
            return client.submit(spec)
        except Exception as exc:
            raise SubmitError(f"YARN refused the application: {plain_diagnosis(exc)}") from exc
