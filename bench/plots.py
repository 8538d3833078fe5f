"""The report's plots (matplotlib, imported only here)."""

from __future__ import annotations

from pathlib import Path

from bench.phases import (
    MAIN,
    RECOVERY_SCRIPTS,
    RECOVERY_STEPS,
    USAGE_COLUMNS,
    WATERFALL,
    groups,
    label_of,
    light_by_n,
    light_variants,
    recovery_groups,
    tfyarn_keys,
    usage,
    variant_order,
)
from bench.stats import median, rel


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
