"""Pure logic of appmaster/common/hdfstokens.py. That a job outlives its tokens on a real Kerberos
cluster is tests/test_secure_yarn.py's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from appmaster.common import hdfstokens, storage


def site(conf_dir: Path, file: str, **props: str) -> None:
    entries = "".join(f"<property><name>{k}</name><value>{v}</value></property>"
                      for k, v in props.items())
    (conf_dir / file).write_text(f"<?xml version='1.0'?><configuration>{entries}</configuration>")


def test_new_tokens_come_at_half_the_shorter_of_renew_interval_and_max_lifetime(tmp_path):
    assert hdfstokens.refresh_period_s(None) == 86_400 / 2  # Hadoop's defaults: a day
    site(tmp_path, "hdfs-site.xml", **{"dfs.namenode.delegation.token.renew-interval": "60000",
                                       "dfs.namenode.delegation.token.max-lifetime": "150000"})
    assert hdfstokens.refresh_period_s(str(tmp_path)) == 30
    site(tmp_path, "hdfs-site.xml", **{"dfs.namenode.delegation.token.max-lifetime": "7200000"})
    assert hdfstokens.refresh_period_s(str(tmp_path)) == 3600


def test_the_period_counts_from_a_fetchs_start() -> None:
    """A fetch of 20 s on a busy node: the next starts 10 s after it, so that no token handed
    out is older than the period meant (on the local secure cluster's 60 s renew interval,
    waiting the whole period after each fetch left agents tokens with seconds to live)."""
    assert hdfstokens.next_fetch_in(30.0, 20.0) == 10.0
    assert hdfstokens.next_fetch_in(30.0, 45.0) == 0.0  # late already: at once
    assert hdfstokens.next_fetch_in(30.0, 0.5) == 29.5


def test_tokens_are_for_the_work_dirs_file_system_or_the_default_one(tmp_path):
    assert hdfstokens.file_system("hdfs://nn:8020/jobs/x", None) == "hdfs://nn:8020"
    site(tmp_path, "core-site.xml", **{"fs.defaultFS": "hdfs://ns1"})
    assert hdfstokens.file_system("hdfs:///jobs/x", str(tmp_path)) == "hdfs://ns1"


def test_installed_tokens_are_private_named_by_the_environment_and_renew_clients(
        tmp_path, monkeypatch):
    monkeypatch.setenv(hdfstokens.TOKEN_FILE_ENV, "/somewhere/container_tokens")
    before = storage._tokens_generation
    path = hdfstokens.install(b"HDTS\x00tokens", tmp_path)
    assert path.read_bytes() == b"HDTS\x00tokens"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.environ[hdfstokens.TOKEN_FILE_ENV] == str(path)
    assert storage._tokens_generation == before + 1
    hdfstokens.install(b"newer", tmp_path)  # replaced whole, no partial file left
    assert path.read_bytes() == b"newer" and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_an_agent_takes_only_newer_tokens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(hdfstokens.TOKEN_FILE_ENV, "")
    offered: list[tuple[bytes, int] | None] = [None]
    asked = []

    def get():
        asked.append(1)
        return offered[0]

    follower = hdfstokens.TokenFollower(get)
    follower.follow()  # the master has none yet
    assert follower.version == 0 and not (tmp_path / hdfstokens.TOKENS_FILE).exists()
    offered[0] = (b"first", 7)
    follower.follow(7)
    assert follower.version == 7 and (tmp_path / hdfstokens.TOKENS_FILE).read_bytes() == b"first"
    calls = len(asked)
    follower.follow(7)  # a heartbeat saying what it already has: no request
    assert len(asked) == calls


def test_no_refresher_without_a_keytab_a_work_dir_on_hdfs_or_kerberos(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    site(tmp_path, "core-site.xml", **{"hadoop.security.authentication": "kerberos"})
    assert hdfstokens.TokenRefresher.for_job("me@R", "hdfs://nn/x", print) is None  # no keytab
    (tmp_path / hdfstokens.KEYTAB_FILE).write_bytes(b"\x05\x02")
    assert hdfstokens.TokenRefresher.for_job(None, "hdfs://nn/x", print) is None
    assert hdfstokens.TokenRefresher.for_job("me@R", "/shared/x", print) is None
    refresher = hdfstokens.TokenRefresher.for_job("me@R", "hdfs://nn:1/x", print)
    assert refresher is not None and refresher.fs_url == "hdfs://nn:1"
    site(tmp_path, "core-site.xml", **{"hadoop.security.authentication": "simple"})
    assert hdfstokens.TokenRefresher.for_job("me@R", "hdfs://nn:1/x", print) is None


def test_a_fetch_writes_in_the_containers_directory_and_leaves_nothing(tmp_path, monkeypatch):
    """The tokens dtutil writes wait in the AppMaster's container directory, which YARN
    removes with the container, not in the node's /tmp, where an AppMaster killed during the
    fetch would leave them."""
    monkeypatch.chdir(tmp_path)
    written: list[Path] = []

    def fetch(principal: str, keytab: Path, fs_url: str, into: Path) -> None:
        into.write_bytes(b"tokens")
        written.append(into.resolve())

    monkeypatch.setattr(hdfstokens, "fetch", fetch)
    published: list[bytes] = []
    hdfstokens.TokenRefresher("me@R", tmp_path / "k", "hdfs://nn:1", 30.0,
                              published.append).refresh()
    assert published == [b"tokens"]
    assert written[0].parent.parent == tmp_path.resolve()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_fetch_says_what_dtutil_said(tmp_path, monkeypatch):
    """A real JVM running a class that does not exist stands in for dtutil's failure."""
    java_home = Path(os.environ.get("JAVA_HOME") or "/usr")
    if not (java_home / "bin" / "java").exists():
        pytest.skip("no java")
    monkeypatch.setenv("CLASSPATH", str(tmp_path))  # no Hadoop jars: dtutil's class is missing
    with pytest.raises(hdfstokens.TokenError, match="dtutil failed .*DtUtilShell"):
        hdfstokens.fetch("me@R", tmp_path / "k", "hdfs://nn:1", tmp_path / "t")
