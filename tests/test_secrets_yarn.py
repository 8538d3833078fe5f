"""Secrets reach every task as a private file; their text shows up nowhere else."""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
from jobtools import prepare_light_job, read_json, submit_and_wait


def write_job(tmp_path: Path, secret_file: Path) -> tuple[Path, Path]:
    return prepare_light_job(tmp_path, ["--sleep", "4"], settings={
        "app.name": "tfyarn-secrets-test", "user.secrets": {"DB_PASSWORD": str(secret_file)}})


def scan_argv(needle: bytes, seen: list[str], stop: threading.Event) -> None:
    """Look for the secret in every process's command line and environment while the job runs."""
    while not stop.is_set():
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            for part in ("cmdline", "environ"):
                try:
                    if needle in (proc / part).read_bytes():
                        seen.append(f"{proc.name}/{part}")
                except OSError:
                    pass
        time.sleep(0.5)


@pytest.mark.yarn
def test_secret_is_delivered_as_a_file_and_leaks_nowhere(yarn_cluster, tmp_path):
    secret_text = f"s3cr3t-{secrets.token_hex(12)}"
    secret_file = tmp_path / "db-password"
    secret_file.write_text(secret_text)
    resources, app_config = write_job(tmp_path, secret_file)

    seen: list[str] = []
    stop = threading.Event()
    scanner = threading.Thread(target=scan_argv, args=(secret_text.encode(), seen, stop))
    scanner.start()
    try:
        run = submit_and_wait(yarn_cluster, tmp_path, resources, app_config)
    finally:
        stop.set()
        scanner.join()
    assert run.returncode == 0, run.output
    app_id = run.app_id

    # Every task read the secret through the file named in TFYARN_SECRET_DB_PASSWORD (each
    # task's record is in its own container's work dir, on its own host).
    records = [read_json(path) for path in run.files.glob("light/*.json")]
    assert len(records) == 4
    digest = hashlib.sha256(secret_text.encode()).hexdigest()
    for record in records:
        secret = record["secrets"]["TFYARN_SECRET_DB_PASSWORD"]
        assert secret["sha256"] == digest
        assert secret["mode"] == "0o400"  # readable by the job's user only
        assert secret_text not in json.dumps(record["argv"])

    # Not in any command line or environment of any process while the job ran ...
    assert seen == []
    # ... nor in YARN's diagnostics, nor in any container's log.
    report = requests.get(f"{yarn_cluster.layout.webapp_url}/ws/v1/cluster/apps/{app_id}",
                          timeout=5).json()["app"]
    assert secret_text not in json.dumps(report)
    logs = ""
    for _ in range(60):
        logs = subprocess.run(["yarn", "logs", "-applicationId", app_id], capture_output=True,
                              text=True, env=yarn_cluster.env).stdout
        if logs.count("light task") >= 4:
            break
        time.sleep(1)
    assert logs.count("light task") >= 4, "task output never reached the aggregated logs"
    assert secret_text not in logs
    assert secret_text not in run.output
