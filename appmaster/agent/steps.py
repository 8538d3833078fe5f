"""Each process's training step, read by its agent, and its stacks on the master's request.

- **Steps**: every process of the task gets its own file (``TFYARN_PROGRESS_FILE``), into
  which ``tfyarn.progress.report_step`` (or the script itself) writes its newest step. A
  daemon thread reads them every site.global.progress.interval and, when one changed, puts
  them under ``steps/<container>`` on the master's rendezvous; the master stamps the change
  with its clock and judges stalls and stragglers (appmaster/model/stall.py).
- **Stacks**: when the stall watchdog fires, the master writes ``stacks/request``; each
  agent waits for it and sends :data:`STACKS_SIGNAL` to its processes and every process
  under them that handles it (a data loader's workers: a forked one inherits the handler, a
  fresh interpreter sets its own), on which each writes every thread's Python stack into its
  stderr log (stackdump/sitecustomize.py, which this agent puts first on their PYTHONPATH)
  and goes on.

Only the standard library: it runs in every task container.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from appmaster.agent.processgroup import signal_handlers
from appmaster.common import registry
from appmaster.common.agentlink import AgentLink

log = logging.getLogger("tfyarn.steps")

STEPS_DIR = "steps"  # in the container's directory: one file per local rank
STACKS_SIGNAL = signal.SIGRTMIN + 5  # one no framework uses: its default would end the process
SITE_DIR = Path(__file__).parent / "stackdump"


def process_environment(local_rank: int, environ: dict[str, str]) -> dict[str, str]:
    """What a process needs to report its step and write its stacks on the signal."""
    steps = Path(STEPS_DIR).resolve()
    steps.mkdir(exist_ok=True)
    path = steps / str(local_rank)
    path.unlink(missing_ok=True)  # a step left from an earlier start is no progress
    python_path = environ.get("PYTHONPATH", "")
    return {registry.PROGRESS_FILE_ENV: str(path),
            registry.STACKS_SIGNAL_ENV: str(int(STACKS_SIGNAL)),
            "PYTHONPATH": f"{SITE_DIR}{os.pathsep}{python_path}" if python_path else str(SITE_DIR)}


def read_step(path: Path) -> int | None:
    """The step a process wrote last; None before its first, or if it wrote no number."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return int(float(text))
    except ValueError:
        return None


class StepReporter:
    """Reads the processes' step files every ``interval_s``; ``report`` on each change."""

    def __init__(self, paths: Sequence[Path], report: Callable[[dict], None],
                 interval_s: float) -> None:
        self.paths, self.report, self.interval_s = list(paths), report, interval_s
        self._last: list[int | None] = [None] * len(self.paths)
        self._stop = threading.Event()

    def start(self) -> StepReporter:
        threading.Thread(target=self._loop, daemon=True, name="steps").start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def read(self) -> None:
        steps = [read_step(path) for path in self.paths]
        if steps == self._last:
            return
        self._last = steps
        try:
            self.report({"steps": steps})
        except Exception as exc:  # the master may be gone at the very end
            log.warning("could not report the steps: %s", exc)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.read()


def report_to(link: AgentLink, container: str) -> Callable[[dict], None]:
    key = registry.steps_key(container)
    return lambda steps: link.put(key, json.dumps(steps).encode())


def follow_stack_requests(link: AgentLink, name: str, generation: int,
                          processes: Sequence[subprocess.Popen]) -> None:
    """In a thread of its own: on each request of the master for this task's generation,
    every process still running under ``processes`` writes its stacks, theirs included (a
    data loader's workers). An earlier generation's request is not this one's."""
    def wait() -> None:
        version = 0
        while True:
            try:
                value, version = link.wait(registry.STACKS_KEY, after=version)
            except Exception as exc:  # the master gone: its heartbeat tells the agent
                log.debug("no stacks request to wait for: %s", exc)
                return
            try:
                request = json.loads(value)
            except ValueError:
                continue
            if request.get("generation") != generation:
                continue
            sent = signal_handlers([p.pid for p in processes if p.returncode is None],
                                   STACKS_SIGNAL)
            log.warning("%s: %d process(es) write their stacks to their stderr: %s", name,
                        sent, request.get("why", ""))

    threading.Thread(target=wait, daemon=True, name="stacks").start()
