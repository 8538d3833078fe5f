"""This machine's process table, read from /proc.

On the local cluster every container runs here, so the table shows a job's processes: `down`
uses it to end stray containers, the tests and benchmarks to find, kill and count tasks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

# A YARN container's id in a path: the AppMaster attempt and the container's number.
CONTAINER_ID = re.compile(r"container_(?:e\d+_)?\d+_\d+_(\d+)_(\d+)")


@dataclass(frozen=True)
class Proc:
    pid: int
    argv: tuple[str, ...]
    cwd: str
    ppid: int = 0

    def flag(self, name: str) -> str | None:
        """The value of ``--name=value`` on the command line."""
        prefix = f"--{name}="
        return next((a[len(prefix):] for a in self.argv if a.startswith(prefix)), None)

    def mentions(self, text: str) -> bool:
        """``text`` is in the working directory or in an argument."""
        return text in self.cwd or any(text in arg for arg in self.argv)

    @property
    def am_attempt(self) -> int | None:
        """The AppMaster attempt whose container this process runs in (from its cwd)."""
        match = CONTAINER_ID.search(self.cwd)
        return int(match.group(1)) if match else None

    @property
    def container_number(self) -> int | None:
        match = CONTAINER_ID.search(self.cwd)
        return int(match.group(2)) if match else None

    def short(self) -> str:
        return f"pid {self.pid} [{self.cwd.rsplit('/', 1)[-1]}] {' '.join(self.argv)[:200]}"


def scan_processes() -> list[Proc]:
    """Every live process but this one that has a command line (zombies and kernel threads
    have none)."""
    found = []
    own = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                raw = f.read()
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
            with open(f"/proc/{entry.name}/stat") as f:
                # The command name in brackets may hold spaces: split after its last ')'.
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if raw:
            argv = tuple(a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0"))
            found.append(Proc(int(entry.name), argv, cwd, ppid))
    return found
