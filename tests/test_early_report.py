"""`tfyarn report` answers from a job's first second: before the AppMaster wrote a report,
from YARN's application report and the plan as submitted (skein's staging copy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from appmaster.common.jobplan import PLAN_FILE
from tfyarn.hadoop.rmrest import AppReport
from tfyarn.jobconfig import Defaults, load_job
from tfyarn.submission.plan import build_plan
from tfyarn.watch import jobreport

REPO = Path(__file__).resolve().parent.parent
APP = "application_1700000000000_0042"


def yarn_report(state: str = "ACCEPTED", diagnostics: str = "") -> AppReport:
    return AppReport(id=APP, name="tfyarn-mnist1", user="alice", queue="default",
                     tags=frozenset({"tfyarn"}), state=state, final_status="UNDEFINED",
                     tracking_url=None, diagnostics=diagnostics, start_time=None,
                     finish_time=None)


@pytest.fixture()
def staged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plan where skein's driver puts it (a local dir standing for HDFS), and no
    pointer, page or log of the AppMaster yet."""
    job = load_job(str(REPO / "resources.json"), str(REPO / "appConfig.json"),
                   defaults=Defaults())
    (tmp_path / "5d41402abc4b2a76").mkdir()  # skein's driver stages each file in a folder
    (tmp_path / "5d41402abc4b2a76" / PLAN_FILE).write_text(build_plan(job).to_json())
    monkeypatch.setattr(jobreport, "staging_dir", lambda user, app_id: str(tmp_path))
    monkeypatch.setattr(jobreport.jobpointer, "read_pointer", lambda user, app_id: None)
    monkeypatch.setattr(jobreport.jobview, "final_view", lambda app_id: None)
    return tmp_path


def test_a_job_yarn_has_not_started_has_a_report(staged: Path) -> None:
    html, source = jobreport.fetch(yarn_report(diagnostics="waiting for AM container"))
    assert source == ("drawn from YARN's application report and the submitted plan: the "
                      "AppMaster has not written yet")
    page = html.decode()
    assert f"Report of {APP}" in page and "The job was ACCEPTED then" in page
    assert "The AppMaster has not written yet" in page
    assert "YARN says: waiting for AM container" in page
    assert "worker 2 x 1024 MB, 1 vcore(s)" in page and "a tensorflow job" in page


def test_without_the_plan_yarn_s_word_alone(staged: Path) -> None:
    (staged / "5d41402abc4b2a76" / PLAN_FILE).unlink()  # the staging dir gone, or unreadable
    html, source = jobreport.fetch(yarn_report("RUNNING"))
    assert source == "drawn from YARN's application report: the AppMaster has not written yet"
    assert "RUNNING in queue default" in html.decode() and "Submitted" not in html.decode()


def test_an_ended_job_with_no_report_is_still_an_error(staged: Path) -> None:
    with pytest.raises(jobreport.ReportError, match="no report of"):
        jobreport.fetch(yarn_report("KILLED"))
