"""The task's processes in its container, started and supervised together: one, or several
(``yarn.processes.per.container``, torchrun's ``--nproc_per_node``), each a rank of a PyTorch
or JAX group.

- **Started** from the agent's main thread, each wrapped so the kernel kills it when the
  agent dies (``die_with_agent``: PR_SET_PDEATHSIG, which fires when the thread that spawned
  it ends), each with its own environment (its rank, its GPUs) and its own log files.
- **Supervised**: the first process that fails (non-zero exit or a signal) gets its siblings
  stopped (SIGTERM, then SIGKILL after a grace), and the task ends with its exit code and its
  stderr's last lines, naming its local rank; all end with 0: the task succeeds. A SIGTERM
  or SIGINT to the agent (YARN stopping the container) goes to every process, then SIGKILL
  after the same grace.
- **Logs**: local rank 0 writes ``<role>-<index>.stdout/.stderr``, local rank i
  ``<role>-<index>.local<i>.stdout/.stderr``, in the container's log dir (`yarn logs`).

Only the standard library: it runs in every task container.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

STDERR_TAIL_LINES = 20
TERMINATE_GRACE_S = 5.0

# Runs in a fresh interpreter between spawn and exec: asks the kernel to SIGKILL the task
# when the agent dies, then becomes the task. The agent never forks itself with Python code
# to run in the child (preexec_fn): not safe beside its threads (heartbeat, mirror). The
# interpreter runs without `site` (-S): it needs the standard library only, and a large
# env's site-packages and .pth files cost every task's start (half this interpreter's CPU).
DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL('libc.so.6').prctl(1, signal.SIGKILL)\n"  # 1 = PR_SET_PDEATHSIG
    "if os.getppid() != int(os.environ.pop('TFYARN_AGENT_PID')): sys.exit(137)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def redacting_copy(source: BinaryIO, path: Path, secret: str) -> threading.Thread:
    """Copy a process's output into ``path``, line by line, ``secret`` replaced (TensorBoard
    prints the URL it serves, path prefix and all). The thread ends with the output."""
    def copy() -> None:
        with source, open(path, "ab") as sink:
            for line in source:
                sink.write(line.replace(secret.encode(), b"<secret>"))
                sink.flush()

    thread = threading.Thread(target=copy, daemon=True, name=f"copy-{path.name}")
    thread.start()
    return thread


def die_with_agent(command: list[str], env: dict) -> tuple[list[str], dict]:
    """The command wrapped so that no task process outlives a killed agent."""
    return [sys.executable, "-S", "-c", DIE_WITH_PARENT, *command], {
        **env, "TFYARN_AGENT_PID": str(os.getpid())}


def process_tree(roots: Iterable[int]) -> list[int]:
    """``roots`` and every live process under them (their children, theirs...), from
    /proc: a rank's own processes too, such as its data loader's workers."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:  # pid (comm) state ppid ...
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # it ended in between
        children.setdefault(parent, []).append(int(entry))
    tree, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def handles(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (its SigCgt mask in /proc)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError):
        pass  # it ended in between
    return False


def signal_handlers(roots: Iterable[int], signum: int) -> int:
    """Send ``signum`` to each process of the trees under ``roots`` that handles it; how many
    got it. One without a handler is spared: the signal's default would end it (a shell
    that started the script, a program that is not Python)."""
    sent = 0
    for pid in process_tree(roots):
        if handles(pid, signum):
            with contextlib.suppress(ProcessLookupError):  # ended in between
                os.kill(pid, signum)
                sent += 1
    return sent


def log_name(name: str, local_rank: int) -> str:
    """The stem of a process's log files: the task's own for local rank 0."""
    return name if local_rank == 0 else f"{name}.local{local_rank}"


@dataclass(frozen=True)
class GroupEnd:
    """How the task's processes ended: ``code`` 0 when all succeeded, else the first failed
    one's (a signal N as 128 + N, as a shell says it), ``failed`` its local rank, ``tail``
    its stderr's last lines (local rank 0's when all succeeded)."""

    code: int
    tail: str
    failed: int | None = None


class ProcessGroup:
    """The task's processes, one per environment in ``envs``, all running ``command``."""

    def __init__(self, command: list[str], envs: Sequence[dict], name: str, log_dir: Path,
                 secret: str = "", grace_s: float = TERMINATE_GRACE_S) -> None:
        self.name, self.log_dir, self.grace_s = name, log_dir, grace_s
        self._events: queue.SimpleQueue = queue.SimpleQueue()  # put() is safe in a handler
        self.children = [self._start(command, env, i, secret) for i, env in enumerate(envs)]

    def _paths(self, local_rank: int) -> tuple[Path, Path]:
        stem = log_name(self.name, local_rank)
        return self.log_dir / f"{stem}.stdout", self.log_dir / f"{stem}.stderr"

    def _start(self, command: list[str], env: dict, local_rank: int,
               secret: str) -> subprocess.Popen:
        """``secret``: a word its output must not carry into the logs (TensorBoard's path)."""
        out_path, err_path = self._paths(local_rank)
        command, env = die_with_agent(command, env)
        with open(out_path, "ab") as out, open(err_path, "ab") as err:
            pipe = subprocess.PIPE if secret else None
            child = subprocess.Popen(command, stdout=pipe or out, stderr=pipe or err, env=env)
        copies = [redacting_copy(child.stdout, out_path, secret),
                  redacting_copy(child.stderr, err_path, secret)] if secret else []

        def wait() -> None:
            child.wait()
            for copy in copies:
                copy.join()
            self._events.put(("end", local_rank))

        threading.Thread(target=wait, name=f"wait-{local_rank}", daemon=True).start()
        return child

    def forward_signals(self) -> None:
        """YARN stops a container with SIGTERM, then SIGKILL: pass it on, then make sure.
        From the main thread only."""
        def forward(signum: int, _frame: object) -> None:
            self._events.put(("signal", signum))

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)

    def stop(self) -> None:
        """End every process as a SIGTERM to the agent would (tfyarn ends a healthy task);
        from any thread."""
        self._events.put(("signal", signal.SIGTERM))

    def _signal_running(self, signum: int) -> None:
        for child in self.children:
            if child.returncode is None:
                with contextlib.suppress(ProcessLookupError):  # ended in between
                    child.send_signal(signum)

    def wait(self) -> GroupEnd:
        """Block until every process ended; the first failure stops the others."""
        codes: dict[int, int] = {}
        failed, deadline = None, None
        while len(codes) < len(self.children):
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                kind, value = self._events.get(timeout=timeout)
            except queue.Empty:  # the grace is over
                self._signal_running(signal.SIGKILL)
                deadline = None
                continue
            if kind == "signal":
                self._signal_running(value)
            else:
                code = self.children[value].returncode
                codes[value] = 128 - code if code < 0 else code  # 143 for SIGTERM
                if code == 0 or failed is not None:
                    continue
                failed = value
                self._signal_running(signal.SIGTERM)
            if deadline is None:
                deadline = time.monotonic() + self.grace_s
        return self._end(codes, failed)

    def _end(self, codes: dict[int, int], failed: int | None) -> GroupEnd:
        with open(self._paths(failed or 0)[1], errors="replace") as err:
            tail = "".join(deque(err, maxlen=STDERR_TAIL_LINES))
        if failed is None:
            return GroupEnd(0, tail)
        if len(self.children) > 1:
            tail = (f"local rank {failed} of the container's {len(self.children)} processes "
                    f"failed (exit code {codes[failed]}), the others were stopped; its "
                    f"{log_name(self.name, failed)}.stderr ends:\n{tail}")
        return GroupEnd(codes[failed], tail, failed)
