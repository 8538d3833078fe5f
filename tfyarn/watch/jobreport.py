"""A job's report, read back on the client: the HTML and JSON the AppMaster wrote into the
job's work dir (appmaster/page/report.py), for `tfyarn report` and for `tfyarn status` on a job
that has ended.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from appmaster.common import jobpointer
from appmaster.common.jobplan import PLAN_FILE, JobPlan, SpecError
from appmaster.common.storage import RemoteDir, StorageError, bounded, is_remote
from appmaster.page.report import HTML_FILE, JSON_FILE, render_report
from appmaster.page.view import JobView
from tfyarn.errors import TfyarnError
from tfyarn.hadoop.driver import FINAL_STATES
from tfyarn.watch import jobview

READ_TIMEOUT_S = 30.0


class ReportError(TfyarnError):
    """No report of the job can be had; the message says where tfyarn looked."""


def read_file(work_dir: str, name: str) -> bytes | None:
    """A file of the work dir (on HDFS or a local path), or None if it is not there."""
    if not is_remote(work_dir):
        path = Path(work_dir) / name
        return path.read_bytes() if path.is_file() else None
    try:
        return bounded(lambda: RemoteDir(work_dir).read_bytes(name), READ_TIMEOUT_S,
                       f"HDFS ({work_dir})")
    except StorageError:
        return None


def recorded_view(work_dir: str) -> JobView | None:
    """The view the AppMaster last wrote into the work dir."""
    data = read_file(work_dir, JSON_FILE)
    try:
        return JobView.from_dict(json.loads(data)["view"]) if data else None
    except (ValueError, KeyError, TypeError):
        return None


def final_view(report) -> tuple[JobView | None, str]:
    """A finished job's last view: its recorded report, else the AppMaster's log."""
    work_dir = jobpointer.read_pointer(report.user, report.id)
    if work_dir and (view := recorded_view(work_dir)):
        return view, f"as the AppMaster recorded it at the end in {work_dir}/{JSON_FILE}"
    view = jobview.final_view(report.id)
    if view:
        return view, "as the AppMaster logged it at the end"
    return None, (f"no task table: the AppMaster recorded none (it failed or was killed before "
                  f"its tasks started?) or its log is not aggregated yet; `tfyarn logs "
                  f"{report.id} --role appmaster` shows that log")


def fetch(report) -> tuple[bytes, str]:
    """The report's HTML and where it came from: drawn from the running AppMaster's view,
    else the file in the work dir, else drawn from the JSON there or from the AppMaster's
    log (read once: `yarn logs` starts a JVM). ReportError when none is there."""
    app_id = report.id
    if str(report.state) == "RUNNING" and (view := jobview.live_view(report.tracking_url)):
        return render_report(view.to_dict()).encode(), "drawn from the running AppMaster's view"
    logged = functools.cache(lambda: jobview.final_view(app_id))
    work_dir = jobpointer.read_pointer(report.user, app_id) or (
        logged().work_dir if logged() else None)
    if work_dir:
        if html := read_file(work_dir, HTML_FILE):
            return html, f"{work_dir}/{HTML_FILE}"
        if view := recorded_view(work_dir):
            return render_report(view.to_dict()).encode(), f"drawn from {work_dir}/{JSON_FILE}"
    if view := logged():
        return render_report(view.to_dict()).encode(), "drawn from the AppMaster's log"
    if str(report.state) not in FINAL_STATES:  # its first second: what YARN and the plan say
        plan = submitted_plan(report)
        return early_report(report, plan), (
            "drawn from YARN's application report" + (" and the submitted plan" if plan else "")
            + ": the AppMaster has not written yet")
    looked = f"{work_dir}/{HTML_FILE}, " if work_dir else ""
    raise ReportError(
        f"no report of {app_id} ({report.state}): nothing at {looked}and no task table in "
        "the AppMaster's log.",
        "the AppMaster writes its report a minute after it starts and when the job ends; a "
        "job killed in its first minute has none. `yarn logs -applicationId "
        f"{app_id}` shows what it left.")


def staging_dir(user: str, app_id: str) -> str:
    """Where skein's driver put the application's files (the plan among them) on HDFS; skein
    removes it when the application ends."""
    return f"hdfs:///user/{user}/.skein/{app_id}"


def staged_file(directory: str, name: str) -> bytes | None:
    """A file skein's driver staged: it uploads each under a hashed folder, ``<md5>/<name>``."""
    if not is_remote(directory):
        found = sorted(Path(directory).glob(f"*/{name}"))
        return found[0].read_bytes() if found else None

    def read() -> bytes | None:
        staged = RemoteDir(directory)
        path = next((p for p in staged.list_files() if p.rsplit("/", 1)[-1] == name), None)
        return staged.read_bytes(path) if path else None

    try:
        return bounded(read, READ_TIMEOUT_S, f"HDFS ({directory})")
    except (StorageError, OSError):
        return None


def submitted_plan(report) -> JobPlan | None:
    """The plan as it was submitted, from the application's staging dir; None when it is
    gone or cannot be read."""
    data = staged_file(staging_dir(report.user, report.id), PLAN_FILE)
    try:
        return JobPlan.from_json(data.decode()) if data else None
    except (SpecError, ValueError, KeyError, TypeError):
        return None


def early_report(report, plan: JobPlan | None) -> bytes:
    """A job's report before its AppMaster wrote one: YARN's state of the application, and
    the roles the plan asks for (no task is asked of YARN yet, or none is known here)."""
    view = JobView(app_id=report.id, name=report.name, state=str(report.state),
                   work_dir=plan.resolved_work_dir(report.id) if plan and plan.planned else None,
                   heartbeat_timeout_s=plan.heartbeat_timeout_s if plan else 0.0)
    return render_report(view.to_dict(), note=early_note(report, plan)).encode()


def early_note(report, plan: JobPlan | None) -> str:
    said = [f"The AppMaster has not written yet (it does a minute after it starts): YARN has "
            f"the application {report.state} in queue {report.queue}"]
    if report.diagnostics:
        said.append(f"YARN says: {report.diagnostics.strip()}")
    if plan:
        said.append("Submitted: " + "; ".join(
            f"{role.name} {role.instances} x {role.memory_mb} MB, {role.vcores} vcore(s)"
            + (f", {role.gpus} GPU(s)" if role.gpus else "") for role in plan.components)
            + f"; a {plan.framework} job" + (f", work dir {plan.resolved_work_dir(report.id)}"
                                             if plan.planned else ""))
    return ". ".join(said) + "."
