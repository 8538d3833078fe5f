"""`tfyarn submit --set KEY=VALUE` on the local YARN: a real job runs with the values given
on the command line, over the job files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from jobtools import prepare_light_job, status_json, submit_and_wait

pytestmark = pytest.mark.yarn


def test_set_overrides_the_files_in_a_real_job(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_light_job(tmp_path, ["--exit_code", "3"])
    assert json.loads(resources.read_text())["components"]["worker"][
        "yarn.component.instances"] == "2"
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app_config,
                          "--set", "components.worker.yarn.component.instances=1",
                          "--set", "worker.yarn.memory=384",
                          "--set", 'site.global.user.scripts.args=["--sleep", "1"]')
    assert run.returncode == 0, run.output  # the files' --exit_code 3 was replaced
    job = status_json(yarn_cluster, run.app_id)["job"]
    roles = Counter(task["role"] for task in job["tasks"])
    assert roles == {"ps": 1, "chiefworker": 1, "worker": 1}, job["tasks"]
