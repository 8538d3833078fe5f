"""`tfyarn tensorboard` without a cluster: the incremental copy of event files, where a job's
work dir is found, the checks before anything starts, and a real TensorBoard on a cache
(started, read through its HTTP API, stopped, and ended with its parent)."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests
from click.testing import CliRunner

from appmaster.common import jobpointer
from appmaster.common.storage import TEMPORARY_MARK
from tfyarn.cli.main import main
from tfyarn.watch import jobrecord, tensorboard_local
from tfyarn.watch.eventcache import PARTIAL_PREFIX, EventCache, LocalEvents, is_event_file
from tfyarn.watch.tensorboard_local import LocalBoard, TensorBoardError, group_members

APP = "application_1700000000000_0007"
EVENTS = "events.out.tfevents.1700000000.chief-host.123.0"


def event_records(tag: str, steps: range) -> bytes:
    """TensorBoard event records (scalars), as TensorFlow's writer appends them."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    out = io.BytesIO()
    writer = RecordWriter(out)
    for step in steps:
        value = summary_pb2.Summary.Value(tag=tag, simple_value=1.0 / (step + 1))
        writer.write(event_pb2.Event(step=step, wall_time=1.7e9 + step,
                                     summary=summary_pb2.Summary(value=[value]))
                     .SerializeToString())
    return out.getvalue()


