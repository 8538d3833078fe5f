"""skein's driver kept between commands (tfyarn/hadoop/keptdriver.py), on the local YARN: reused by
the next command of the same identity, another one for another configuration, gone once idle."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tfyarn.hadoop import keptdriver
from tfyarn.hadoop.driver import skein_client

pytestmark = pytest.mark.yarn


def keeper_pid(client) -> int:
    for directory in keptdriver.state_dir("x").parent.iterdir():
        found = (directory / keptdriver.ADDRESS_FILE)
        if found.exists() and found.read_text().split()[0] == client.address:
            return int(found.read_text().split()[1])
    raise AssertionError(f"no kept driver at {client.address}")


def alive(pid: int) -> bool:
    """Running (a zombie, our unreaped child here, counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kept_driver_reused_per_identity_and_ended_when_idle(yarn_cluster, tmp_path: Path,
                                                            monkeypatch) -> None:
    monkeypatch.setenv(keptdriver.DIR_ENV, str(tmp_path / "drivers"))
    monkeypatch.setenv(keptdriver.IDLE_ENV, "4")
    first = skein_client()
    again = skein_client()  # what the next command finds on disk
    assert again.address == first.address
    assert isinstance(again.get_applications(), list)  # a working driver
    keeper = keeper_pid(first)
    again.close()  # closes the channel only: the kept driver stays
    assert alive(keeper)

    # Another cluster configuration is another identity: another driver.
    conf, original = tmp_path / "conf", os.environ["HADOOP_CONF_DIR"]
    shutil.copytree(original, conf)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf))
    other = skein_client()
    assert other.address != first.address
    assert isinstance(other.get_applications(), list)

    for client in (first, other):
        client.close()
    deadline = time.monotonic() + 60
    while alive(keeper) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not alive(keeper)  # idle for its 4 s: the keeper ended, and its driver with it
    monkeypatch.setenv("HADOOP_CONF_DIR", original)
    fresh = skein_client()  # the next command after that: a new driver
    assert keeper_pid(fresh) != keeper
    fresh.close()
    fresh_keeper = keeper_pid(fresh)
    keptdriver.stop_all(tmp_path / "drivers")  # as the suite does at its end, before idle
    deadline = time.monotonic() + 30
    while alive(fresh_keeper) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(fresh_keeper)


def test_without_the_setting_a_commands_driver_ends_with_it(yarn_cluster, tmp_path: Path,
                                                          monkeypatch) -> None:
    """The default (the suite keeps its drivers): a command's own driver, a child JVM that
    ends when the command closes its client, and nothing kept on disk."""
    monkeypatch.setenv(keptdriver.DIR_ENV, str(tmp_path / "drivers"))
    monkeypatch.delenv(keptdriver.IDLE_ENV, raising=False)
    client = skein_client()
    assert isinstance(client.get_applications(), list)
    driver = client._proc  # skein's handle on the driver it started for this client
    assert driver is not None and alive(driver.pid)
    client.close()
    assert driver.wait(timeout=30) is not None and not alive(driver.pid)
    assert not (tmp_path / "drivers").exists()
