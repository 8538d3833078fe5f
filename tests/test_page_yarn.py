"""The pages a person opens, in a real browser: YARN's tracking URL, skein's pages, the job page.

Headless Chromium from Debian's packages (scripts/setup.sh installs it), driven by Selenium,
goes through the ResourceManager's proxy exactly as a user following YARN's link does, on a
light job (no TensorFlow; its chief writes a loss to an event file every second) running on
the local YARN. The tests run in file order: one ends the job while its page is open, the
next opens the report it left, from a file, with the network off.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

import pytest
import requests
from conftest import task_rows
from jobtools import ReleaseFile, app_report, app_state, prepare_light_job, run_tfyarn

from appmaster.page.jobpage import REFRESH_MS
from appmaster.page.webpage import PAGE_ROUTE
from tfyarn.watch import jobview

if TYPE_CHECKING:  # selenium is imported where a test drives the browser: collecting needs none
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = pytest.mark.yarn

START_TIMEOUT_S = 240  # submit -> every task running, on a loaded 2-core machine
WAIT_S = 60
SKEIN_ERRORS = ("Problem accessing", "Exception", "HTTP ERROR")
EXPECTED_TASKS = {"ps-0", "chiefworker-0", "worker-0", "worker-1"}
T = TypeVar("T")


@dataclass(frozen=True)
class RunningJob:
    app_id: str
    tracking_url: str  # exactly as `tfyarn submit --json` printed it
    job_page: str
    release: ReleaseFile  # the light job's tasks end (SUCCEEDED) once it exists


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = WAIT_S) -> T:
    """probe()'s first truthy answer; fails naming `what` after timeout_s."""
    from selenium.common.exceptions import WebDriverException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            answer = probe()
        except WebDriverException:
            answer = None
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.5)


def all_running(tracking_url: str, restarts: int) -> dict | None:
    """The job's view once every task runs (after `restarts` restarts), else None."""
    view = jobview.live_view(tracking_url)
    ready = view and len(view.restarts) == restarts and len(view.tasks) == len(
        EXPECTED_TASKS) and all(task.state == "running" and task.log_url for task in view.tasks)
    return view.to_dict() if ready else None


@contextmanager
def light_job(yarn_cluster, tmp: Path, fail_worker: int | None = None) -> Iterator[RunningJob]:
    """A light job submitted with `tfyarn submit --detach --json`, every task running; killed
    on the way out if it still runs. With `fail_worker`, that worker fails once and is
    replaced."""
    release = ReleaseFile.fresh(yarn_cluster.layout)
    args = ["--sleep", "900", "--release_file", release.url, "--summaries"]
    if fail_worker is not None:  # TF's naming: the chief is worker 0
        args += ["--fail", f"worker:{fail_worker + 1}"]
    res, app = prepare_light_job(tmp, args)
    if fail_worker is not None:
        doc = json.loads(res.read_text())
        doc["components"]["worker"]["yarn.container.failure.threshold"] = "1"
        res.write_text(json.dumps(doc))
    out = run_tfyarn(yarn_cluster, "submit", "--resources", str(res), "--app-config", str(app),
                     "--detach", "--json", timeout_s=180)
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    job = RunningJob(printed["application_id"], printed["tracking_url"], printed["job_page"],
                     release)
    try:
        restarts = 0 if fail_worker is None else 1
        wait_for("every task running", lambda: all_running(job.tracking_url, restarts),
                 START_TIMEOUT_S)
        yield job
    finally:
        if app_state(yarn_cluster, job.app_id) not in ("FINISHED", "FAILED", "KILLED"):
            run_tfyarn(yarn_cluster, "kill", job.app_id)
        release.remove()


@pytest.fixture(scope="module")
def running_job(yarn_cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJob]:
    with light_job(yarn_cluster, tmp_path_factory.mktemp("page"), fail_worker=1) as job:
        yield job


def assert_no_error(browser: WebDriver) -> None:
    source = browser.page_source
    assert not [e for e in SKEIN_ERRORS if e in source], f"{browser.current_url}:\n{source}"


