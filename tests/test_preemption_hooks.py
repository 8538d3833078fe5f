"""What a task's script reads of YARN's preemption notice (tfyarn/preemption.py), and the
build of the AppMaster that passes the notice on (tfyarn/amjarbuild.py) and the jar a
submit uses (tfyarn/hadoop/amjar.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from appmaster.common.registry import NOTICE_FILE_ENV
from tfyarn import amjarbuild, preemption
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
    assert amjarbuild.shaded(text) == (f"{shaded}com.google.protobuf.ByteString;\n"
                                  f"{shaded}io.grpc.Server;\n"
                                  "import static com.anaconda.skein.shaded.io.netty.x.Y;\n"
                                  "import org.apache.hadoop.fs.Path;\n")


def test_the_patch_names_skeins_release_and_the_keys_the_job_reads() -> None:
    text = amjar.patch_text()
    assert [line.split("/")[-1] for line in text.splitlines() if line.startswith("--- ")] \
        == [f"{name}.java" for name in amjarbuild.CLASSES]
    for key in ("tfyarn.preempt.", "tfyarn.placement.", "tfyarn.blacklist"):
        assert f'"{key}"' in text


def test_a_package_without_the_patched_jar_submits_with_skeins_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(amjar.OFF_ENV, raising=False)
    monkeypatch.setattr(amjar, "BUNDLED_DIR", tmp_path)
    stock = amjar.chosen()
    assert (stock.path, stock.patched) == (amjar.skein_jar(), False)
    assert stock.describe() == ("skein's stock AppMaster (this tfyarn was built without it: no "
                                f"{amjar.jar_name()} in {tmp_path})")
    older = "skein-0.8.2-tfyarn-000000000000-hadoop-3.3.6.jar"  # of an edited patch or recipe
    (tmp_path / older).write_bytes(b"")
    assert amjar.chosen().describe() == (
        f"skein's stock AppMaster ({tmp_path} holds {older}, built from another patch or build "
        f"recipe than this tfyarn's, which names {amjar.jar_name()})")
    (tmp_path / amjar.jar_name()).write_bytes(b"PK")
    assert amjar.chosen() == amjar.AppMasterJar(tmp_path / amjar.jar_name(), True)
    assert amjar.chosen().describe() == f"tfyarn's patched skein AppMaster ({amjar.jar_name()})"
    monkeypatch.setenv(amjar.OFF_ENV, "1")  # to compare with skein's own
    assert not amjar.chosen().patched and amjar.OFF_ENV in amjar.chosen().describe()


def test_the_jar_is_named_by_skeins_release_the_patch_the_recipe_and_the_hadoop_api(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed patch or build (the classes, the import rule, javac's options, skein's
    checksums: all in tfyarn/amjarbuild.py) names another jar, so a cached one of the old
    makings is never taken; the name is made of texts alone, the same on every machine."""
    name = amjar.jar_name()
    assert re.fullmatch(rf"skein-{amjar.SKEIN_VERSION}-tfyarn-[0-9a-f]{{12}}-hadoop-"
                        rf"{amjar.HADOOP_API}\.jar", name), name
    assert amjar.recipe_text() == Path(amjarbuild.__file__).read_text()
    recipe, patch = amjar.recipe_text(), amjar.patch_text()
    monkeypatch.setattr(amjar, "recipe_text", lambda: recipe.replace('"8"', '"11"'))
    assert amjar.jar_name() != name
    monkeypatch.setattr(amjar, "recipe_text", lambda: recipe)
    assert amjar.jar_name() == name
    monkeypatch.setattr(amjar, "patch_text", lambda: patch + "\n")
    assert amjar.jar_name() != name
