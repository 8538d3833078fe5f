"""The job page's HTML: one region per part of the job view, and the page that holds them.

The page is rendered whole on the first request. It then fetches ``parts.json`` (the same
regions, rendered again) every few seconds and replaces only the regions that changed, so
the reader keeps their place. When the AppMaster is gone, YARN's proxy no longer answers
with the parts: the page then asks the ResourceManager's REST API (same origin through the
proxy) how the job ended and says so.

Fields this module does not know (added to the view later) are shown as they come: simple
values and flat dicts as facts about the job, or as extra columns of the task table.
"""

from __future__ import annotations

import html
import json
import time

from appmaster.common import frameworks, gpus
from appmaster.model import verdicts
from appmaster.page import charts
from appmaster.page.jobpageassets import SCRIPT, STYLE
from appmaster.page.view import cluster_words, queue_line, size_of

# The task row's own fields, as shown after the task's name, its state and its logs link.
TASK_COLUMNS = ("address", "node", "restarts", "exit_code", "yarn_container_id", "container")
NAMED = ("role", "index", "state")  # in the first two columns
# Keys of the view that have their own place on the page (everything else is a "fact").
PLACED = frozenset({"app_id", "name", "state", "generation", "updated", "tasks", "tensorboard",
                    "tensorboard_url", "cluster_spec", "restarts", "phases", "history",
                    "queue"})
EMPTY = (None, "", {}, [])  # a fact with no value is not shown
# The timeline draws a row per task up to this many; past it, the tasks with more than one
# container first (where something happened), then the first of the rest.
TIMELINE_ROWS = 40
# silent_s: in the state cell; progress: the job's, among the facts
# verdicts: under the state too (how YARN ended its earlier containers), so no column widens
# the table
HIDDEN_TASK_KEYS = frozenset({"log_url", "silent_s", "progress", "verdicts"})
REFRESH_MS = 3000
# Up to this many tasks the page shows one table, as it always did; a larger job gets a count
# per role and state, and a table per role, each folded away past GROUP_OPEN_MAX tasks: 1,000
# rows in one table are neither readable nor quick to lay out.
SMALL_JOB = 20
GROUP_OPEN_MAX = 50


def esc(value: object) -> str:
    return html.escape(str(value))


