"""The report's Markdown tables, and the lines each experiment prints per run."""

from __future__ import annotations

import re

from bench.phases import (
    KIND_LABEL,
    LIGHT_SHARED_STEPS,
    LIGHT_STEPS,
    MAIN,
    RECOVERY_SCRIPTS,
    RECOVERY_STEPS,
    RECOVERY_TOTAL,
    SEED_MILESTONES,
    SEED_PHASES,
    SEED_TOTALS,
    USAGE_COLUMNS,
    groups,
    label_of,
    light_by_n,
    light_variants,
    recovery_groups,
    tfyarn_keys,
    usage,
    variant_order,
)
from bench.results import good
from bench.stats import fmt, median, rel, spread


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
    if floor:
        lines += ["", "tfyarn / floor (b), the phases both have (median, seconds):", "",
                  "| phase | " + " | ".join(f"N={n}" for n in sizes) + " |",
                  "|---" * (len(sizes) + 1) + "|"]
        for name, a, b in LIGHT_SHARED_STEPS:
            lines.append(f"| {name} | " + " | ".join(
                f"{fmt(median(rel(r['t'], a, b) for r in ours[n]))} / "
                f"{fmt(median(rel(r['t'], a, b) for r in floor.get(n, [])))}"
                for n in sizes) + " |")
    return "\n".join(lines)


def print_recovery_run(record: dict) -> None:
    if record.get("error"):
        return
    t = record["t"]
    parts = [f"{name.split(' → ')[-1]} +{fmt(rel(t, a, b))}" for name, a, b in RECOVERY_STEPS
             if rel(t, a, b) is not None]
    print(f"    {record['victim']} killed, {record['kind']} {record.get('app_id', '')}: kill → "
          f"training again {fmt(rel(t, 'kill', 'training_again'))} s; " + "; ".join(parts)
          + f" {record.get('meta', {})}", flush=True)


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


def before_after(seed: dict | None, light: dict | None, recovery: dict | None) -> str:
    """The variants side by side: before the fixes, as it is (and "next", in results
    recorded with a patch proposed then: bench/variants.py)."""
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
