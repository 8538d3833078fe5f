"""Which YARN applications are tfyarn's, and where their reports come from."""

from __future__ import annotations

import re

from tfyarn.errors import TfyarnError
from tfyarn.hadoop import rmrest
from tfyarn.hadoop.driver import DriverSettings, plain_diagnosis, skein_client

APP_ID = re.compile(r"application_\d+_\d+")


def application_report(client, app_id: str):
    """YARN's report of a tfyarn application, or a clear error for anything else."""
    if not APP_ID.fullmatch(app_id):
        raise TfyarnError(
            f"{app_id!r} is not a YARN application id (like application_1700000000000_0001); "
            "`tfyarn list` shows yours.")
    try:
        report = client.application_report(app_id)
    except Exception as exc:
        raise TfyarnError(f"YARN knows no application {app_id}: {plain_diagnosis(exc)}",
                          "check the id; `tfyarn list --all` shows your tfyarn jobs, "
                          "`yarn application -list -appStates ALL` every application.") from exc
    if not is_tfyarn_job(report):
        raise TfyarnError(
            f"{app_id} ({report.name}) is not a tfyarn job; use `yarn application -status "
            f"{app_id}` and `yarn logs -applicationId {app_id}` for it.")
    return report


def is_tfyarn_job(report) -> bool:
    """tfyarn tags every application it submits `tfyarn` (skein's applicationType is
    SKEIN's own for any skein application)."""
    return "tfyarn" in {tag.lower() for tag in report.tags}


def report_source(driver: DriverSettings | None):
    """Where application reports come from: the RM's REST API when the configuration allows
    (no JVM to start), else skein's driver."""
    return rmrest.reports_reader() or skein_client(driver)