def text_of(value: object) -> str:
    """A field's value as one short line: numbers compact, flat dicts as ``key value`` pairs."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{key} {text_of(item)}" for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(text_of(item) for item in value)
    return str(value)


def label_of(key: str) -> str:
    return key.replace("_", " ")


def mirror_text(mirror: dict, now_s: float) -> str:
    """A task's (or the job's) checkpoint mirroring in a few words (appmaster/agent/mirror.py)."""
    def name(path: str) -> str:
        return str(path).rstrip("/").rsplit("/", 1)[-1]

    parts = []
    if mirror.get("error"):
        parts.append(f"failing: {mirror['error']}")
    if mirror.get("last_sync"):
        parts.append(f"synced {max(0.0, now_s - mirror['last_sync']):.0f} s ago")
    if mirror.get("last_checkpoint"):
        parts.append(name(mirror["last_checkpoint"]))
    if mirror.get("files_up"):
        files = mirror["files_up"]
        parts.append(f"{files} file{'s' if files != 1 else ''} "
                     f"({size_of(mirror.get('bytes_up') or 0)}) up")
    if mirror.get("restored"):
        parts.append(f"restored {name(mirror['restored'])}")
    if mirror.get("warning"):
        parts.append(f"warning: {mirror['warning']}")
    return " · ".join(parts) or "nothing mirrored yet"


def mirrored_anything(mirror: dict) -> bool:
    """Whether a task's mirror has a fact to show. Only the chief syncs up; the others at
    most restore, so an empty mirror means something only for the chief, in the summary."""
    return any(mirror.get(key) for key in ("error", "last_sync", "last_checkpoint", "files_up",
                                           "restored", "warning"))


def progress_text(progress: dict) -> str:
    """How far training got, and the last evaluation, in a few words (agent/tfevents.py)."""
    def scalars(values: dict) -> str:
        return ", ".join(f"{tag.rsplit('/', 1)[-1]} {value:.4g}"
                         for tag, value in list(values.items())[:3])

    parts = []
    if progress.get("step") is not None:
        parts.append(f"step {progress['step']}")
    if progress.get("steps_per_s"):
        parts.append(f"{progress['steps_per_s']:.3g} steps/s")
    if progress.get("scalars"):
        parts.append(scalars(progress["scalars"]))
    evaluation = progress.get("evaluation") or {}
    if evaluation.get("scalars"):
        parts.append(f"evaluated step {evaluation.get('step')}: "
                     f"{scalars(evaluation['scalars'])}")
    return " · ".join(parts) or "no summaries yet"


def field_cell(tag: str, key: str, value: object, now_s: float, classes: str = "") -> str:
    """One field as a table cell or definition: a short text, the whole value on hover."""
    shown = {"mirror": lambda: mirror_text(value, now_s), "gpus": lambda: gpus.page_text(value),
             "progress": lambda: progress_text(value)}
    if key == "mirror" and isinstance(value, dict) and not mirrored_anything(value):
        return f"<{tag}></{tag}>"  # the chief's column: a task that restored nothing
    text = shown[key]() if key in shown and isinstance(value, dict) else text_of(value)
    attrs = f' class="{esc(classes)}"' if classes else ""
    if isinstance(value, (dict, list)):
        attrs += f' title="{esc(json.dumps(value))}"'
    return f"<{tag}{attrs}>{esc(text)}</{tag}>"


def summary_html(view: dict) -> str:
    state = str(view["state"])
    updated = time.strftime("%H:%M:%S UTC", time.gmtime(view["updated"] / 1000))
    now_s = view["updated"] / 1000
    facts = [("generation", view["generation"]),
             *((k, v) for k, v in view.items() if k not in PLACED and v not in EMPTY)]
    items = "".join(f"<div><dt>{esc(label_of(key))}</dt>{field_cell('dd', key, value, now_s)}"
                    "</div>" for key, value in facts)
    waits = (f'<p class="queue">{esc(queue_line(view["queue"]))}</p>' if view.get("queue")
             else "")
    return (f'<span class="state state-{esc(state.lower())}" data-state="{esc(state)}">'
            f"{esc(state)}</span>"
            f'<span class="updated">updated {esc(updated)}</span>{waits}'
            f'<dl class="facts">{items}</dl>')


def task_columns(tasks: list[dict]) -> list[str]:
    """The known columns, then any other field some task has a value for, in order."""
    extra: list[str] = []
    for task in tasks:
        extra += [k for k, v in task.items() if k not in TASK_COLUMNS and k not in NAMED
                  and k not in HIDDEN_TASK_KEYS and k not in extra and v not in (None, "", {})
                  and v is not False  # a flag (straggler) only where it is raised
                  and (k != "gpus" or gpus.worth_showing(v))  # no column when none uses GPUs
                  and (k != "mirror" or mirrored_anything(v))]
    return [*TASK_COLUMNS, *extra]


def tasks_html(view: dict) -> str:
    """One table of every task; for a large job, counts and a folding table per role."""
    tasks = view["tasks"]
    columns = task_columns(tasks)
    now_s = view["updated"] / 1000
    head = "<thead><tr><th>task</th><th>state</th><th>logs</th>" + "".join(
        f"<th>{esc(label_of(c))}</th>" for c in columns) + "</tr></thead>"
    if len(tasks) <= SMALL_JOB:
        rows = "".join(task_row(task, columns, now_s) for task in tasks)
        return f'<table id="task-table">{head}<tbody>{rows}</tbody></table>'
    by_role: dict[str, list[dict]] = {}
    for task in tasks:
        by_role.setdefault(task["role"], []).append(task)
    groups = "".join(role_group(role, group, head, columns, now_s)
                     for role, group in by_role.items())
    return f'{counts_html(by_role)}<div id="task-table">{groups}</div>'


def task_row(task: dict, columns: list[str], now_s: float) -> str:
    cells = "".join(field_cell("td", c, task.get(c), now_s,
                               f"col-{c}" if c in TASK_COLUMNS else f"col-{c} extra")
                    for c in columns)
    link = f'<a href="{esc(task["log_url"])}">logs</a>' if task.get("log_url") else ""
    return (f'<tr class="task-{esc(task["state"])}" '
            f'data-task="{esc(task["role"])}-{esc(task["index"])}">'
            f'<td class="col-task">{esc(task["role"])} {esc(task["index"])}</td>'
            f'<td class="col-state">{esc(task["state"])}{heard_html(task)}'
            f"{ends_html(task)}</td>"
            f'<td>{link}</td>{cells}</tr>')


def state_counts(tasks: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task["state"]] = counts.get(task["state"], 0) + 1
    return counts


def counts_html(by_role: dict[str, list[dict]]) -> str:
    """How many tasks of each role are in each state (only the states some task is in)."""
    counts = {role: state_counts(group) for role, group in by_role.items()}
    states = list(dict.fromkeys(state for row in counts.values() for state in row))
    head = "<th>role</th><th>tasks</th>" + "".join(f"<th>{esc(s)}</th>" for s in states)
    rows = "".join(
        f'<tr data-role="{esc(role)}"><td>{esc(role)}</td><td class="num">{len(by_role[role])}'
        "</td>" + "".join(f'<td class="num count-{esc(s)}">{row.get(s, "")}</td>'
                          for s in states) + "</tr>"
        for role, row in counts.items())
    return f'<table id="task-counts"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def role_group(role: str, tasks: list[dict], head: str, columns: list[str],
               now_s: float) -> str:
    """A role's tasks under a summary line; folded when there are many (the page keeps
    whatever the reader opened or closed across refreshes)."""
    states = ", ".join(f"{count} {state}" for state, count in state_counts(tasks).items())
    opened = " open" if len(tasks) <= GROUP_OPEN_MAX else ""
    rows = "".join(task_row(task, columns, now_s) for task in tasks)
    return (f'<details class="task-group" id="tasks-{esc(role)}"{opened}><summary>'
            f"{esc(role)}: {len(tasks)} task{'s' if len(tasks) != 1 else ''} ({esc(states)})"
            f"</summary><table>{head}<tbody>{rows}</tbody></table></details>")


def heard_html(task: dict) -> str:
    """When the task's agent was last heard from (its heartbeat), under its state."""
    silent = task.get("silent_s")
    return "" if silent is None else f'<br><small class="heard">{silent:.0f} s ago</small>'