def save_screenshot(browser: WebDriver, path: Path, capsys: pytest.CaptureFixture) -> None:
    """A picture for people to look at; the test's output says where it is."""
    browser.save_screenshot(str(path))
    with capsys.disabled():
        print(f"\nscreenshot: {path}")


def test_tracking_url_leads_to_the_job_page(running_job: RunningJob, browser: WebDriver,
                                            tmp_path: Path, capsys) -> None:
    from selenium.webdriver.common.by import By

    browser.get(running_job.tracking_url)
    assert browser.title.startswith("Overview - Skein"), browser.title
    assert_no_error(browser)
    # One click: the button tfyarn adds to skein's Overview (tfyarn/hadoop/skeinui.py).
    button = browser.find_element(By.CSS_SELECTOR, ".container-fluid > a.btn")
    assert button.text == "TensorFlow job →"
    button.click()
    wait_for("the task table", lambda: task_rows(browser) == EXPECTED_TASKS)
    assert browser.current_url == running_job.job_page
    assert browser.find_element(By.CSS_SELECTOR, "#summary .state").text == "RUNNING"
    yarn_page = browser.find_element(By.ID, "yarn-app").get_attribute("href")
    assert yarn_page == running_job.tracking_url.split("/proxy/")[0] + (
        f"/cluster/app/{running_job.app_id}")
    restarts = browser.find_element(By.ID, "restarts").text
    assert "worker 1 replaced" in restarts, restarts
    assert browser.find_element(By.CSS_SELECTOR, '[data-task="worker-1"] .col-restarts').text == "1"

    # Every task's log link answers with the container's log files. Read in one go: the
    # page redraws its table as the job's view changes, which leaves elements found before
    # stale.
    urls = browser.execute_script(
        "return [...document.querySelectorAll('#task-table tbody a')].map(a => a.href)")
    assert len(urls) == len(EXPECTED_TASKS), urls
    for url in urls:
        logs = requests.get(url, timeout=10)
        assert logs.ok and ".stdout" in logs.text, f"{url}: {logs.status_code}"

    # It fits a laptop's width: nothing scrolls sideways, not even the task table.
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= browser.execute_script("return window.innerWidth"), width
    table, room = browser.execute_script(
        "var t = document.getElementById('task-table');"
        "return [t.offsetWidth, t.closest('.scroll').clientWidth];")
    assert table <= room, (table, room)

    save_screenshot(browser, tmp_path / "job-page.png", capsys)


def test_the_page_refreshes_in_place(running_job: RunningJob, browser: WebDriver) -> None:
    from selenium.webdriver.common.by import By

    browser.get(running_job.job_page)
    wait_for("the task table", lambda: task_rows(browser) == EXPECTED_TASKS)
    browser.execute_script("window.readerMark = 1;")
    browser.find_element(By.CSS_SELECTOR, "details summary").click()  # open the cluster spec
    first = browser.find_element(By.CSS_SELECTOR, "#summary .updated").text
    wait_for("a refresh", lambda: browser.find_element(By.CSS_SELECTOR, "#summary .updated")
             .text != first, timeout_s=10 * REFRESH_MS / 1000)
    # The document was not reloaded, and what the reader opened stays open.
    assert browser.execute_script("return window.readerMark") == 1
    assert browser.find_element(By.CSS_SELECTOR, "details").get_attribute("open") is not None
    assert task_rows(browser) == EXPECTED_TASKS


def test_skein_pages_answer(running_job: RunningJob, browser: WebDriver) -> None:
    from selenium.webdriver.common.by import By

    browser.get(running_job.tracking_url + "kv")
    assert browser.title.startswith("Key/Value - Skein"), browser.title
    assert_no_error(browser)
    keys = {cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "tbody td:first-of-type")}
    assert "spec/0" in keys, keys
    browser.get(running_job.tracking_url + "overview")
    assert_no_error(browser)
    # skein's own list of pages: the "Service Pages" menu leads to the job page too.
    browser.find_element(By.ID, "servicePages").click()
    pages = browser.find_elements(By.CSS_SELECTOR, "#servicePages + .dropdown-menu a")
    assert [p.text for p in pages] == ["TensorFlow job"]
    pages[0].click()
    wait_for("the task table", lambda: task_rows(browser) == EXPECTED_TASKS)


