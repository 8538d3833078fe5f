"""Tables and plots from bench/results/*.json.

    python -m bench.report [--results bench/results]   # prints Markdown tables, writes PNGs

Every figure is a median over the repetitions (min–max in brackets in the tables). A
phase is the difference of two milestones of the same run; medians of phases need not add
up to the median of the whole.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from bench.common import RESULTS, fmt, median, rel, spread

# ---------------------------------------------------------------- the seed job

# The phases, in order.
SEED_PHASES = [
    ("submit → AM running", "submit", "am_running"),
    ("AM running → all containers allocated", "am_running", "allocated"),
    ("allocated → all registered", "allocated", "all_registered"),
    ("registered → every task's first step", "all_registered", "training"),
    ("first step → job end", "training", "job_end"),
]
SEED_TOTALS = [
    ("submit → every task training", "submit", "training"),
    ("submit → job end", "submit", "job_end"),
]
# Every milestone, in the order they happen, for the detailed table.
SEED_MILESTONES = [
    ("submit", "bench starts `submit`"),
    ("rm_accepted", "the RM has the application (REST startedTime)"),
    ("am_container_launched", "the RM launched the AM container (REST launchTime)"),
    ("am_running", "the AM registered: app RUNNING (RM log)"),
    ("master_up", "master.py's first log line"),
    ("requested", "master.py asked for the containers"),
    ("allocated", "the RM allocated the last container (RM log)"),
    ("acquired", "the AM picked up the last one (RM log)"),
    ("containers_running", "the last container runs on its NM (RM log)"),
    ("all_started", "every agent reported in (AM phase)"),
    ("all_registered", "every task exported host:port (AM phase)"),
    ("spec_published", "cluster spec published (AM phase)"),
    ("all_running", "every agent started its script (AM phase)"),
    ("scripts_started", "every script recorded its flags (file mtime)"),
    ("training", "every worker printed its first step (stdout)"),
    ("chief_done", "the chief wrote result.json"),
    ("chief_finished_am", "master.py logged the chief finished"),
    ("job_end", "the application finished (REST finishedTime)"),
]
# Segments of the waterfall plot: milestones every kind of run has (where it has them).
WATERFALL = [
    ("submit", "am_running", "submit → AM running"),
    ("am_running", "allocated", "→ containers allocated"),
    ("allocated", "containers_running", "→ containers running"),
    ("containers_running", "scripts_started", "→ scripts started (agent + rendezvous)"),
    ("scripts_started", "training", "→ every task's first step (TF start)"),
    ("training", "chief_done", "→ chief done (training)"),
    ("chief_done", "job_end", "→ job end"),
]
KIND_LABEL = {"tfyarn": "tfyarn", "skein": "floor (b) plain skein", "local": "floor (a) by hand"}
MAIN = "current"  # the variant the tables are about; the others are compared with it
ORDER = ["before", "current", "next"]


def variant_order(name: str) -> tuple[int, str]:
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


def tfyarn_keys(by: dict) -> list[str]:
    """'tfyarn <variant>' keys in variant order."""
    return sorted((k for k in by if k.startswith("tfyarn ")), key=lambda k: variant_order(k[7:]))


def load(results: Path, name: str) -> dict | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def good(runs: Iterable[dict]) -> list[dict]:
    return [r for r in runs if not r.get("error")]


def groups(data: dict) -> dict[str, list[dict]]:
    """Runs by label: 'tfyarn current', 'tfyarn before', 'skein', 'local'..."""
    out: dict[str, list[dict]] = {}
    for run in good(data["runs"]):
        label = f"tfyarn {run['variant']}" if run["kind"] == "tfyarn" else run["kind"]
        out.setdefault(label, []).append(run)
    return out


def label_of(key: str) -> str:
    if key.startswith("tfyarn"):
        return key
    return KIND_LABEL.get(key, key)


def cell(runs: list[dict], a: str, b: str) -> str:
    values = [rel(r["t"], a, b) for r in runs]
    mid, lo_hi = median(values), spread(values)
    if mid is None:
        return "–"
    return f"{mid:.2f} ({lo_hi[0]:.1f}–{lo_hi[1]:.1f})"


def print_run(record: dict) -> None:
    if record.get("error"):
        return
    t = record["t"]
    parts = [f"{name.split(' → ')[-1]} +{fmt(rel(t, a, b))}" for name, a, b in SEED_PHASES
             if rel(t, a, b) is not None] if "am_running" in t else []
    total = rel(t, "submit", "training") if "training" in t else rel(t, "submit", "tasks_started")
    print(f"    {record['kind']} {record.get('variant', '')} {record.get('app_id', '')}: "
          f"submit → training/started {fmt(total)} s; " + "; ".join(parts), flush=True)


def seed_tables(data: dict) -> str:
    by = groups(data)
    keys = tfyarn_keys(by) + [k for k in ("skein", "local") if k in by]
    lines = [f"Median of {data['runs_per_kind']} runs, seconds (min–max).", ""]
    header = "| phase | " + " | ".join(f"{label_of(k)} (n={len(by[k])})" for k in keys) + " |"
    lines += [header, "|---" * (len(keys) + 1) + "|"]
    for name, a, b in SEED_PHASES + SEED_TOTALS:
        lines.append(f"| {name} | " + " | ".join(cell(by[k], a, b) for k in keys) + " |")
    lines += ["", "Every milestone, seconds after submit (median):", ""]
    lines += ["| milestone | source | " + " | ".join(label_of(k) for k in keys) + " |",
              "|---" * (len(keys) + 2) + "|"]
    for key, text in SEED_MILESTONES:
        row = [fmt(median(rel(r["t"], "submit", key) for r in by[k])) for k in keys]
        if any(x != "-" for x in row):
            lines.append(f"| `{key}` | {text} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def overhead_lines(data: dict) -> str:
    """tfyarn's overhead over each floor, submit -> every task training, ratio and seconds."""
    by = groups(data)
    out = ["| tfyarn vs floor | submit → every task training | overhead (s) | ratio |",
           "|---|---|---|---|"]
    for key in tfyarn_keys(by):
        ours = median(rel(r["t"], "submit", "training") for r in by[key])
        for floor in ("local", "skein"):
            if floor not in by or ours is None:
                continue
            theirs = median(rel(r["t"], "submit", "training") for r in by[floor])
            if theirs:
                out.append(f"| {label_of(key)} vs {KIND_LABEL[floor]} | {ours:.2f} vs "
                           f"{theirs:.2f} | {ours - theirs:+.2f} | {ours / theirs:.2f}× |")
    return "\n".join(out)


