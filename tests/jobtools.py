"""Helpers shared by the integration tests: job files in tmp_path, YARN's view, processes."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from tfyarn.localyarn import cluster

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
APPS = Path(__file__).resolve().parent / "apps"
G = "site.global."
PROCESS_TIMEOUT_S = 15
# The CLI as this interpreter runs it: the venv's bin need not be on PATH (it is not in CI).
TFYARN = (sys.executable, "-m", "tfyarn.cli")


def prepare_job(tmp_path: Path, resources: Path, app_config: Path, scripts_dir: Path,
                args: list[str], entry: str | None = None) -> tuple[Path, Path]:
    """Copies of the job files in tmp_path, changed only in where scripts and work go."""
    job = tmp_path / "job"
    job.mkdir()
    res_path = Path(shutil.copy(resources, job / "resources.json"))
    app = json.loads(app_config.read_text())
    app["global"][G + "user.scripts.dir"] = str(scripts_dir)
    app["global"][G + "user.work.dir"] = str(tmp_path / "work" / "${APP_ID}")
    app["global"][G + "user.scripts.args"] = args
    if entry is not None:
        app["global"][G + "user.scripts.entry"] = entry
    app_path = job / "appConfig.json"
    app_path.write_text(json.dumps(app, indent=2))
    return res_path, app_path


def processes_with(text: str) -> list[int]:
    """Pids of the processes whose command line contains ``text``."""
    return [pid for pid, _ in processes_mentioning(text)]


def processes_mentioning(text: str) -> list[tuple[int, str]]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if text in cmdline:
            found.append((int(proc.name), cmdline.strip()))
    return found


def assert_no_task_process_left(work_dir: Path) -> None:
    """No process whose command line names the app's work dir, a few seconds after its end."""
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    while alive := processes_mentioning(str(work_dir)):
        if time.monotonic() > deadline:
            raise AssertionError(f"task processes survive the job {PROCESS_TIMEOUT_S} s on: "
                                 f"{alive}")
        time.sleep(0.5)


def app_report(yarn_cluster, app_id: str) -> dict[str, Any]:
    return cluster.rest(yarn_cluster.layout, f"apps/{app_id}")["app"]


def app_state(yarn_cluster, app_id: str) -> str:
    return app_report(yarn_cluster, app_id)["state"]


def read_json(path: Path) -> Any:
    assert path.is_file(), f"missing {path}"
    return json.loads(path.read_text())
