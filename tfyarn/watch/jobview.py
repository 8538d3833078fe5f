"""What a job looks like from outside: its task table, live or after the end, and task logs.

While the job runs, the AppMaster serves its task table at ``<tracking URL>/pages/tfyarn``
and each NodeManager serves its containers' log files. After the end, YARN keeps the
AppMaster's log (holding the final task table) and every task's output (``yarn logs``).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import requests

from appmaster.common import frameworks, gpus
from appmaster.common.settings import FAILURE_THRESHOLD
from appmaster.common.vocabulary import STAGES, WAITING, TaskState
from appmaster.model import verdicts
from appmaster.page.view import JobView, TaskRow
from appmaster.page.webpage import FINAL_VIEW_MARKER, PAGE_ROUTE
from tfyarn.errors import TfyarnError
from tfyarn.security import spnego

HTTP_TIMEOUT_S = 5.0


class JobViewError(TfyarnError):
    """The job cannot be shown; the message says why."""


def live_view(tracking_url: str) -> JobView | None:
    """The running AppMaster's task table, or None if it cannot be reached (yet)."""
    if not tracking_url or not tracking_url.startswith("http"):
        return None
    url = tracking_url.rstrip("/") + f"/pages/{PAGE_ROUTE}/tasks.json"
    try:
        response = spnego.get(url, timeout=HTTP_TIMEOUT_S)
        if response.status_code != 200:
            return None
        return JobView.from_dict(response.json())
    except (requests.RequestException, ValueError, TypeError):
        return None