def chart_points(browser: WebDriver, chart: str) -> int:
    """How many points the chart's line has (0: no line yet)."""
    return browser.execute_script(
        f"var line = document.querySelector('#{chart} polyline');"
        "return line ? line.points.numberOfItems : 0;")


def timeline_bars(browser: WebDriver) -> dict[str, int]:
    """Each task's container bars on the timeline, by task."""
    from selenium.webdriver.common.by import By

    return {row.get_attribute("data-task"): int(row.get_attribute("data-bars"))
            for row in browser.find_elements(By.CSS_SELECTOR, "#timeline g.row")}


def assert_curves_and_timeline(browser: WebDriver) -> None:
    """The chief's curves are drawn with the worker's replacement marked on them, and the
    timeline shows the replaced worker as two bars, the failed one first."""
    from selenium.webdriver.common.by import By

    for chart in ("chart-step", "chart-rate", "chart-tag-0"):
        assert chart_points(browser, chart) >= 2, chart
    assert browser.find_element(By.CSS_SELECTOR, "#chart-tag-0 .title").text == "train/loss"
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-step line.mark-replaced")
    bars = timeline_bars(browser)
    assert bars == {"ps 0": 1, "chiefworker 0": 1, "worker 0": 1, "worker 1": 2}, bars
    first, second = browser.find_elements(By.CSS_SELECTOR, '#timeline g.row[data-task="worker 1"]'
                                                           " g.bar")
    assert "bar-failed" in first.get_attribute("class")
    assert first.rect["x"] < second.rect["x"]


def test_curves_update_in_place_and_the_timeline_shows_the_replacement(
        running_job: RunningJob, browser: WebDriver, tmp_path: Path, capsys) -> None:
    browser.get(running_job.job_page)
    wait_for("the chief's curves", lambda: chart_points(browser, "chart-step") >= 2,
             timeout_s=120)
    browser.execute_script("window.readerMark = 1;")
    seen = chart_points(browser, "chart-step")
    wait_for("the curve to grow", lambda: chart_points(browser, "chart-step") > seen,
             timeout_s=30)
    assert browser.execute_script("return window.readerMark") == 1  # updated in place
    assert_curves_and_timeline(browser)
    browser.execute_script("document.getElementById('curves').scrollIntoView()")
    save_screenshot(browser, tmp_path / "curves-and-timeline.png", capsys)


