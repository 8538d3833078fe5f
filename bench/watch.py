"""Watching growing text files (task stdout) for the first line of each kind, and when."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FileMarks:
    """First time each pattern showed up in one growing text file."""

    path: Path
    offset: int = 0
    partial: str = ""
    first: dict[str, float] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # the first match's group 1, if any


class LogWatch:
    """Polls text files (task stdout) for the first line matching each pattern.

    A match's time is the file's mtime when the matching line is the newest line read (then
    it is the moment the line was written), otherwise the moment it was seen.
    """

    def __init__(self, files: Callable[[], Iterable[Path]], patterns: dict[str, str]) -> None:
        self.files = files
        self.patterns = {name: re.compile(p) for name, p in patterns.items()}
        self.marks: dict[Path, FileMarks] = {}

    def poll(self) -> None:
        for path in self.files():
            marks = self.marks.setdefault(path, FileMarks(path))
            try:
                with open(path, "rb") as f:
                    f.seek(marks.offset)
                    chunk = f.read()
                    mtime = os.fstat(f.fileno()).st_mtime
            except OSError:
                continue
            if not chunk:
                continue
            now = time.time()
            marks.offset += len(chunk)
            text = marks.partial + chunk.decode(errors="replace")
            lines = text.split("\n")
            marks.partial = lines.pop()
            for i, line in enumerate(lines):
                for name, pattern in self.patterns.items():
                    if name in marks.first:
                        continue
                    match = pattern.search(line)
                    if match:
                        newest = i == len(lines) - 1 and not marks.partial
                        marks.first[name] = min(mtime, now) if newest else now
                        if match.groups():
                            marks.values[name] = match.group(1)

    def first(self, name: str, file_name: str | None = None,
              after: float = 0.0) -> list[tuple[Path, float]]:
        return [(m.path, m.first[name]) for m in self.marks.values()
                if name in m.first and m.first[name] >= after
                and (file_name is None or m.path.name == file_name)]


def mtimes(paths: Iterable[Path]) -> dict[str, float]:
    out = {}
    for path in paths:
        with contextlib.suppress(OSError):
            out[path.name] = path.stat().st_mtime
    return out
