"""Progress read from event files TensorFlow itself wrote (appmaster/agent/tfevents.py has no
TF)."""

from __future__ import annotations

from pathlib import Path

import pytest

from appmaster.agent.tfevents import EventFile, Progress


@pytest.fixture
def tf():
    """TensorFlow, imported by the lane that runs these tests, not by every one that
    collects them (6 CPU-s each)."""
    return pytest.importorskip("tensorflow")


def write_tf2_scalars(tf, folder: Path, values: dict[int, dict[str, float]]) -> None:
    writer = tf.summary.create_file_writer(str(folder))
    with writer.as_default():
        for step, scalars in values.items():
            for tag, value in scalars.items():
                tf.summary.scalar(tag, value, step=step)
    writer.flush()
    writer.close()


def test_tf2_and_tf1_summaries_read_back(tf, tmp_path: Path) -> None:
    write_tf2_scalars(tf, tmp_path / "train", {0: {"loss": 2.0}, 10: {"loss": 1.0},
                                           20: {"loss": 0.5}})
    write_tf2_scalars(tf, tmp_path / "eval", {20: {"accuracy": 0.75}})
    graph = tf.Graph()
    with graph.as_default():  # what MonitoredTrainingSession's hooks write: simple_value
        writer = tf.compat.v1.summary.FileWriter(str(tmp_path / "v1"))
        writer.add_summary(tf.compat.v1.Summary(value=[
            tf.compat.v1.Summary.Value(tag="global_step/sec", simple_value=12.5)]), 30)
        writer.close()

    progress = Progress(tmp_path)
    assert progress.scan()
    summary = progress.summary()
    assert summary["step"] == 30 and summary["steps_per_s"] == 12.5
    assert summary["scalars"]["train/loss"] == 0.5
    assert summary["scalars"]["eval/accuracy"] == pytest.approx(0.75)
    assert summary["evaluated_step"] == 20  # the checkpoint evaluated, not training's step
    assert not progress.scan()  # nothing new


def test_a_growing_file_is_read_once_and_a_half_written_record_waits(tf, tmp_path: Path) -> None:
    write_tf2_scalars(tf, tmp_path, {1: {"loss": 3.0}, 2: {"loss": 2.0}})
    (path,) = tmp_path.glob("events.out.tfevents.*")
    whole = path.read_bytes()
    partial = tmp_path / "copy.tfevents"
    partial.write_bytes(whole[:-7])  # the writer is mid-record
    reader = EventFile(partial)
    first = reader.new_events()
    assert [e.step for e in first if e.scalars] == [1]
    partial.write_bytes(whole)
    rest = reader.new_events()
    assert [(e.step, e.scalars) for e in rest] == [(2, {"loss": 2.0})]
    assert reader.new_events() == []


def test_the_pace_comes_from_steps_and_wall_times(tf, tmp_path: Path) -> None:
    progress = Progress(tmp_path)
    from appmaster.agent.tfevents import Event

    for step, wall in [(100, 1000.0), (110, 1002.0), (150, 1010.0), (160, 1012.0)]:
        progress._take(Event(step, wall, {"loss": 1.0}), "")
    assert progress.step == 160 and progress.steps_per_s == pytest.approx(5.0)
