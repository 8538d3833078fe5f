"""Where a job's work dir is, for any job: running, finished, or finished long ago.

Three places say it, tried in this order:

1. the pointer file the AppMaster writes on HDFS when the job starts
   (appmaster/common/jobpointer.py): there for as long as HDFS keeps it, and cheap to read;
2. the running AppMaster's live view (its job page's tasks.json);
3. the final view in the AppMaster's log (``yarn logs``), once YARN aggregated it: the
   fallback for jobs older than the pointer file, and for clusters whose log aggregation
   keeps logs longer than anyone keeps the pointer.
"""

from __future__ import annotations

from appmaster.common.jobpointer import pointer_path, read_pointer
from tfyarn.errors import TfyarnError
from tfyarn.hadoop.driver import FINAL_STATES
from tfyarn.watch import jobview


class JobRecordError(TfyarnError):
    """The job's work dir cannot be found; the message says where tfyarn looked."""


def find_work_dir(app_id: str, report) -> str | None:
    """The job's work dir, or None where nothing says it (yet): a job not started, an
    AppMaster not answering, a log not aggregated. ``report``: YARN's application report
    (skein's or tfyarn.hadoop.rmrest's: ``user``, ``state``, ``tracking_url``)."""
    if work_dir := read_pointer(report.user, app_id):
        return work_dir
    state = str(report.state)
    if state == "RUNNING":
        view = jobview.live_view(report.tracking_url)
        return view.work_dir if view and view.work_dir else None
    if state in FINAL_STATES:
        view = jobview.final_view(app_id)
        return view.work_dir if view and view.work_dir else None
    return None


def work_dir_of(app_id: str, report) -> str:
    """The job's work dir (a URL, or a path on the nodes' disks); JobRecordError naming every
    place looked at where none says it."""
    if work_dir := find_work_dir(app_id, report):
        return work_dir
    state = str(report.state)
    if state == "RUNNING":
        where = "nor its AppMaster (not answering yet?)"
    elif state in FINAL_STATES:
        where = "nor the AppMaster's log (killed before it logged, or not aggregated yet?)"
    else:
        where = f"and the job has not started yet ({state})"
    raise JobRecordError(
        f"cannot tell where {app_id} keeps its files: neither "
        f"{pointer_path(report.user, app_id)} says it, {where}.",
        f"try again in a few seconds; `tfyarn status {app_id}` shows the work dir of a "
        "job whose AppMaster logged it.")


__all__ = ["JobRecordError", "find_work_dir", "pointer_path", "work_dir_of"]
