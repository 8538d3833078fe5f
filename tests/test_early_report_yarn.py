"""`tfyarn report` answers from a job's first second, on the real YARN: right after submit,
before the AppMaster has written anything, from YARN's application report and the plan as
submitted (read back from skein's staging dir on HDFS)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jobtools import app_state, prepare_light_job, run_tfyarn, submit_detached

pytestmark = pytest.mark.yarn

EARLY = ("drawn from YARN's application report and the submitted plan: the AppMaster has not "
         "written yet")
LIVE = "drawn from the running AppMaster's view"


def test_the_report_answers_right_after_submit(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "600"])
    app_id = submit_detached(yarn_cluster, resources, app_config)
    try:
        saved = tmp_path / "early.html"
        fetched = run_tfyarn(yarn_cluster, "report", app_id, "--json", "-o", str(saved))
        after = app_state(yarn_cluster, app_id)
        assert fetched.returncode == 0, fetched.stderr
        source = json.loads(fetched.stdout)["source"]
        print(f"\n{app_id} was {after} after the report, drawn: {source}")
        if after in ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED"):  # no AppMaster yet
            assert source == EARLY
        assert source in (EARLY, LIVE)
        if source == EARLY:
            page = saved.read_text()
            assert f"Report of {app_id}" in page and "The AppMaster has not written yet" in page
            assert "worker 2 x 256 MB, 1 vcore(s)" in page and "in queue default" in page
    finally:
        run_tfyarn(yarn_cluster, "kill", app_id)
