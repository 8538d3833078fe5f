"""A finished job's logs from YARN's log aggregation, and what to say when the ones asked for
are not there: a job that failed before its tasks started has only its AppMaster's log, a
role the job did not have has none, and a cluster without log aggregation keeps none.

`yarn logs` reads what each NodeManager copied to the cluster's file system when the
application ended (yarn.log-aggregation-enable); its refusals are Java's sentences, turned
here into a diagnosis and a fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfyarn.errors import TfyarnError
from tfyarn.watch import jobview

NO_MATCH = "Can not find any log file matching"
NOT_AGGREGATED = ("Log aggregation has not completed or is not enabled",
                  "does not have any log files", "Can not find the logs for the application")
# The AppMaster's container is the first of each attempt: container_<app>_<attempt>_000001.
AM_CONTAINER_SUFFIX = "_000001"
# What the AppMaster writes: tfyarn's AppMaster (driver), skein's Java side (master), the
# launch line's refusal (tfyarn-launch.stderr), YARN's own (prelaunch.*).
AM_FILES = r"application\.(driver|master)\.log|tfyarn-launch\.stderr|prelaunch\.(out|err)"
AM_LOG = "application.driver.log"
TAIL_LINES = 30


class LogsError(TfyarnError):
    """The logs asked for cannot be shown; the message says why and what to do."""


@dataclass(frozen=True)
class LogFile:
    container: str
    node: str
    name: str
    text: str

    @property
    def appmaster(self) -> bool:
        return self.container.endswith(AM_CONTAINER_SUFFIX)


def fetch(app_id: str, pattern: str | None = None) -> str | None:
    """`yarn logs` of the application (only the files matching ``pattern``); None when no
    file matches. LogsError, with the fix, when YARN keeps no logs of it."""
    options = ("-log_files_pattern", pattern) if pattern else ()
    try:
        text = jobview.yarn_logs(app_id, *options)
    except jobview.JobViewError as exc:
        if NO_MATCH in str(exc):
            return None
        if any(words in str(exc) for words in NOT_AGGREGATED):
            raise not_aggregated(app_id) from exc
        raise
    return text if text.strip() else None


def not_aggregated(app_id: str) -> LogsError:
    return LogsError(
        f"YARN has no logs of {app_id}: its containers' logs are kept after the job only "
        "where the cluster aggregates them (yarn.log-aggregation-enable in yarn-site.xml), "
        "and only once the copy is done, seconds after the end.",
        "try again in a few seconds; if the cluster does not aggregate logs, ask its "
        f"administrators to enable it, and meanwhile follow jobs with `tfyarn logs -f "
        f"{app_id}` while they run.")


def files(text: str) -> list[LogFile]:
    return [LogFile(*parts) for parts in jobview.aggregated_log_files(text)]


# YARN's listing of each container's directory (1.4 MB a container with torch's env): not
# the job's output, shown by `tfyarn logs --all` only when asked for
DIRECTORY_LISTING = "directory.info"


def without_listings(logs: list[LogFile]) -> tuple[list[LogFile], int]:
    """The log files but YARN's directory listings, and how many were left out."""
    kept = [log for log in logs if log.name != DIRECTORY_LISTING]
    return kept, len(logs) - len(kept)


def appmaster_files(app_id: str) -> list[LogFile]:
    """The AppMaster's log files, of each of its attempts."""
    text = fetch(app_id, AM_FILES)
    return [f for f in files(text or "") if f.appmaster]


def show(log: LogFile) -> str:
    """One log file as `tfyarn logs` prints it: a heading, then its text."""
    return f"==> {log.name} ({log.container} on {log.node}) <==\n{log.text}"


def before_tasks(app_id: str, diagnosis: str) -> tuple[str, LogsError]:
    """For a job that left no task log: its diagnosis and the tail of its AppMaster's log
    (to print), and the error that says so with the fix."""
    lines = [f"{app_id} left no task logs. YARN's diagnosis: {diagnosis or 'none'}"]
    logs = [f for f in appmaster_files(app_id) if f.name == AM_LOG and f.text.strip()]
    if logs:
        last = logs[-1]
        tail = last.text.rstrip("\n").splitlines()[-TAIL_LINES:]
        lines += [f"The end of the AppMaster's log ({last.container}):", *tail]
    error = LogsError(
        f"no task of {app_id} wrote a log: the job ended before its tasks started (the "
        "AppMaster's diagnosis and log above say why).",
        f"fix what they name, then submit again; `tfyarn logs {app_id} --role appmaster` "
        "shows the AppMaster's whole log.")
    return "\n".join(lines), error


def no_such_role(app_id: str, role: str | None, index: int | None, present: list[LogFile]
                 ) -> LogsError:
    """The error for a role (or index) the job left no log of, naming the ones it did."""
    tasks = sorted({f.name.rsplit(".", 1)[0] for f in present})
    which = " ".join(p for p in (role, None if index is None else str(index)) if p)
    return LogsError(f"{app_id} has no logs of {which}: it had no such task (its tasks' logs: "
                     f"{', '.join(tasks)}).",
                     "pick one of those with --role and --index, or leave them out for all.")