def ends_html(task: dict) -> str:
    """How YARN ended the task's earlier containers, by verdict, under its state."""
    text = verdicts.counts_text(task.get("verdicts") or {})
    return f'<br><small class="ends">{esc(text)}</small>' if text else ""


def tensorboard_html(view: dict) -> str:
    if not view.get("tensorboard_url"):
        return ""
    # It answers only YARN's proxy (appmaster/common/pageguard.py): no direct link.
    return '<p>TensorBoard: <a href="../tensorboard/">through YARN\'s proxy</a></p>'


def restarts_html(view: dict) -> str:
    return "<ul>" + ("".join(f"<li>{esc(line)}</li>" for line in view["restarts"])
                     or "<li>none</li>") + "</ul>"


def phases_html(view: dict) -> str:
    rows = "".join(f'<tr><td>{esc(name)}</td><td class="num">{seconds:.3f} s</td></tr>'
                   for name, seconds in view["phases"].items())
    return f"<table>{rows}</table>" if rows else "<p>none yet</p>"


def spec_html(view: dict) -> str:
    if not view["cluster_spec"]:
        return "<p>not published yet (it is, once every task has registered)</p>"
    title, line = cluster_words(view)
    if title != "Cluster spec":
        return f"<p>{esc(line)}</p>"
    return f"<pre>{esc(json.dumps(view['cluster_spec'], indent=2))}</pre>"


def time_range(view: dict) -> tuple[float, float]:
    """The time axis every chart shares: from the first container asked for (or the first
    point) to the view's time."""
    history = view.get("history") or {}
    starts = [span["asked"] for span in history.get("spans", [])]
    starts += [point[0] for point in history.get("training", [])[:1]]
    end = view["updated"] / 1000
    start = min(starts, default=end - 60)
    return start, max(end, start + 1)


def curves_html(view: dict) -> str:
    """Training's step, pace and scalars over time, and the evaluator's metrics by checkpoint,
    with the faults marked where they happened."""
    history = view.get("history") or {}
    training, evaluations = history.get("training", []), history.get("evaluations", [])
    if not training and not evaluations:
        chief = frameworks.of(view.get("framework") or "tensorflow").words.chief
        return (f"<p>no summaries yet: the curves start with {esc(chief)}'s first summary "
                "(an event file) in its work dir</p>")
    x_range, marks = time_range(view), history.get("marks", [])

    def over_time(title: str, chart_id: str, value) -> str:
        points = [(p[0], v) for p in training if (v := value(p)) is not None]
        return charts.line_chart(title, [charts.Series(title, points)], x_range, marks,
                                 chart_id=chart_id)

    step = frameworks.of(view.get("framework") or "tensorflow").words.step
    drawn = [over_time(step, "chart-step", lambda p: p[1]),
             over_time("steps/s", "chart-rate", lambda p: p[2])]
    drawn += [over_time(tag, f"chart-tag-{i}", lambda p, tag=tag: p[3].get(tag))
              for i, tag in enumerate(history.get("training_tags", []))]
    drawn += [charts.line_chart(
        f"evaluated: {tag}", [charts.Series(f"evaluated: {tag}", [
            (p[0], p[1][tag]) for p in evaluations if tag in p[1]])],
        (evaluations[0][0], max(evaluations[-1][0], evaluations[0][0] + 1)), time_axis=False,
        chart_id=f"chart-eval-{i}")
        for i, tag in enumerate(history.get("evaluation_tags", []))]
    key = charts.mark_legend([kind for _, kind, _ in marks])
    return (f'<div class="charts">{"".join(drawn)}</div>'
            + (f'<p class="marks">faults, marked on the charts: {key}</p>' if key else ""))


