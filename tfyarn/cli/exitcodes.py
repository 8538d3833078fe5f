"""The `tfyarn` command's exit codes: one table, for scripts (README.md, "Exit codes").

0 and 1 are every command's; 3 and 4 say how a job ended, for `submit --wait`, `wait` and
`status --exit-code`; 5 says a job has not ended yet (`status --exit-code`). `tfyarn cluster
status` says with 3 that the local cluster is down (its own meaning, older than this table).
"""

from __future__ import annotations

from tfyarn.hadoop.driver import FINAL_STATES

OK = 0  # the job SUCCEEDED, or the command did what was asked
ERROR = 1  # tfyarn could not do what was asked: bad job files, cluster unreachable, refused
USAGE = 2  # the command line itself is wrong (click's own code)
JOB_FAILED = 3  # the job ended FAILED (or without success: YARN's UNDEFINED at the end)
JOB_KILLED = 4  # the job was killed (tfyarn kill, yarn application -kill, an admin)
JOB_RUNNING = 5  # status --exit-code: the job has not ended yet
INTERRUPTED = 130  # Ctrl-C while following a job (which keeps running unless --kill-on-exit)
CLUSTER_DOWN = 3  # `tfyarn cluster status` only: the local cluster is not running

TABLE = (
    (OK, "the job SUCCEEDED, or the command did what was asked"),
    (ERROR, "tfyarn could not do what was asked (bad input, cluster unreachable, refused)"),
    (USAGE, "the command line is wrong (unknown option, missing argument, nothing after --)"),
    (JOB_FAILED, "the job FAILED (`tfyarn cluster status`: the local cluster is down)"),
    (JOB_KILLED, "the job was KILLED"),
    (JOB_RUNNING, "`status --exit-code`: the job has not ended yet"),
    (INTERRUPTED, "Ctrl-C while following a job"),
)


def of_job(state: str, final_status: str) -> int:
    """The code for a job in YARN's ``state`` with its ``final_status``."""
    state, final_status = str(state), str(final_status)
    if state not in FINAL_STATES:
        return JOB_RUNNING
    if final_status == "SUCCEEDED":
        return OK
    if state == "KILLED" or final_status == "KILLED":
        return JOB_KILLED
    return JOB_FAILED


def of_report(report) -> int:
    """The code for an application report (skein's or tfyarn.hadoop.rmrest's)."""
    return of_job(report.state, report.final_status)


def epilog() -> str:
    """The table as a command's help shows it."""
    return "Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in TABLE) + "."
