"""The results as JSON: each run recorded (and saved) as it ends, read back for the report."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.cluster import Cluster
from bench.common import log
from bench.variants import Variant
from tfyarn.localyarn import layout as layout_module


def machine_info() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    versions = {}
    for module in ("skein", "tensorflow", "matplotlib"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version
            versions[module] = version(module if module != "tensorflow" else "tensorflow-cpu")
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "os": platform.platform(), "python": platform.python_version(),
        "hadoop": layout_module.HADOOP_VERSION, **versions,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "load_at_start": os.getloadavg(),
    }


def save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str))
    log(f"wrote {path}")


def kinds_to_run(variants: list[Variant],
                 floors: list[str]) -> list[tuple[str, Variant | None, str]]:
    """Each tfyarn variant, then each floor, as (kind, variant, name in the results)."""
    return [("tfyarn", v, v.name) for v in variants] + [(f, None, f) for f in floors]


def record_run(data: dict, out: Path, run_dir: Path, *, kind: str, name: str, rep: int,
               conditions: str, run: Callable[[], dict], show: Callable[[dict], None],
               cluster: Cluster | None = None, **identity: Any) -> None:
    """Runs one measurement and records it in ``data``, saved to ``out`` at once.

    A failed run is recorded with its error, not raised: one bad run must not lose the
    others. ``identity`` (the task count, the victim) goes into a failed run's record.
    A tfyarn run's work dir on HDFS is removed afterwards (with ``cluster``).
    """
    try:
        record = run()
    except Exception as exc:
        log(f"  FAILED: {exc}")
        record = {"kind": kind, **identity, "error": str(exc)[:2000], "t": {}}
    record.update({"rep": rep, "variant": record.get("variant", name),
                   "conditions": conditions, "at": time.time()})
    data["runs"].append(record)
    show(record)
    save(out, data)
    # Checkpoints add up over an hour: a floor's local ones, a tfyarn job's on HDFS.
    shutil.rmtree(run_dir / "work", ignore_errors=True)
    if cluster is not None and kind == "tfyarn" and record.get("app_id"):
        try:
            cluster.remove_job_dir(record["app_id"])
        except Exception as exc:  # a leftover directory must not lose the run's record
            log(f"  could not remove {cluster.job_dir(record['app_id'])}: {exc}")


def load(results: Path, name: str) -> dict | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def good(runs: Iterable[dict]) -> list[dict]:
    return [r for r in runs if not r.get("error")]