def timeline_rows(view: dict) -> tuple[list[tuple[str, list[dict]]], int]:
    """The tasks' containers in the task table's order; past TIMELINE_ROWS, the tasks with
    more than one container first. Returns the rows and how many tasks were left out."""
    spans: dict[str, list[dict]] = {}
    for span in (view.get("history") or {}).get("spans", []):
        spans.setdefault(span["task"], []).append(span)
    order = [f"{t['role']} {t['index']}" for t in view["tasks"]]
    if view.get("tensorboard"):
        order.append("tensorboard 0")
    names = [name for name in dict.fromkeys([*order, *spans]) if name in spans]
    if len(names) > TIMELINE_ROWS:
        busy = [name for name in names if len(spans[name]) > 1][:TIMELINE_ROWS]
        rest = [name for name in names if name not in busy][:TIMELINE_ROWS - len(busy)]
        chosen = set(busy + rest)
        names = [name for name in names if name in chosen]
    return [(name, spans[name]) for name in names], len(spans) - len(names)


def timeline_html(view: dict) -> str:
    rows, left_out = timeline_rows(view)
    if not rows:
        return "<p>no containers yet</p>"
    marks = (view.get("history") or {}).get("marks", [])
    key = "".join(f'<span class="bar-key"><i style="background:{colour}"></i>{esc(what)}</span>'
                  for what, colour in (("asked for", charts.WAITING_COLOUR),
                                       ("starting", charts.STARTING_COLOUR),
                                       ("running", charts.OUTCOME_COLOURS["running"]),
                                       ("finished", charts.OUTCOME_COLOURS["finished"]),
                                       ("failed", charts.OUTCOME_COLOURS["failed"]),
                                       ("preempted", charts.OUTCOME_COLOURS["preempted"]),
                                       ("lost", charts.OUTCOME_COLOURS["lost"]),
                                       ("stopped by tfyarn", charts.STOPPED_COLOUR)))
    more = (f"<p>{left_out} more task{'s' if left_out != 1 else ''}, one container each, "
            "not drawn (tasks.json has every container).</p>" if left_out else "")
    return (f'<div class="scroll">{charts.timeline(rows, time_range(view), marks)}</div>'
            f'<p class="bar-keys">{key}</p>{more}')


REGIONS = {"summary": summary_html, "tasks": tasks_html, "tensorboard": tensorboard_html,
           "curves": curves_html, "timeline": timeline_html,
           "restarts": restarts_html, "phases": phases_html, "spec": spec_html}


def render_parts(view: dict) -> dict:
    """What the page fetches to refresh itself: the job's state and every region's HTML."""
    return {"state": view["state"], "regions": {name: render(view)
                                                for name, render in REGIONS.items()}}


def render_page(view: dict, live: bool = True, written: float | None = None,
                note: str = "") -> str:
    """The page. ``live``: served by the AppMaster, refreshing itself; otherwise the report,
    written at ``written``: no script and no link that needs the AppMaster or a network;
    ``note``: a report's word on where it was drawn from, under its heading."""
    regions = render_parts(view)["regions"]

    def region(name: str) -> str:
        return f'<div id="{name}">{regions[name]}</div>'

    if live:
        nav = ('<nav><a href="tasks.json">tasks.json</a><a href="../../overview">skein overview'
               '</a>\n<a id="yarn-app" hidden>YARN application</a></nav>')
        banner = ('<section id="ended" hidden><h2></h2><pre></pre><a hidden>YARN\'s application '
                  "page</a></section>")
        script = f"<script>{SCRIPT}</script>"
    else:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(written or time.time()))
        nav, script = "", ""
        banner = (f'<section id="report"><h2>Report of {esc(view["app_id"])}, written {when}'
                  f"</h2><p>The job was {esc(view['state'])} then. This file does not update; "
                  f"<code>tfyarn report {esc(view['app_id'])}</code> fetches the newest.</p>"
                  + (f'<p id="note">{esc(note)}</p>' if note else "") + "</section>")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(view['name'])} &middot; {esc(view['app_id'])}</title><style>{STYLE}</style></head>
<body data-app-id="{esc(view['app_id'])}" data-refresh-ms="{REFRESH_MS}">
<header><h1>{esc(view['name'])}</h1><span class="app">{esc(view['app_id'])}</span>
{nav}</header>
<main>
{banner}
<section>{region("summary")}</section>
<section><h2>Tasks</h2><div class="scroll">{region("tasks")}</div>{region("tensorboard")}</section>
<section><h2>Training</h2>{region("curves")}</section>
<section><h2>Timeline: each task's containers</h2>{region("timeline")}</section>
<div class="two">
<section><h2>Restarts</h2>{region("restarts")}</section>
<section><h2>Start-up phases (this generation)</h2>{region("phases")}</section>
</div>
<section><details><summary><h2 style="display:inline">{esc(cluster_words(view)[0])}</h2></summary>
{region("spec")}</details></section>
</main>{script}</body></html>"""
