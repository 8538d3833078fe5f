"""YARN's preemption notice, passed to the task's script as a file it can poll.

The master hears YARN's PreemptionMessage from tfyarn's patched AppMaster and writes the
container's notice key; this agent waits for it (the rendezvous answers the moment it is
written) and creates the file named by registry.NOTICE_FILE_ENV in the script's environment. The
script's side is tfyarn/preemption.py (a TensorFlow termination watcher, a Keras callback, a
function to poll).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from appmaster.agent.mirror import WorkDirMirror
from appmaster.common import registry
from appmaster.common.agentlink import AgentLink

log = logging.getLogger(__name__)

NOTICE_FILE = "preemption-notice"  # in the container's directory
# YARN kills max_wait_before_kill after its notice (15 s by default): the mirror hurries
# a little longer
HURRY_S = 30.0


def notice_path() -> Path:
    return Path(NOTICE_FILE).resolve()


def follow(link: AgentLink, container: str, name: str,
           mirror: WorkDirMirror | None = None) -> dict[str, str]:
    """Wait for the container's notice in a thread of its own; the script's environment
    entry naming the file it will appear as. The chief's ``mirror`` copies to HDFS every
    second for a while after the notice: what the script saves must get there before the
    kill."""
    path = notice_path()
    path.unlink(missing_ok=True)  # a file left from before is no notice

    def wait() -> None:
        try:
            value, _ = link.wait(registry.notice_key(container))
        except Exception as exc:  # the master gone: its heartbeat tells the agent
            log.debug("no preemption notice to wait for: %s", exc)
            return
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(value)
        os.replace(tmp, path)  # whole when seen
        if mirror is not None:
            mirror.hurry(HURRY_S)
        log.warning("%s: YARN will preempt this container; notice in %s", name, path)

    threading.Thread(target=wait, daemon=True, name="preemption-notice").start()
    return {registry.NOTICE_FILE_ENV: str(path)}