def print_seed_summary(data: dict) -> None:
    print(seed_tables(data))
    print()
    print(overhead_lines(data))


def plot_seed(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = groups(data)
    keys = [k for k in ("local", "skein") if k in by] + tfyarn_keys(by)
    colors = plt.cm.tab10.colors
    fig, ax = plt.subplots(figsize=(11, 2.2 + 0.8 * len(keys)))
    for row, key in enumerate(keys):
        left = 0.0
        for i, (a, b, _) in enumerate(WATERFALL):
            seg = median(rel(r["t"], a, b) for r in by[key])
            if seg is None:
                continue
            ax.barh(row, seg, left=left, color=colors[i % 10])
            if seg > 1.2:
                ax.text(left + seg / 2, row, f"{seg:.1f}", ha="center", va="center", fontsize=8)
            left += seg
        if key == "local":  # nothing before the scripts start but the bench's own start
            seg = median(rel(r["t"], "submit", "scripts_started") for r in by[key])
            if seg:
                ax.barh(row, seg, left=0, color="lightgrey")
                left_text = seg
                ax.text(left_text / 2, row, f"{seg:.1f}", ha="center", va="center", fontsize=8)
    ax.set_yticks(range(len(keys)), [label_of(k) for k in keys])
    ax.set_xlabel("seconds after submit (median of each phase)")
    ax.set_title("Seed job (1 ps, 1 chief, 2 workers): where the time goes")
    from matplotlib.patches import Patch

    legend = [Patch(color=colors[i % 10], label=name) for i, (_, _, name) in enumerate(WATERFALL)]
    if "local" in keys:
        legend.append(Patch(color="lightgrey", label="by hand: start → scripts started"))
    ax.legend(handles=legend, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18),
              ncol=4, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- rendezvous at scale

LIGHT_STEPS = [
    ("submit → AM running", "submit", "am_running"),
    ("AM running → master.py asked for containers", "am_running", "requested"),
    ("AM running → all allocated", "am_running", "allocated"),
    ("allocated → containers running", "allocated", "containers_running"),
    ("containers running → agents started", "containers_running", "all_started"),
    ("agents started → all registered", "all_started", "all_registered"),
    ("last export → spec published", "all_registered", "spec_published"),
    ("spec published → all scripts launched", "spec_published", "all_running"),
    ("last export → every task started", "all_registered", "tasks_started"),
]
USAGE_COLUMNS = [
    ("python_cpu_s", "master.py CPU s"), ("python_peak_rss_mb", "master.py peak RSS MB"),
    ("java_cpu_s", "Java AM CPU s"), ("java_peak_rss_mb", "Java AM peak RSS MB"),
]


def usage(run: dict, key: str) -> float | None:
    """An AppMaster figure: master.py's own getrusage line when it logs one, else /proc."""
    meta = run.get("meta", {})
    if key == "python_cpu_s" and "python_cpu_s_logged" in meta:
        return meta["python_cpu_s_logged"]
    if key == "python_peak_rss_mb" and "python_peak_rss_kb_logged" in meta:
        return round(meta["python_peak_rss_kb_logged"] / 1024, 1)
    return meta.get(key)


def print_light_run(record: dict) -> None:
    if record.get("error"):
        return
    t = record["t"]
    extra = ""
    if record["kind"] == "tfyarn":
        last = fmt(rel(t, "all_registered", "tasks_started"))
        am = ", ".join(f"{k} {v}" for k, v in record["meta"].items()
                       if k.endswith(("_s", "_mb", "_logged")))
        extra = f"; last export → every task started {last} s; AM {am}"
    print(f"    N={record['n']} {record['kind']} {record['variant']} {record.get('app_id', '')}: "
          f"submit → every task started {fmt(rel(t, 'submit', 'tasks_started'))} s" + extra,
          flush=True)


def light_by_n(data: dict, kind: str, variant: str = MAIN) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for run in good(data["runs"]):
        if run["kind"] == kind and (kind != "tfyarn" or run["variant"] == variant):
            out.setdefault(run["n"], []).append(run)
    return out


def light_variants(data: dict) -> list[str]:
    names = {r["variant"] for r in good(data["runs"]) if r["kind"] == "tfyarn"}
    return sorted(names, key=variant_order)


def light_tables(data: dict) -> str:
    return "\n\n".join(light_table(data, v) for v in light_variants(data))


def light_table(data: dict, variant: str = MAIN) -> str:
    ours, floor = light_by_n(data, "tfyarn", variant), light_by_n(data, "skein")
    sizes = sorted(ours)
    lines = [f"**tfyarn {variant}.** Median of up to {data['runs_per_n']} runs per N, seconds "
             f"(min–max). Cluster: {data.get('cluster', '?')}.", ""]
    lines += ["| N | submit → every task started, tfyarn | floor (b) plain skein | overhead (s) "
              "| ratio | last export → every task started | "
              + " | ".join(title for _, title in USAGE_COLUMNS) + " |",
              "|---" * (6 + len(USAGE_COLUMNS)) + "|"]
    for n in sizes:
        mine = median(rel(r["t"], "submit", "tasks_started") for r in ours[n])
        base = median(rel(r["t"], "submit", "tasks_started") for r in floor.get(n, []))
        over = f"{mine - base:+.2f}" if mine is not None and base else "–"
        ratio = f"{mine / base:.2f}×" if mine is not None and base else "–"
        am = [fmt(median(usage(r, key) for r in ours[n]), 1) for key, _ in USAGE_COLUMNS]
        lines.append(f"| {n} | {cell(ours[n], 'submit', 'tasks_started')} | "
                     f"{cell(floor.get(n, []), 'submit', 'tasks_started')} | {over} | {ratio} | "
                     f"{cell(ours[n], 'all_registered', 'tasks_started')} | "
                     + " | ".join(am) + " |")
    for n, reason in sorted(data.get("skipped", {}).items(), key=lambda kv: int(kv[0])):
        lines.append(f"| {n} | skipped: {reason} |")
    lines += ["", "tfyarn's phases by N (median, seconds):", "",
              "| phase | " + " | ".join(f"N={n}" for n in sizes) + " |",
              "|---" * (len(sizes) + 1) + "|"]
    for name, a, b in LIGHT_STEPS:
        lines.append(f"| {name} | " + " | ".join(
            fmt(median(rel(r["t"], a, b) for r in ours[n])) for n in sizes) + " |")
    return "\n".join(lines)


def plot_rendezvous(data: dict, path: Path, variant: str = MAIN) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours, floor = light_by_n(data, "tfyarn", variant), light_by_n(data, "skein")
    sizes = sorted(ours)
    if not sizes:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.5))

    def series(runs: dict[int, list[dict]], a: str, b: str) -> tuple[list[int], list[float]]:
        pts = [(n, median(rel(r["t"], a, b) for r in runs[n])) for n in sorted(runs)]
        pts = [(n, v) for n, v in pts if v is not None]
        return [n for n, _ in pts], [v for _, v in pts]

    for runs, a, b, label, style in [
        (ours, "submit", "tasks_started", f"tfyarn {variant}: submit → every task started", "o-"),
        (floor, "submit", "tasks_started", "floor (b) plain skein: submit → every task started",
         "s--"),
        (ours, "am_running", "allocated", f"tfyarn {variant}: AM running → all allocated", "^-"),
        (ours, "containers_running", "all_registered",
         f"tfyarn {variant}: containers running → all registered", "v-"),
        (ours, "all_registered", "tasks_started",
         f"tfyarn {variant}: last export → every task started", "d-"),
        *[(light_by_n(data, "tfyarn", v), "submit", "tasks_started",
           f"tfyarn {v}: submit → every task started", {"before": "o:"}.get(v, "o--"))
          for v in light_variants(data) if v != variant],
    ]:
        xs, ys = series(runs, a, b)
        if xs:
            left.plot(xs, ys, style, label=label)
    left.set_xscale("log", base=2)
    left.set_xticks(sizes, [str(n) for n in sizes])
    left.set_xlabel("tasks (N)")
    left.set_ylabel("seconds (median)")
    left.set_title("Rendezvous at scale: light tasks")
    left.legend(fontsize=7)
    left.grid(alpha=0.3)
    memory = right.twinx()
    for key, title in USAGE_COLUMNS:
        for v in light_variants(data):
            runs = light_by_n(data, "tfyarn", v)
            xs = [n for n in sorted(runs) if median(usage(r, key) for r in runs[n]) is not None]
            ys = [median(usage(r, key) for r in runs[n]) for n in xs]
            axis = right if "cpu" in key else memory
            style = ("o" if "python" in key else "s") + {"before": ":", "next": "--"}.get(v, "-")
            if xs:
                axis.plot(xs, ys, style, color="tab:blue" if "cpu" in key else "tab:red",
                          label=f"{title} ({v})")
    right.set_xscale("log", base=2)
    right.set_xticks(sizes, [str(n) for n in sizes])
    right.set_xlabel("tasks (N)")
    right.set_ylabel("CPU seconds (blue)")
    memory.set_ylabel("peak RSS, MB (red)")
    right.set_title("AppMaster: CPU seconds and peak RSS")
    lines = right.get_legend_handles_labels()
    more = memory.get_legend_handles_labels()
    right.legend(lines[0] + more[0], lines[1] + more[1], fontsize=6, loc="upper center",
                 bbox_to_anchor=(0.5, -0.15), ncol=3, frameon=False)
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- recovery