def get_from(source: str, url: str) -> http.client.HTTPResponse:
    """GET ``url`` from the local address ``source``: in the local cluster every host is a
    127.0.0.x address, so this is a request from another machine."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10,
                                      source_address=(source, 0))
    conn.request("GET", parts.path or "/")
    return conn.getresponse()


def test_only_the_proxy_reaches_the_pages(yarn_cluster, skein_client,
                                          running_job: RunningJob) -> None:
    # tfyarn's page server: on 127.0.0.1 of the AppMaster's host only, under a secret path.
    target = skein_client.connect(running_job.app_id).ui.get_pages()[PAGE_ROUTE].target
    port = urlsplit(target).port
    assert target.startswith(f"http://127.0.0.1:{port}/") and len(urlsplit(target).path) > 20
    am_host = app_report(yarn_cluster, running_job.app_id)["amHostHttpAddress"].split(":")[0]
    assert am_host != "127.0.0.1"  # a NodeManager's own address
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((am_host, port), timeout=5).close()
    assert get_from("127.0.0.9", target + "/tasks.json").status == 403
    assert get_from("127.0.0.1", f"http://127.0.0.1:{port}/tasks.json").status == 404
    assert get_from("127.0.0.1", target + "/tasks.json").status == 200  # what skein's AM does

    # skein's own UI: its AmIpFilter sends a request that did not come from the RM's proxy
    # to the proxy (which, on a secure cluster, authenticates and checks the view ACL).
    am_log = next(yarn_cluster.layout.node_dir(nm) / "containers" / running_job.app_id
                  for nm in yarn_cluster.layout.node_managers if nm.host == am_host)
    started = re.search(r"WebUI server started at (\S+):(\d+)",
                        next(am_log.glob("*/application.master.log")).read_text())
    assert started, f"no WebUI line in {am_log}"
    direct = get_from("127.0.0.9", f"http://{started[1]}:{started[2]}/pages/{PAGE_ROUTE}/")
    assert direct.status in (302, 303, 307), direct.status
    to_proxy = direct.getheader("Location")  # the RM's, never the AppMaster's own address
    assert to_proxy == running_job.job_page.replace("/proxy/", "/proxy/redirect/"), to_proxy


def wait_for_the_end(browser: WebDriver, state: str) -> WebElement:
    """The page's notice that the job ended, once it names YARN's final `state`."""
    from selenium.webdriver.common.by import By

    ended = browser.find_element(By.ID, "ended")
    wait_for(f"the page to say the job ended {state}",
             lambda: f"ended: {state}," in ended.text and ended.is_displayed(), timeout_s=180)
    return ended


def test_the_open_page_says_how_the_job_ended(running_job: RunningJob, browser: WebDriver,
                                              tmp_path: Path, capsys) -> None:
    from selenium.webdriver.common.by import By

    browser.get(running_job.job_page)
    wait_for("the task table", lambda: task_rows(browser) == EXPECTED_TASKS)
    running_job.release.touch()  # the chief and workers exit 0: the job succeeds

    ended = wait_for_the_end(browser, "FINISHED")
    assert "final status SUCCEEDED" in ended.text and "The chief finished" in ended.text
    assert "tfyarn status " + running_job.app_id in ended.text
    assert_no_error(browser)
    assert browser.find_element(By.CSS_SELECTOR, "#summary .state").text == "SUCCEEDED"
    assert task_rows(browser) == EXPECTED_TASKS  # the last table stays readable
    save_screenshot(browser, tmp_path / "ended-job-page.png", capsys)

    # Afterwards the tracking URL YARN keeps leads to YARN's page for the application.
    browser.get(running_job.tracking_url)
    assert f"/cluster/app/{running_job.app_id}" in browser.current_url
    assert "SUCCEEDED" in browser.find_element(By.TAG_NAME, "body").text


def test_the_report_outlives_the_job(yarn_cluster, running_job: RunningJob,
                                     browser: WebDriver, tmp_path: Path, capsys) -> None:
    from selenium.webdriver.common.by import By

    app_id, saved = running_job.app_id, tmp_path / "report.html"
    fetched = run_tfyarn(yarn_cluster, "report", app_id, "-o", str(saved))
    assert fetched.returncode == 0, fetched.stderr
    assert "/tfyarn-report.html)" in fetched.stdout  # as the AppMaster wrote it at the end
    assert "The job was SUCCEEDED then" in saved.read_text()
    browser.set_network_conditions(offline=True, latency=0, download_throughput=0,
                                   upload_throughput=0)
    try:
        browser.get(saved.as_uri())
        assert "Report of " + app_id in browser.find_element(By.ID, "report").text
        assert browser.find_element(By.CSS_SELECTOR, "#summary .state").text == "SUCCEEDED"
        assert task_rows(browser) == EXPECTED_TASKS
        assert_curves_and_timeline(browser)
        loaded = browser.execute_script("return performance.getEntriesByType('resource').length")
        assert loaded == 0  # everything is in the file
        save_screenshot(browser, tmp_path / "report.png", capsys)
    finally:
        browser.delete_network_conditions()
    status = run_tfyarn(yarn_cluster, "status", app_id)
    assert "as the AppMaster recorded it at the end in " in status.stdout, status.stdout


def test_the_open_page_says_the_job_was_killed(yarn_cluster, browser: WebDriver,
                                               tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    with light_job(yarn_cluster, tmp_path) as job:
        browser.get(job.job_page)
        wait_for("the task table", lambda: task_rows(browser) == EXPECTED_TASKS)
        killed = run_tfyarn(yarn_cluster, "kill", job.app_id)
        assert killed.returncode == 0, killed.stderr
        ended = wait_for_the_end(browser, "KILLED")
    assert "final status KILLED" in ended.text, ended.text
    assert browser.find_element(By.CSS_SELECTOR, "#summary .state").text == "KILLED"
    assert_no_error(browser)
