"""Shared fixtures: one real local YARN cluster for the whole test session."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import lanes
import pytest
from barenodes import client_environ, ship_env_to_every_node

from tfyarn.hadoop import keptdriver
from tfyarn.localyarn import cluster
from tfyarn.localyarn.layout import Layout, default_state_dir

# A test on the real cluster that fails gets one more try (pytest-rerunfailures). They kill
# processes at checkpoints and race TensorFlow's own recovery on a 2-core machine, where
# YARN's placement and timing vary run to run. A second failure fails the run; a first
# failure still shows, as RERUN in pytest's summary, so it is seen and chased.
YARN_TEST_RERUNS = 1
KEPT_DRIVER_IDLE_S = 300  # stopped at the session's end in any case


# Fixtures that start a local cluster (its JVMs) or a browser. A test using one, even through
# another fixture, must be marked `yarn`, so that `pytest -m "not yarn"` starts none of them.
CLUSTER_FIXTURES = {"yarn_cluster", "secure_cluster", "ha_cluster"}
YARN_ONLY_FIXTURES = CLUSTER_FIXTURES | {"browser"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects: an unmarked test is refused either way
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    unmarked = []
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & YARN_ONLY_FIXTURES and not item.get_closest_marker("yarn"):
            unmarked.append(f"{item.nodeid} (uses {', '.join(sorted(used & YARN_ONLY_FIXTURES))})")
        if used & CLUSTER_FIXTURES and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=YARN_TEST_RERUNS, reruns_delay=5))
    # The lanes take the ungrouped tests in collection order: the long ones go first, so that
    # no lane ends the run alone on one while the other has nothing left.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
    if unmarked:
        raise pytest.UsageError(
            "these tests start the local cluster or a browser but are not marked yarn "
            "(add `pytestmark = pytest.mark.yarn` to the module, or @pytest.mark.yarn):\n  "
            + "\n  ".join(unmarked))


def pytest_itemcollected(item: pytest.Item) -> None:
    """Each test's lane group, as it is collected: xdist reads the groups when it orders
    the collection."""
    group = lane_group(item)
    if group and not item.get_closest_marker("xdist_group"):
        item.add_marker(pytest.mark.xdist_group(group))


def lane_group(item: pytest.Item) -> str | None:
    """The lane a test must share with others (xdist_group), if any. The tests of a module
    whose own fixtures outlive a test (a job, a venv, data on HDFS) run in one lane, which
    makes them once; the tests that start no cluster run in one lane, and xdist hands out
    the largest groups first, so the other lanes start on their clusters' tests."""
    used = set(getattr(item, "fixturenames", ()))
    module = item.nodeid.split("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in (info.name2fixturedefs.items() if info else ()):
        if defs and defs[-1].scope in ("module", "session") and defs[-1].baseid == module \
                and name in item.fixturenames:
            return module
    return None if used & YARN_ONLY_FIXTURES else "no-cluster"


@pytest.fixture(scope="session")
def no_defaults_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("no-defaults")


@pytest.fixture(autouse=True)
def no_defaults_files(no_defaults_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads this machine's or its user's defaults files (tfyarn/jobconfig/
    defaults.py): both places are in an empty directory, and TFYARN_CONFIG is unset."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(no_defaults_dir))
    monkeypatch.setenv("TFYARN_SYSTEM_CONFIG", str(no_defaults_dir / "tfyarn.yaml"))
    monkeypatch.delenv("TFYARN_CONFIG", raising=False)


@dataclass(frozen=True)
class LocalCluster:
    layout: Layout
    env: dict[str, str]  # os.environ as after `eval "$(tfyarn cluster env)"`


lanes.point_at_the_lanes_cluster()  # before any test reads the environment


@pytest.fixture(scope="session")
def yarn_cluster() -> Iterator[LocalCluster]:
    """This lane's local cluster (tests/lanes.py): started, or reused if it runs (and then
    left running), with this interpreter's env shipped to every node. The suite's tfyarn
    commands keep their skein driver between them, as a user's may (TFYARN_DRIVER_IDLE_S):
    one JVM for a lane's hundreds of commands rather than one each."""
    layout = Layout(default_state_dir())
    started = not cluster.is_running(layout)
    if started:
        cluster.up(layout, probe=False)  # the env shipped next runs a job on every node
    drivers = layout.state_dir / "drivers"
    env = {**cluster.client_environment(layout), keptdriver.IDLE_ENV: str(KEPT_DRIVER_IDLE_S),
           keptdriver.DIR_ENV: str(drivers)}
    try:
        with client_environ(env):
            # Every job ships this interpreter's env to the bare nodes: packed and localized
            # once here, so that no test's timeouts pay for a node's first localization.
            ship_env_to_every_node(layout)
            yield LocalCluster(layout, env)
    finally:
        keptdriver.stop_all(drivers)
        if started:
            cluster.down(layout)


@pytest.fixture(scope="session")
def skein_client(yarn_cluster: LocalCluster):
    import skein

    with skein.Client() as client:
        yield client


def wait_for_final_state(client, app_id: str, timeout_s: float = 300.0):
    """The application's report once YARN says it ended (FINISHED, FAILED or KILLED)."""
    deadline = time.monotonic() + timeout_s
    while True:
        report = client.application_report(app_id)
        if str(report.state) in ("FINISHED", "FAILED", "KILLED"):
            return report
        if time.monotonic() > deadline:
            raise AssertionError(f"{app_id} still {report.state} after {timeout_s:.0f} s")
        time.sleep(0.5)


CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"  # Debian's packages
LAPTOP = (1366, 768)


@contextmanager
def chromium(kerberos_env: dict[str, str] | None = None) -> Iterator:
    """Headless Chromium at laptop size; Selenium uses the given binaries, downloads nothing.
    With ``kerberos_env`` (KRB5_CONFIG, KRB5CCNAME) it logs in to the local cluster's web UIs
    with SPNEGO from that ticket cache, as a user's browser on a secure cluster does."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                f"--window-size={LAPTOP[0]},{LAPTOP[1]}"):
        options.add_argument(arg)
    if kerberos_env:
        options.add_argument("--auth-server-allowlist=localhost,127.0.0.1")
    service = Service(executable_path=CHROMEDRIVER,
                      env={**os.environ, **kerberos_env} if kerberos_env else None)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser():
    with chromium() as driver:
        yield driver


def open_page(browser, url: str) -> None:
    """browser.get, once more where a Kerberos web UI answered 401: Chromium loads libgssapi
    on its first Negotiate challenge and fails that one request (its net log shows
    AUTH_HANDLER_CREATE_RESULT -339, then AUTH_LIBRARY_LOAD); the next one logs in."""
    browser.get(url)
    if "401" in browser.title:
        browser.get(url)


def task_rows(browser) -> set[str]:
    """The tasks the job page's table lists, by name (ps-0, chiefworker-0, ...)."""
    from selenium.webdriver.common.by import By

    return {row.get_attribute("data-task")
            for row in browser.find_elements(By.CSS_SELECTOR, "#task-table tbody tr")}
