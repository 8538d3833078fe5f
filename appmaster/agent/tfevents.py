"""Training progress read from TensorFlow's event files, without TensorFlow.

Every way of training tfyarn runs writes summaries the same way: ``events.out.tfevents.*``
files of TFRecords, each an ``Event`` protocol buffer (step, wall time, scalar values). The
agent reads the ones in its task's local work dir as they grow and reports the newest
figures, so `tfyarn status` and the job page show the global step, steps/s and the last
evaluation metrics while the AppMaster stays free of TensorFlow. Only the standard library.

Formats, from TensorFlow's ``event.proto``, ``summary.proto`` and ``tensor.proto``:
Event {1: wall_time double, 2: step int64, 5: summary}; Summary {1: repeated value};
Value {1: tag, 2: simple_value float, 8: tensor}; TensorProto {1: dtype, 4: tensor_content,
5: float_val, 6: double_val, 7: int_val, 10: int64_val}. A TFRecord is a little-endian
uint64 length, a 4-byte CRC, the data and another 4-byte CRC.
"""

from __future__ import annotations

import contextlib
import math
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

EVENT_FILE_MARK = "tfevents"
STEPS_PER_SECOND_TAGS = ("global_step/sec", "steps_per_sec")  # TF1 hooks, Estimator
RATE_WINDOW_S = 5.0  # steps/s from events at least this far apart
EVALUATION_DIRS = ("eval", "validation")  # summaries there are about a checkpoint
_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_INT64 = 1, 2, 3, 9


# ------------------------------------------------------------------ protocol buffers


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of one message; bytes for length-delimited fields."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at:at + size], at + size
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            return  # groups: not in the messages read here
        yield number, wire, value


def _tensor_scalar(data: bytes) -> float | None:
    """The first number of a TensorProto (scalar summaries hold exactly one)."""
    dtype = 0
    for number, wire, value in _fields(data):
        if number == 1:
            dtype = value
        elif number == 4 and value:  # tensor_content: raw little-endian values
            fmt = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q"}.get(dtype)
            if fmt and len(value) >= struct.calcsize(fmt):
                return float(struct.unpack_from(fmt, value)[0])
        elif number == 5:  # float_val, packed or not
            return struct.unpack_from("<f", value)[0]
        elif number == 6:
            return struct.unpack_from("<d", value)[0]
        elif number in (7, 10):  # int_val, int64_val
            return float(_varint(value, 0)[0] if wire == 2 else value)
    return None


def _scalars(summary: bytes) -> dict[str, float]:
    values = {}
    for number, _, value in _fields(summary):
        if number != 1:
            continue
        tag, scalar = None, None
        for inner, _, item in _fields(value):
            if inner == 1:
                tag = item.decode(errors="replace")
            elif inner == 2:
                scalar = struct.unpack("<f", item)[0]
            elif inner == 8:
                scalar = _tensor_scalar(item)
        if tag is not None and scalar is not None and math.isfinite(scalar):
            values[tag] = scalar
    return values


@dataclass(frozen=True)
class Event:
    step: int
    wall_time: float
    scalars: dict[str, float]


def parse_event(data: bytes) -> Event:
    step, wall_time, scalars = 0, 0.0, {}
    for number, _, value in _fields(data):
        if number == 1:
            wall_time = struct.unpack("<d", value)[0]
        elif number == 2:
            step = value
        elif number == 5:
            scalars = _scalars(value)
    return Event(step, wall_time, scalars)


# ------------------------------------------------------------------ files that grow


@dataclass
class EventFile:
    """One event file read as it grows: each call returns the records added since."""

    path: Path
    offset: int = 0

    def new_events(self) -> list[Event]:
        events = []
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return events
        at = 0
        while at + 12 <= len(data):
            (length,) = struct.unpack_from("<Q", data, at)
            end = at + 12 + length + 4
            if end > len(data):
                break  # the writer is half way through this record
            with contextlib.suppress(IndexError, struct.error):  # not an Event: skip it
                events.append(parse_event(data[at + 12: at + 12 + length]))
            at = end
        self.offset += at
        return events


@dataclass
class Progress:
    """The newest figures of one task's event files: the step, its rate, its last scalars.

    Training and evaluation often write to different subdirectories (``train/``,
    ``eval/``, ``validation/``): scalars keep the subdirectory as a prefix.
    """

    root: Path
    files: dict[Path, EventFile] = field(default_factory=dict)
    step: int | None = None  # training's global step
    evaluated_step: int | None = None  # the newest checkpoint step evaluation summaries name
    steps_per_s: float | None = None
    scalars: dict[str, float] = field(default_factory=dict)
    updated: float | None = None  # the newest event's wall time
    _since: tuple[int, float] | None = None  # (step, wall time) the pace is measured from

    def scan(self) -> bool:
        """Read what was added since the last scan; whether anything was."""
        for path in _event_files(self.root):
            self.files.setdefault(path, EventFile(path))
        seen = False
        for path, tracked in self.files.items():
            where = path.parent.relative_to(self.root).as_posix()
            prefix = "" if where == "." else where + "/"
            for event in tracked.new_events():
                seen = True
                self._take(event, prefix)
        return seen

    def _take(self, event: Event, prefix: str) -> None:
        if event.wall_time and (self.updated is None or event.wall_time >= self.updated):
            self.updated = event.wall_time
        for tag, value in event.scalars.items():
            self.scalars[prefix + tag] = value
            if tag in STEPS_PER_SECOND_TAGS:
                self.steps_per_s = value
        if not event.scalars:
            return  # file headers
        if prefix.startswith(EVALUATION_DIRS):  # which checkpoint: not training's pace
            self.evaluated_step = max(self.evaluated_step or 0, event.step)
            return
        if self.step is not None and event.step <= self.step:
            return
        self.step = event.step
        if self._since is None or event.step < self._since[0]:
            self._since = (event.step, event.wall_time)
        elif event.wall_time - self._since[1] >= RATE_WINDOW_S:  # a recent pace, not the mean
            self.steps_per_s = (event.step - self._since[0]) / (event.wall_time - self._since[1])
            self._since = (event.step, event.wall_time)

    def summary(self) -> dict | None:
        if self.step is None and not self.scalars:
            return None
        return {"step": self.step, "steps_per_s": self.steps_per_s,
                "evaluated_step": self.evaluated_step,
                "scalars": dict(sorted(self.scalars.items())), "updated": self.updated}


def _event_files(root: Path) -> list[Path]:
    found = []
    for folder, _, names in os.walk(root):
        found += [Path(folder) / n for n in names
                  if EVENT_FILE_MARK in n and not n.endswith((".tmp", ".crc"))]
    return sorted(found)