class CountingEvents(LocalEvents):
    """A local source that records every range read from it."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: list[tuple[str, int, int]] = []

    def chunks(self, relative: str, offset: int, length: int) -> Iterator[bytes]:
        self.reads.append((relative, offset, length))
        yield from super().chunks(relative, offset, length)


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    """A work dir as the mirror leaves it on HDFS: checkpoints, results, event files."""
    work = tmp_path / "work"
    (work / "checkpoints").mkdir(parents=True)
    (work / "eval").mkdir()
    (work / "checkpoints" / EVENTS).write_bytes(event_records("loss", range(10)))
    (work / "eval" / EVENTS.replace("123", "456")).write_bytes(event_records("accuracy", range(3)))
    (work / "checkpoints" / "model.ckpt-10.index").write_bytes(b"index")
    (work / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-10"\n')
    (work / "result.json").write_text("{}")
    # the mirror's upload in progress: not a file yet
    (work / "checkpoints" / f".{EVENTS}{TEMPORARY_MARK}1234abcd").write_bytes(b"partial")
    return work


def test_only_event_files_come_down_in_their_layout(job_dir: Path, tmp_path: Path) -> None:
    cache = EventCache(LocalEvents(job_dir), tmp_path / "cache")
    result = cache.sync()
    wanted = [f"checkpoints/{EVENTS}", f"eval/{EVENTS.replace('123', '456')}"]
    assert sorted(result.new) == wanted and result.files == 2
    assert cache.files() == wanted
    for relative in wanted:
        assert (tmp_path / "cache" / relative).read_bytes() == (job_dir / relative).read_bytes()
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()) == sorted(
        Path(w).name for w in wanted)  # no checkpoint, result or partial upload


def test_a_grown_file_gets_only_its_new_bytes(job_dir: Path, tmp_path: Path) -> None:
    source = CountingEvents(job_dir)
    cache = EventCache(source, tmp_path / "cache")
    cache.sync()
    remote = job_dir / "checkpoints" / EVENTS
    before = remote.stat().st_size
    with open(remote, "ab") as events:  # the chief wrote more; the mirror sent the file again
        events.write(event_records("loss", range(10, 30)))
    source.reads.clear()
    result = cache.sync()
    assert (result.new, result.grown, result.rewritten) == ([], 1, 0)
    appended = [r for r in source.reads if r[1] == before]
    assert appended == [(f"checkpoints/{EVENTS}", before, remote.stat().st_size - before)]
    # Besides the new bytes, only the last few of the old ones, to check they still match.
    assert result.bytes - appended[0][2] <= 64
    assert (tmp_path / "cache" / "checkpoints" / EVENTS).read_bytes() == remote.read_bytes()

    source.reads.clear()
    assert not cache.sync().changed and source.reads == []  # nothing new: nothing read


def test_a_replaced_or_shorter_file_comes_down_whole(job_dir: Path, tmp_path: Path) -> None:
    cache = EventCache(LocalEvents(job_dir), tmp_path / "cache")
    cache.sync()
    remote, local = job_dir / "checkpoints" / EVENTS, tmp_path / "cache" / "checkpoints" / EVENTS
    remote.write_bytes(event_records("other", range(40)))  # longer, other bytes
    assert cache.sync().rewritten == 1 and local.read_bytes() == remote.read_bytes()
    remote.write_bytes(event_records("loss", range(2)))  # shorter
    assert cache.sync().rewritten == 1 and local.read_bytes() == remote.read_bytes()


def test_a_copy_in_progress_is_no_event_file_for_tensorboard(job_dir: Path,
                                                             tmp_path: Path) -> None:
    """TensorBoard reads any file with "tfevents" in its name; a half-copied one must not
    have it, and none is left once the pass ends."""
    seen: list[str] = []

    class Watching(LocalEvents):
        def chunks(self, relative: str, offset: int, length: int) -> Iterator[bytes]:
            seen.extend(p.name for p in (tmp_path / "cache").rglob("*") if p.is_file())
            yield from super().chunks(relative, offset, length)

    EventCache(Watching(job_dir), tmp_path / "cache").sync()
    partials = [name for name in seen if name.startswith(PARTIAL_PREFIX)]
    assert partials and not any("tfevents" in name for name in partials)
    assert not list((tmp_path / "cache").rglob(f"{PARTIAL_PREFIX}*"))
    assert is_event_file(f"a/{EVENTS}") and not is_event_file(f"a/.{EVENTS}{TEMPORARY_MARK}x")


def test_the_pointer_file_is_under_the_users_hdfs_home() -> None:
    assert jobpointer.pointer_path("alice", APP) == (
        f"hdfs:///user/alice/.tfyarn/jobs/{APP}.json")
    assert jobpointer.pointer_path("alice", APP, "hdfs://nn:8020/") == (
        f"hdfs://nn:8020/user/alice/.tfyarn/jobs/{APP}.json")
    assert jobrecord.pointer_path is jobpointer.pointer_path


def test_appmaster_side_imports_only_the_standard_library_and_storage() -> None:
    code = ("import sys; import appmaster.common.jobpointer; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'click', 'requests', 'tfyarn', 'skein', 'hdfs_native'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def report(state: str) -> SimpleNamespace:
    return SimpleNamespace(id=APP, user="alice", state=state, final_status="UNDEFINED",
                           tracking_url="http://rm/proxy/app/", name="job")


@pytest.fixture
def places(monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """What the pointer file, the live view and the final view say (None: nothing)."""
    said: dict[str, str | None] = {"pointer": None, "live": None, "final": None}

    def view(key: str):
        return SimpleNamespace(work_dir=said[key]) if said[key] else None

    monkeypatch.setattr(jobrecord, "read_pointer", lambda user, app: said["pointer"])
    monkeypatch.setattr(jobrecord.jobview, "live_view", lambda url: view("live"))
    monkeypatch.setattr(jobrecord.jobview, "final_view", lambda app: view("final"))
    return said


def test_the_work_dir_comes_from_the_pointer_then_the_views(places) -> None:
    places.update(pointer="hdfs:///p", live="hdfs:///live", final="hdfs:///final")
    assert jobrecord.work_dir_of(APP, report("FINISHED")) == "hdfs:///p"
    places["pointer"] = None
    assert jobrecord.work_dir_of(APP, report("RUNNING")) == "hdfs:///live"
    assert jobrecord.work_dir_of(APP, report("FINISHED")) == "hdfs:///final"
    assert jobrecord.find_work_dir(APP, report("ACCEPTED")) is None


def test_no_work_dir_says_where_tfyarn_looked(places) -> None:
    with pytest.raises(jobrecord.JobRecordError) as caught:
        jobrecord.work_dir_of(APP, report("KILLED"))
    assert f"/user/alice/.tfyarn/jobs/{APP}.json" in str(caught.value)
    assert "AppMaster's log" in str(caught.value)


def test_work_dirs_tfyarn_cannot_copy_from_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TensorBoardError, match="neither on HDFS nor local"):
        tensorboard_local.event_source("s3a://bucket/jobs/app")
    with pytest.raises(TensorBoardError, match="nodes' own disks"):
        tensorboard_local.event_source(str(tmp_path / "missing"))
    local = tensorboard_local.event_source(f"file://{tmp_path}")
    assert isinstance(local, LocalEvents) and local.root == tmp_path


def test_tensorboard_missing_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tensorboard_local.importlib.util, "find_spec", lambda name: None)
    result = CliRunner().invoke(main, ["tensorboard", APP])
    assert result.exit_code == 1
    assert "TensorBoard is not installed" in result.output
    assert "pip install tensorboard" in result.output


def test_an_unknown_application_id_is_refused_before_anything() -> None:
    result = CliRunner().invoke(main, ["tensorboard", "not-an-app", "--once"])
    assert result.exit_code == 1 and "is not a YARN application id" in result.output


def test_the_port_is_6006_or_a_free_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("localhost", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(tensorboard_local, "DEFAULT_PORT", busy)
        chosen = tensorboard_local.choose_port("localhost", None)
        assert chosen != busy and tensorboard_local.port_free("localhost", chosen)
        with pytest.raises(TensorBoardError, match=f"port {busy} on localhost is in use"):
            tensorboard_local.choose_port("localhost", busy)


def test_the_cache_defaults_under_the_users_cache_dir(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tensorboard_local.default_cache(APP) == tmp_path / "tfyarn" / "tensorboard" / APP
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert tensorboard_local.default_cache(APP) == (
        Path.home() / ".cache" / "tfyarn" / "tensorboard" / APP)


def test_tensorboard_serves_the_cache_and_stops_whole(job_dir: Path, tmp_path: Path) -> None:
    cache = EventCache(LocalEvents(job_dir), tmp_path / "cache")
    cache.sync()
    board = LocalBoard(cache.local, "localhost", tensorboard_local.free_port("localhost"),
                       bind_all=False, title=APP)
    try:
        board.start()
        board.wait_ready()
        runs = requests.get(f"{board.url}data/runs", timeout=10).json()
        assert sorted(runs) == ["checkpoints", "eval"]
        tags = requests.get(f"{board.url}data/plugin/scalars/tags", timeout=10).json()
        assert "loss" in tags["checkpoints"] and "accuracy" in tags["eval"]
    finally:
        board.stop()
    assert board.process is not None and board.process.poll() is not None
    assert not group_members(board.process.pid)  # TensorBoard's data server included


def test_tensorboard_ends_when_tfyarn_is_killed(tmp_path: Path) -> None:
    """No orphan even when the command gets SIGKILL (no cleanup of its own can run)."""
    code = ("import sys; from pathlib import Path; from tfyarn.watch.tensorboard_local import "
            "LocalBoard, free_port; b = LocalBoard(Path(sys.argv[1]), 'localhost', "
            "free_port('localhost'), False, 't'); b.start(); print(b.process.pid, flush=True); "
            "import time; time.sleep(600)")
    (tmp_path / "cache").mkdir()
    parent = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cache")],
                              stdout=subprocess.PIPE, text=True)
    try:
        board = int(parent.stdout.readline())
        time.sleep(1.0)  # past the launcher's exec
        assert group_members(board)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 20
    while group_members(board):
        assert time.monotonic() < deadline, "TensorBoard outlived the killed tfyarn"
        time.sleep(0.2)


# ---------------------------------------------------------------- the command's flow, no YARN

class FakeYarn:
    """Answers application reports from a script of states; grows the chief's event file
    as each is asked (the job training between two looks)."""

    def __init__(self, states: list[str], grow: Path | None = None) -> None:
        self.states, self.grow = states, grow
        self.asked = 0

    def __enter__(self) -> FakeYarn:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def application_report(self, app_id: str) -> SimpleNamespace:
        state = self.states[min(self.asked, len(self.states) - 1)]
        self.asked += 1
        if self.grow is not None and state == "RUNNING":
            with open(self.grow, "ab") as events:
                events.write(event_records("loss", range(self.asked * 10, self.asked * 10 + 10)))
        return SimpleNamespace(id=app_id, user="alice", state=state, name="job", tags={"tfyarn"},
                               final_status="SUCCEEDED" if state == "FINISHED" else "UNDEFINED",
                               tracking_url="http://rm/proxy/app/")


@pytest.fixture
def fake_job(monkeypatch: pytest.MonkeyPatch, job_dir: Path):
    """`tfyarn tensorboard` against FakeYarn, the work dir being ``job_dir`` (local)."""
    def use(yarn: FakeYarn) -> FakeYarn:
        monkeypatch.setattr(tensorboard_local, "report_source", lambda driver: yarn)
        monkeypatch.setattr(tensorboard_local, "find_work_dir", lambda app, report: str(job_dir))
        monkeypatch.setattr(tensorboard_local, "SYNC_INTERVAL_S", 0.01)
        return yarn

    return use


def test_once_prints_the_cache_for_scripts(fake_job, job_dir: Path, tmp_path: Path) -> None:
    fake_job(FakeYarn(["FINISHED"]))
    result = CliRunner().invoke(
        main, ["tensorboard", APP, "--once", "--cache", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{tmp_path / 'c'}\n"  # nothing else on stdout
    assert (tmp_path / "c" / "checkpoints" / EVENTS).read_bytes() == (
        job_dir / "checkpoints" / EVENTS).read_bytes()


def test_once_json_says_the_cache_and_no_url(fake_job, tmp_path: Path) -> None:
    fake_job(FakeYarn(["FINISHED"]))
    result = CliRunner().invoke(
        main, ["tensorboard", APP, "--once", "--json", "--cache", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"application_id": APP, "cache": str(tmp_path / "c"),
                                         "url": None, "event_files": 2}


def test_a_finished_job_without_summaries_says_where_it_looked(fake_job, job_dir: Path,
                                                               tmp_path: Path) -> None:
    for events in job_dir.rglob("events.out.tfevents.*"):
        events.unlink()
    fake_job(FakeYarn(["FINISHED"]))
    for once in (["--once"], []):
        result = CliRunner().invoke(
            main, ["tensorboard", APP, *once, "--cache", str(tmp_path / "c")])
        assert result.exit_code == 1
        assert f"wrote no summaries: no events.out.tfevents.* file below {job_dir}" in (
            result.output)


def test_a_running_job_without_summaries_is_waited_for(fake_job, job_dir: Path,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for events in job_dir.rglob("events.out.tfevents.*"):
        events.unlink()
    fake_job(FakeYarn(["RUNNING", "RUNNING", "FINISHED"]))
    result = CliRunner().invoke(main, ["tensorboard", APP, "--interval", "0.5",
                                       "--cache", str(tmp_path / "c")])
    assert "no event files in" in result.output and "yet: waiting" in result.output
    assert result.exit_code == 1 and "wrote no summaries" in result.output


def test_it_follows_a_running_job_then_stops_syncing(fake_job, job_dir: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Synced while RUNNING (appends), once more at the end, said; Ctrl-C stops TensorBoard."""
    remote = job_dir / "checkpoints" / EVENTS
    yarn = fake_job(FakeYarn(["RUNNING"] * 4 + ["FINISHED"], grow=remote))
    calls: list[str] = []

    class Board(LocalBoard):
        def start(self) -> None:
            calls.append("start")

        def wait_ready(self, timeout_s: float = 0) -> None:
            calls.append("ready")

        def alive(self) -> bool:
            if yarn.asked >= len(yarn.states):  # FINISHED was told: the user presses Ctrl-C
                raise KeyboardInterrupt
            return True

        def stop(self) -> None:
            calls.append("stop")

    monkeypatch.setattr(tensorboard_local, "LocalBoard", Board)
    monkeypatch.setattr(tensorboard_local, "require_tensorboard", lambda: None)
    monkeypatch.setattr(tensorboard_local.time, "sleep", lambda s: None)
    monkeypatch.setattr(tensorboard_local, "choose_port", lambda host, wanted: 6006)
    result = CliRunner().invoke(
        main, ["tensorboard", APP, "--cache", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert result.stdout == "TensorBoard: http://localhost:6006/\n"
    assert "ended (FINISHED, SUCCEEDED)" in result.stderr and "no more syncing" in result.stderr
    assert "stopping TensorBoard" in result.stderr
    assert calls == ["start", "ready", "stop"]
    assert (tmp_path / "c" / "checkpoints" / EVENTS).read_bytes() == remote.read_bytes()
    assert remote.stat().st_size > len(event_records("loss", range(10)))  # it did grow