RECOVERY_STEPS = [
    ("kill → the AM heard of the failure", "kill", "failure_heard"),
    ("heard → new container(s) allocated", "failure_heard", "allocated"),
    ("allocated → container(s) running", "allocated", "containers_running"),
    ("running → registered again", "containers_running", "registered"),
    ("registered → script(s) started", "registered", "scripts_started"),
    ("script(s) started → training again", "scripts_started", "training_again"),
]
RECOVERY_TOTAL = ("kill → training again", "kill", "training_again")
RECOVERY_SCRIPTS = ("kill → script(s) started again", "kill", "scripts_started")


def print_recovery_run(record: dict) -> None:
    if record.get("error"):
        return
    t = record["t"]
    parts = [f"{name.split(' → ')[-1]} +{fmt(rel(t, a, b))}" for name, a, b in RECOVERY_STEPS
             if rel(t, a, b) is not None]
    print(f"    {record['victim']} killed, {record['kind']} {record.get('app_id', '')}: kill → "
          f"training again {fmt(rel(t, 'kill', 'training_again'))} s; " + "; ".join(parts)
          + f" {record.get('meta', {})}", flush=True)


def recovery_groups(data: dict) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for run in good(data["runs"]):
        label = f"tfyarn {run['variant']}" if run["kind"] == "tfyarn" else run["kind"]
        out.setdefault((run["victim"], label), []).append(run)
    return out


