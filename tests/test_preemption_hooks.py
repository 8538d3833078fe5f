"""What a task's script reads of YARN's preemption notice (tfyarn/preemption.py), and the
build of the AppMaster that passes the notice on (tfyarn/hadoop/amjar.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from appmaster.common.registry import NOTICE_FILE_ENV
from tfyarn import preemption
from tfyarn.hadoop import amjar


@pytest.fixture
def notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "preemption-notice"
    monkeypatch.setenv(NOTICE_FILE_ENV, str(path))
    monkeypatch.setenv("SKEIN_CONTAINER_ID", "chiefworker_0")
    return path


def test_no_notice_until_the_file_appears(notice: Path) -> None:
    assert not preemption.notice_received() and not preemption.termination_watcher_fn()
    notice.write_text("worker_1")
    assert preemption.notice_received() and preemption.termination_watcher_fn()


def test_only_the_task_named_by_the_notice_waits_for_the_kill(notice: Path) -> None:
    notice.write_text("worker_1")  # the chief told of a worker's preemption: it trains on
    assert not preemption.preempted_here()
    preemption.await_kill()  # returns at once
    notice.write_text("chiefworker_0")
    assert preemption.preempted_here()


def test_outside_tfyarn_there_is_never_a_notice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NOTICE_FILE_ENV, raising=False)
    assert not preemption.notice_received() and not preemption.preempted_here()


def test_the_patch_moves_imports_to_the_packages_skeins_jar_shades_them_into() -> None:
    text = ("import com.google.protobuf.ByteString;\nimport io.grpc.Server;\n"
            "import static io.netty.x.Y;\nimport org.apache.hadoop.fs.Path;\n")
    shaded = "import com.anaconda.skein.shaded."
    assert amjar.shaded(text) == (f"{shaded}com.google.protobuf.ByteString;\n"
                                  f"{shaded}io.grpc.Server;\n"
                                  "import static com.anaconda.skein.shaded.io.netty.x.Y;\n"
                                  "import org.apache.hadoop.fs.Path;\n")


def test_the_patch_names_skeins_release_and_the_keys_the_job_reads() -> None:
    text = amjar.patch_text()
    assert [line.split("/")[-1] for line in text.splitlines() if line.startswith("--- ")] \
        == [f"{name}.java" for name in amjar.CLASSES]
    for key in ("tfyarn.preempt.", "tfyarn.placement.", "tfyarn.blacklist"):
        assert f'"{key}"' in text


def test_without_a_jdk_skeins_own_jar_serves_and_the_build_waits_an_hour(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no javac, no yarn
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv(amjar.OFF_ENV, raising=False)
    before = amjar.in_use()
    try:
        assert amjar.use_patched_jar() == amjar.skein_jar()
        failed = amjar.jar_path().with_suffix(".failed")
        assert "no javac" in failed.read_text()  # said, and nothing downloaded
        stamp = failed.stat().st_mtime_ns
        assert amjar.use_patched_jar() == amjar.skein_jar()  # not tried again yet
        assert failed.stat().st_mtime_ns == stamp and not amjar.jar_path().exists()
        assert not list(amjar.cache_dir().glob("*.tar.gz"))
    finally:
        import skein.core

        skein.core._SKEIN_JAR = before
