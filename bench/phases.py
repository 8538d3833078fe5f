"""What the report shows of the results: each experiment's phases and milestones, and the
runs grouped by variant, kind and size.
"""

from __future__ import annotations

from bench.results import good

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
    ("all_given", "the last container given, as the AM saw it: the wait for the queue (AM phase)"),
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
# "next": only in results recorded earlier, with a patch not kept (bench/variants.py)
ORDER = ["before", "current", "next"]


def variant_order(name: str) -> tuple[int, str]:
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


def tfyarn_keys(by: dict) -> list[str]:
    """'tfyarn <variant>' keys in variant order."""
    return sorted((k for k in by if k.startswith("tfyarn ")), key=lambda k: variant_order(k[7:]))


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
# The milestones floor (b) has too: tfyarn and the floor side by side.
LIGHT_SHARED_STEPS = [
    ("submit → AM running", "submit", "am_running"),
    ("AM running → all allocated", "am_running", "allocated"),
    ("allocated → containers running", "allocated", "containers_running"),
    ("containers running → every task started", "containers_running", "tasks_started"),
    ("submit → every task started", "submit", "tasks_started"),
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


def light_by_n(data: dict, kind: str, variant: str = MAIN) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for run in good(data["runs"]):
        if run["kind"] == kind and (kind != "tfyarn" or run["variant"] == variant):
            out.setdefault(run["n"], []).append(run)
    return out


def light_variants(data: dict) -> list[str]:
    names = {r["variant"] for r in good(data["runs"]) if r["kind"] == "tfyarn"}
    return sorted(names, key=variant_order)


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


def recovery_groups(data: dict) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for run in good(data["runs"]):
        label = f"tfyarn {run['variant']}" if run["kind"] == "tfyarn" else run["kind"]
        out.setdefault((run["victim"], label), []).append(run)
    return out