def recovery_tables(data: dict) -> str:
    by = recovery_groups(data)
    title = {"local": "by hand (floor)"}
    out = [f"Median of {data['runs_per_kind']} runs, seconds (min–max)."]

    def rcell(runs: list[dict], a: str, b: str) -> str:
        text = cell(runs, a, b)
        stuck = sum(1 for r in runs if r.get("meta", {}).get("stuck"))
        if b == "training_again" and stuck:
            text = f"never in {stuck}/{len(runs)} runs¹" + ("" if text == "–" else f"; {text}")
        return text

    for victim in ("worker", "ps"):
        keys = sorted((k for k in by if k[0] == victim),
                      key=lambda k: (k[1] == "local", variant_order(k[1][7:])))
        if not keys:
            continue
        heads = [f"{title.get(k, label_of(k))} (n={len(by[(v, k)])})" for v, k in keys]
        out += ["", f"**{victim} killed**", "",
                "| phase | " + " | ".join(heads) + " |", "|---" * (len(keys) + 1) + "|"]
        for name, a, b in [*RECOVERY_STEPS, RECOVERY_SCRIPTS, RECOVERY_TOTAL]:
            out.append(f"| {name} | " + " | ".join(rcell(by[key], a, b) for key in keys) + " |")
    stuck = [r["meta"]["stuck"] for runs in by.values() for r in runs
             if r.get("meta", {}).get("stuck")]
    if stuck:
        refused = [int(m.group(1)) for note in stuck
                   if (m := re.search(r"Connection refused' lines in its stderr: (\d+)", note))]
        out += ["", f"¹ In {len(stuck)} run(s) the replacement printed no step within 60 s of "
                "its start" + (f"; its stderr had {min(refused)}–{max(refused)} 'Connection "
                               "refused' lines" if refused else "") + "."]
    out += ["", "| tfyarn vs by hand | kill → training again | overhead (s) | ratio |",
            "|---|---|---|---|"]
    for victim, label in sorted(by, key=lambda k: (k[0] != "worker", variant_order(k[1][7:]))):
        if label == "local" or (victim, "local") not in by:
            continue
        ours = median(rel(r["t"], "kill", "training_again") for r in by[(victim, label)])
        floor = median(rel(r["t"], "kill", "training_again") for r in by[(victim, "local")])
        if ours is not None and floor:
            out.append(f"| {victim} killed, {label_of(label)} | {ours:.2f} vs {floor:.2f} | "
                       f"{ours - floor:+.2f} | {ours / floor:.2f}× |")
    return "\n".join(out)


