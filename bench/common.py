"""What every benchmark module shares: where things are, and the progress log."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
LIGHT_APPS = REPO / "tests" / "apps"
RESULTS = REPO / "bench" / "results"
SCRATCH = Path(os.environ.get("TFYARN_BENCH_SCRATCH", "/tmp/tfyarn-bench"))
G = "site.global."
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")
POLL_S = 0.1


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def write_job_files(directory: Path, resources: dict, app_config: dict) -> tuple[Path, Path]:
    """resources.json and appConfig.json in ``directory`` (made if missing): their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "resources.json", directory / "appConfig.json"
    for path, document in zip(paths, (resources, app_config), strict=True):
        path.write_text(json.dumps(document, indent=2))
    return paths