def yarn_logs(app_id: str, *options: str) -> str:
    """`yarn logs` for one application: YARN's own record once it ended."""
    result = subprocess.run(["yarn", "logs", "-applicationId", app_id, *options],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise JobViewError(f"`yarn logs -applicationId {app_id}` failed: "
                           f"{result.stderr.strip()[-500:]}")
    return result.stdout


def aggregated_log_files(text: str) -> Iterator[tuple[str, str, str, str]]:
    """(container, node, file name, contents) for each file in `yarn logs`' output:
    ``Container: <id> on <node>`` then, per file, ``LogType:<name>`` ... ``LogContents:``,
    its text, an empty line and ``End of LogType:<name>``."""
    container = node = name = ""
    body: list[str] | None = None
    for line in text.splitlines():
        if body is not None:
            if line == f"End of LogType:{name}":
                yield container, node, name, "\n".join(body[:-1] if body and not body[-1]
                                                       else body)
                body = None
            else:
                body.append(line)
        elif match := re.match(r"Container: (\S+) on (\S+)$", line):
            container, node = match[1], match[2]
        elif line.startswith("LogType:"):
            name = line.removeprefix("LogType:")
        elif line == "LogContents:" and name:
            body = []


def final_view(app_id: str) -> JobView | None:
    """The task table the AppMaster logged when the job ended (None if not aggregated yet)."""
    try:
        text = yarn_logs(app_id, "-log_files", "application.driver.log")
    except JobViewError:
        return None
    lines = [line for line in text.splitlines() if line.startswith(FINAL_VIEW_MARKER)]
    return JobView.from_dict(json.loads(lines[-1][len(FINAL_VIEW_MARKER):])) if lines else None


# skein's words when the AppMaster's script (appmaster.master.main) exits with 127: the shell could
# not run it. tfyarn's launch lines (appspec.interpreter_check) said why in its log.
DRIVER_NOT_FOUND = "Application driver failed with exit code 127"
LAUNCH_FAILURE_MARK = "tfyarn: cannot start"


def launch_failure(app_id: str, diagnostics: str | None, wait_s: float = 30.0) -> str | None:
    """Why the AppMaster could not start its interpreter, from its log, when skein's
    diagnostics say only "exit code 127, see logs"; None otherwise or when the log cannot
    be read (YARN aggregates it shortly after the end: polled up to ``wait_s``)."""
    if DRIVER_NOT_FOUND not in (diagnostics or ""):
        return None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            text = yarn_logs(app_id, "-log_files", "application.driver.log")
        except JobViewError:
            text = ""
        found = [line for line in text.splitlines() if line.startswith(LAUNCH_FAILURE_MARK)]
        if found or time.monotonic() > deadline:
            return found[-1] if found else None
        time.sleep(2.0)


@dataclass(frozen=True)
class LogChunk:
    length: int  # the file's whole length, as the NodeManager reports it
    text: str  # its last bytes


def node_log_tail(node: str, container_id: str, file_name: str, size: int = 65536) -> LogChunk:
    """The last ``size`` bytes of a live container's log file, from its NodeManager."""
    url = f"http://{node}/ws/v1/node/containerlogs/{container_id}/{file_name}"
    response = spnego.get(url, params={"size": str(-size)}, timeout=HTTP_TIMEOUT_S)
    response.raise_for_status()
    return parse_log_dump(response.text)


def parse_log_dump(dump: str) -> LogChunk:
    """Split YARN's `LogType/LogLength/LogContents ... End of LogType` framing."""
    length_match = re.search(r"^LogLength:(\d+)$", dump, re.MULTILINE)
    start = dump.find("LogContents:\n")
    end = dump.rfind("\nEnd of LogType:")
    if length_match is None or start < 0:
        return LogChunk(0, "")
    body = dump[start + len("LogContents:\n"): end if end >= 0 else len(dump)]
    return LogChunk(int(length_match.group(1)), body)


def role_counts(view: JobView) -> dict[str, dict[str, int]]:
    """Per role: how many tasks are requested, allocated, registered, running, finished."""
    counts: dict[str, dict[str, int]] = {}
    for task in view.tasks:
        row = counts.setdefault(task.role, dict.fromkeys(STAGES, 0))
        for stage in task.stages:
            row[stage] += 1
    return counts


def format_progress(view: JobView) -> str:
    parts = []
    for role, row in role_counts(view).items():
        parts.append(f"{role} " + "/".join(str(row[s]) for s in row))
    line = (f"{view.state} gen {view.generation}: " + "  ".join(parts)
            + "  (requested/allocated/registered/running/finished)")
    step = (view.progress or {}).get("step")
    return line if step is None else f"{line} step {step}{_pace(view.progress)}"


def live_line(view: JobView, chief_output: str | None) -> str:
    """`submit --wait`'s line of a running job: its progress, and the chief's (rank 0's) last
    line of output."""
    line = format_progress(view)
    if chief_output:
        line += f" | {frameworks.of(view.framework).words.chief_label}: {chief_output}"
    return line


def _pace(figures: dict) -> str:
    rate = figures.get("steps_per_s")
    return "" if rate is None else f" ({rate:.3g} steps/s)"


def _scalars(scalars: dict[str, float], limit: int = 6) -> str:
    shown = [f"{tag} {value:.4g}" for tag, value in list(scalars.items())[:limit]]
    more = len(scalars) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def progress_lines(view: JobView, now: float) -> list[str]:
    """How far training got and the last evaluation, from the tasks' event files."""
    figures = view.progress
    lines = [f"Stall watchdog: {view.watchdog}"] if view.watchdog else []
    if not figures:
        return lines
    if figures.get("step") is not None:
        age = (f", {now - figures['updated']:.0f} s ago" if figures.get("updated") else "")
        step = frameworks.of(view.framework).words.step
        lines.append(f"Training: {step} {figures['step']}{_pace(figures)}{age}"
                     + (f": {_scalars(figures['scalars'])}" if figures.get("scalars") else ""))
    evaluation = figures.get("evaluation") or {}
    if evaluation.get("scalars"):
        lines.append(f"Last evaluation (checkpoint step {evaluation.get('step')}): "
                     f"{_scalars(evaluation['scalars'])}")
    return lines


def format_table(view: JobView, tasks: list[TaskRow] | None = None,
                 why: dict[str, str] | None = None) -> str:
    """A row per task (``tasks``, default every task); ``why``: a last column, by task name."""
    tasks = view.tasks if tasks is None else tasks
    columns = [("role", "ROLE"), ("index", "IDX"), ("state", "STATE"), ("address", "HOST:PORT"),
               ("yarn_container_id", "CONTAINER"), ("node", "NODE"), ("restarts", "RESTARTS"),
               ("exit_code", "EXIT"), ("silent_s", "HEARD"), ("gpus", "GPUS"),
               ("log_url", "LOGS")]
    if not any(gpus.worth_showing(task.gpus) for task in tasks):
        columns.remove(("gpus", "GPUS"))  # a job without GPUs
    if any(task.processes for task in tasks):  # several per container
        columns.insert(columns.index(("exit_code", "EXIT")), ("processes", "PROCS"))
    if any(task.step is not None for task in tasks):  # its processes report their steps
        columns[columns.index(("silent_s", "HEARD")):0] = [("step", "STEP"),
                                                            ("steps_per_s", "STEPS/S")]
    if any(task.verdicts for task in tasks):  # how YARN ended its containers
        columns.insert(columns.index(("exit_code", "EXIT")), ("verdicts", "ENDS"))
    shown = {"gpus": lambda value: gpus.short_text(value),
             "verdicts": lambda value: verdicts.counts_text(value) or "-",
             "silent_s": lambda value: f"{value:.0f}s ago"}  # its agent's last heartbeat
    rows = [[shown.get(key, str)(value) if (value := _cell(task, key)) is not None else "-"
             for key, _ in columns] for task in tasks]
    header = [title for _, title in columns]
    if why is not None:
        header.append("WHY")
        rows = [[*row, why.get(task.name, "")] for row, task in zip(rows, tasks, strict=True)]
    return aligned([header, *rows])


def _cell(task: TaskRow, key: str):
    """A task's value for a column; an ended task's agent is heard no more (its last
    heartbeat's age was the view's, not now's)."""
    if key == "silent_s" and TaskState(task.state).ended:
        return None
    return getattr(task, key)


def aligned(rows: list[list[str]]) -> str:
    """Rows of cells as columns, two spaces apart (a header row first)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


# Up to this many tasks `tfyarn status` shows every row, as it always did; a larger job is
# summed up per role and state, with only the tasks that need attention listed.
SMALL_JOB = 20
# A task still short of registering while others already train: slow (its node, its
# localization), worth a look.
NOT_REGISTERED = (*WAITING, TaskState.ALLOCATED, TaskState.STARTED)


def attention(view: JobView) -> dict[str, str]:
    """The tasks that need a look, by name, with why: failed, ended by YARN (lost, killed,
    preempted), started again after a failure, or slow to register while others run."""
    training = any(task.state == TaskState.RUNNING for task in view.tasks)
    why: dict[str, str] = {}
    for task in view.tasks:
        reasons = []
        if task.state == TaskState.FAILED:
            reasons.append("failed")
        if task.verdicts:
            reasons.append(f"ends: {verdicts.counts_text(task.verdicts)}")
        if task.straggler:
            reasons.append(f"straggler on {(task.node or '?').rsplit(':', 1)[0]}: "
                           f"{task.steps_per_s:g} steps/s, under half the median of the job's "
                           "tasks")
        if task.restarts and task.state in (*NOT_REGISTERED, TaskState.REGISTERED):
            reasons.append(f"starting again (attempt {task.restarts})")
        elif training and task.state in NOT_REGISTERED:
            reasons.append(f"not registered yet ({task.state}) while others run")
        if reasons:
            why[task.name] = "; ".join(reasons)
    return why


def state_counts(view: JobView) -> str:
    """Per role, how many tasks are in each state (only the states some task is in)."""
    states = [s for s in TaskState if any(task.state == s for task in view.tasks)]
    counts: dict[str, Counter[str]] = {}
    for task in view.tasks:
        counts.setdefault(task.role, Counter())[task.state] += 1
    header = ["ROLE", "TASKS", *(s.upper() for s in states)]
    rows = [[role, str(sum(c.values())), *(str(c[s]) if c[s] else "-" for s in states)]
            for role, c in counts.items()]
    return aligned([header, *rows])


def format_status(view: JobView, role: str | None = None, state: str | None = None,
                  show_all: bool = False) -> str:
    """`tfyarn status`'s task part: every row for a small job, ``show_all`` or a filter (of
    ``role`` and/or ``state``); else a count per role and state, then the tasks that need
    attention, so a job of 1,000 tasks reads at a glance."""
    tasks = [t for t in view.tasks if (role is None or t.role == role)
             and (state is None or t.state == state)]
    why = attention(view)
    if role or state:
        return format_table(view, tasks, why) if tasks else "No task matches."
    if show_all or len(view.tasks) <= SMALL_JOB:  # a straggler says why
        return format_table(view, why=why if any(t.straggler for t in view.tasks) else None)
    flagged = [t for t in view.tasks if t.name in why]
    lines = [state_counts(view), ""]
    if flagged:
        lines += [f"Needing attention ({len(flagged)} of {len(view.tasks)} tasks; --all shows "
                  "every task, --role/--state some):", format_table(view, flagged, why)]
    else:
        lines.append(f"No task needs attention ({len(view.tasks)} tasks; --all shows every "
                     "task, --role/--state some).")
    return "\n".join(lines)


def gpu_lines(view: JobView) -> list[str]:
    """Each task's GPUs as it saw them (index, model, memory, UUID), or why it has none."""
    lines = []
    for task in view.tasks:
        summary = task.gpus
        if not summary:
            continue
        name = task.name
        if summary.get("error"):
            lines.append(f"  {name}: no GPUs: {summary['error']}")
        elif summary.get("devices"):
            how = ("its own" if summary.get("isolated")
                   else f"held of the {summary.get('seen')} its node shows")
            lines += [f"  {name}: {gpus.device_text(d)} ({how})" for d in summary["devices"]]
    return lines