def plot_recovery(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = recovery_groups(data)
    keys = sorted(by, key=lambda k: (k[0] != "worker", k[1] == "local", variant_order(k[1][7:])))
    if not keys:
        return
    colors = plt.cm.tab10.colors
    fig, ax = plt.subplots(figsize=(11, 2.2 + 0.8 * len(keys)))
    for row, key in enumerate(keys):
        left = 0.0
        steps = [RECOVERY_SCRIPTS, RECOVERY_STEPS[-1]] if key[1] == "local" else RECOVERY_STEPS
        for name, a, b in steps:
            seg = median(rel(r["t"], a, b) for r in by[key])
            if seg is None:
                continue
            i = [s[0] for s in RECOVERY_STEPS].index(name) if name in [
                s[0] for s in RECOVERY_STEPS] else 7
            ax.barh(row, seg, left=left, color=colors[i % 10], label=name)
            if seg > 1.0:
                ax.text(left + seg / 2, row, f"{seg:.1f}", ha="center", va="center", fontsize=8)
            left += seg
        stuck = sum(1 for r in by[key] if r.get("meta", {}).get("stuck"))
        if stuck:
            ax.text(left + 0.2, row, f"stuck: no step ({stuck}/{len(by[key])} runs)",
                    va="center", fontsize=8, color="darkred")
    ax.set_yticks(range(len(keys)),
                  [f"{v} killed: {'by hand' if k == 'local' else label_of(k)}" for v, k in keys])
    ax.set_xlabel("seconds after kill -9 (median of each phase)")
    ax.set_title("Recovery: kill -9 → training again")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=False))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.22), ncol=4, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- floors


def floors_tables(seed: dict | None, light: dict | None) -> str:
    lines = []
    if seed:
        lines += ["Seed job, submit → every task's first training step:", "",
                  overhead_lines(seed), ""]
    if light:
        ours, floor = light_by_n(light, "tfyarn"), light_by_n(light, "skein")
        lines += [f"Light tasks, submit → every task started (tfyarn {MAIN} vs floor (b)):", "",
                  "| N | tfyarn | floor (b) plain skein | overhead (s) | ratio |",
                  "|---|---|---|---|---|"]
        for n in sorted(ours):
            mine = median(rel(r["t"], "submit", "tasks_started") for r in ours[n])
            base = median(rel(r["t"], "submit", "tasks_started") for r in floor.get(n, []))
            if mine is None or not base:
                continue
            lines.append(f"| {n} | {mine:.2f} | {base:.2f} | {mine - base:+.2f} | "
                         f"{mine / base:.2f}× |")
    return "\n".join(lines)


def plot_floors(seed: dict | None, light: dict | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    if seed:
        by = groups(seed)
        keys = [k for k in ("local", "skein") if k in by] + tfyarn_keys(by)
        for i, key in enumerate(keys):
            scripts = median(rel(r["t"], "submit", "scripts_started") for r in by[key])
            total = median(rel(r["t"], "submit", "training") for r in by[key])
            if total is None:
                continue
            left.bar(i, scripts or 0, color="tab:blue",
                     label="submit → every script started" if i == 0 else None)
            left.bar(i, total - (scripts or 0), bottom=scripts or 0, color="tab:orange",
                     label="→ every task's first step (TensorFlow)" if i == 0 else None)
            left.text(i, total, f"{total:.1f}", ha="center", va="bottom", fontsize=9)
        left.set_xticks(range(len(keys)), [label_of(k).replace(" ", "\n", 1) if k in (
            "local", "skein") else label_of(k) for k in keys], fontsize=8)
        left.set_ylabel("seconds (median)")
        left.set_title("Seed job: submit → every task training")
        left.legend(fontsize=7)
    if light:
        ours, floor = light_by_n(light, "tfyarn"), light_by_n(light, "skein")
        xs, over, base_s, mine_s = [], [], [], []
        for n in sorted(ours):
            mine = median(rel(r["t"], "submit", "tasks_started") for r in ours[n])
            base = median(rel(r["t"], "submit", "tasks_started") for r in floor.get(n, []))
            if mine is not None and base:
                xs.append(n)
                over.append(mine - base)
                base_s.append(base)
                mine_s.append(mine)
        right.plot(xs, mine_s, "o-", label=f"tfyarn {MAIN}: submit → every task started")
        right.plot(xs, base_s, "s--", label="floor (b) plain skein")
        for v in [v for v in light_variants(light) if v != MAIN]:
            runs = light_by_n(light, "tfyarn", v)
            pts = [(n, median(rel(r["t"], "submit", "tasks_started") for r in runs[n]))
                   for n in sorted(runs)]
            pts = [(n, y) for n, y in pts if y is not None]
            right.plot([n for n, _ in pts], [y for _, y in pts], "o:",
                       label=f"tfyarn {v}: submit → every task started")
        right.bar(xs, over, width=[x * 0.25 for x in xs], alpha=0.4, color="tab:red",
                  label=f"overhead (tfyarn {MAIN} − floor)")
        if xs:
            right.set_xscale("log", base=2)
            right.set_xticks(xs, [str(n) for n in xs])
        right.axhline(0, color="grey", lw=0.5)
        right.set_xlabel("light tasks (N)")
        right.set_ylabel("seconds (median)")
        right.set_title("At scale: tfyarn over YARN + skein alone")
        right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- before / after


def before_after(seed: dict | None, light: dict | None, recovery: dict | None) -> str:
    """The variants side by side: before the fixes, as it is, and with bench/patches."""
    names: set[str] = set()
    for data in (seed, light, recovery):
        names |= {r["variant"] for r in good((data or {}).get("runs", []))
                  if r["kind"] == "tfyarn"}
    names_sorted = sorted(names, key=variant_order)
    if len(names_sorted) < 2:
        return ""
    rows: list[tuple[str, list[float | None]]] = []

    def medians(runs_by_variant: dict[str, list[dict]], a: str, b: str) -> list[float | None]:
        return [median(rel(r["t"], a, b) for r in runs_by_variant.get(v, []))
                for v in names_sorted]

    if seed:
        by = {k[7:]: runs for k, runs in groups(seed).items() if k.startswith("tfyarn ")}
        for name, a, b in [("seed job: submit → AM running", "submit", "am_running"),
                           ("seed job: AM running → all allocated", "am_running", "allocated"),
                           ("seed job: containers running → every script started",
                            "containers_running", "scripts_started"),
                           ("seed job: submit → every script started", "submit",
                            "scripts_started"),
                           ("seed job: submit → every task training", "submit", "training"),
                           ("seed job: chief done → job end", "chief_done", "job_end")]:
            rows.append((name, medians(by, a, b)))
    if light:
        per = {v: light_by_n(light, "tfyarn", v) for v in names_sorted}
        for n in sorted({n for runs in per.values() for n in runs}):
            by_n = {v: per[v].get(n, []) for v in names_sorted}
            rows.append((f"{n} light tasks: submit → every task started",
                         medians(by_n, "submit", "tasks_started")))
            rows.append((f"{n} light tasks: containers running → all registered",
                         medians(by_n, "containers_running", "all_registered")))
    if recovery:
        by = recovery_groups(recovery)
        for victim in ("worker", "ps"):
            by_v = {k[1][7:]: runs for k, runs in by.items()
                    if k[0] == victim and k[1].startswith("tfyarn ")}
            if by_v:
                rows.append((f"{victim} killed: kill → script started again",
                             medians(by_v, "kill", "scripts_started")))
                rows.append((f"{victim} killed: kill → training again",
                             medians(by_v, "kill", "training_again")))
    lines = ["| median, seconds | " + " | ".join(f"tfyarn {v}" for v in names_sorted) + " |",
             "|---" * (len(names_sorted) + 1) + "|"]
    for name, values in rows:
        if all(v is None for v in values):
            continue
        cells = ["never/–" if v is None else f"{v:.2f}" for v in values]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    opts = parser.parse_args(argv)
    res = opts.results
    recovery = None
    if (seed := load(res, "seed_job")) is not None:
        print("## Seed job\n")
        print_seed_summary(seed)
        plot_seed(seed, res / "seed_job.png")
    light = load(res, "rendezvous")
    if light is not None:
        print("\n## Rendezvous at scale\n")
        print(light_tables(light))
        plot_rendezvous(light, res / "rendezvous.png")
    if seed is not None or light is not None:
        print("\n## Floors\n")
        print(floors_tables(seed, light))
        plot_floors(seed, light, res / "floors.png")
    if (recovery := load(res, "recovery")) is not None:
        print("\n## Recovery\n")
        print(recovery_tables(recovery))
        plot_recovery(recovery, res / "recovery.png")
    table = before_after(seed, light, recovery)
    if table:
        print("\n## The variants side by side\n")
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