def verdict_lines(view: JobView) -> list[str]:
    """The job's containers' ends by YARN's verdict, and which of them count as failures."""
    if not view.verdicts:
        return []
    line = f"Container ends: {verdicts.counts_text(view.verdicts)}"
    taken = [str(v) for v in verdicts.SHOWN if not v.counted and view.verdicts.get(v)]
    if taken:
        line += (f" ({' and '.join(taken)}: YARN took the container back; not counted "
                 f"against {FAILURE_THRESHOLD.key})")
    return [line]


def liveness_lines(view: JobView) -> list[str]:
    """Hosts where tasks were lost (silent past the heartbeat timeout)."""
    if not view.lost_nodes:
        return []
    return [f"Lost hosts (a task there was silent for more than "
            f"{view.heartbeat_timeout_s:.0f} s; replacements go elsewhere): "
            + ", ".join(view.lost_nodes)]


def storage_lines(view: JobView, now: float) -> list[str]:
    """Where the job's work dir is, and how the tasks' local dirs stand against it: the
    newest checkpoint on HDFS, how long ago it was synced, failures and warnings."""
    if not view.work_dir:
        return []
    lines = [f"Work dir: {view.work_dir}"]
    for task in view.tasks:
        mirror = task.mirror or {}
        name = task.name
        if mirror.get("last_sync") or mirror.get("error"):
            synced = (f"{now - mirror['last_sync']:.0f} s ago" if mirror.get("last_sync")
                      else "not yet")
            if frameworks.of(view.framework).ranks:  # its snapshots are files like others
                on_hdfs = f"{mirror.get('files_up') or 0} file(s) copied up"
            else:
                on_hdfs = f"newest checkpoint on HDFS {mirror.get('last_checkpoint') or 'none yet'}"
            lines.append(f"  {name} mirrors its local dir every {mirror['interval_s']:.0f} s: "
                         f"synced {synced}, {on_hdfs}")
        if mirror.get("error"):
            lines.append(f"  {name}: mirroring failing for {now - mirror['failing_since']:.0f} s "
                         f"(retrying): {mirror['error']}")
        if mirror.get("warning"):
            lines.append(f"  {name}: WARNING {mirror['warning']}")
        if mirror.get("restored") and task.restarts:
            lines.append(f"  {name} started from {mirror['restored']} (restored from HDFS)")
    return lines


def chief_progress(view: JobView) -> str | None:
    """The chief's last line of output, fetched from its NodeManager while it runs."""
    chief = view.chief
    if not chief or chief.state != TaskState.RUNNING or not chief.node:
        return None
    try:
        chunk = node_log_tail(chief.node, chief.yarn_container_id or "",
                              f"{chief.role}-0.stdout", size=2048)
    except requests.RequestException:
        return None
    lines = [line for line in chunk.text.splitlines() if line.strip()]
    return lines[-1][:120] if lines else None
