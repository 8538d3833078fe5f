"""`tfyarn flex APP ROLE=N`, as Slider's flex: the running job's role to N tasks. The cluster is
asked first whether it can hold the job with the new count (pre-flight's checks on the live
cluster, tfyarn/submission/preflight.py); then the AppMaster decides (what may change:
appmaster/model/jobflex.py) and starts a new generation from the newest checkpoint. Its
answer comes back through skein's key-value store (appmaster/common/registry.py)."""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass

from appmaster.common import registry
from appmaster.common.clusterview import Resources
from appmaster.page.view import JobView
from tfyarn.errors import TfyarnError
from tfyarn.jobconfig.documents import COMMAND_LINE
from tfyarn.submission.preflight import ContainerAsk, Preflight, run_preflight

_COUNT = re.compile(r"([a-z]+)=([0-9]+)")
ANSWER_WAIT_S = 30.0  # the AppMaster answers as it handles the request: at once


@dataclass(frozen=True)
class FlexAsked:
    role: str
    count: int

    @property
    def option(self) -> str:
        return f"{self.role}={self.count}"


def parse(text: str) -> FlexAsked:
    """ROLE=N, e.g. worker=3."""
    found = _COUNT.fullmatch(text.strip())
    if found is None:
        raise TfyarnError(f"{text!r} is not ROLE=N", "write e.g. `tfyarn flex APP worker=3`.")
    return FlexAsked(found.group(1), int(found.group(2)))


def current_counts(view: JobView) -> dict[str, int]:
    """How many tasks of each role the job has now (the newest generation's)."""
    counts: dict[str, int] = {}
    for task in view.tasks:
        counts[task.role] = counts.get(task.role, 0) + 1
    return counts


def job_containers(app, view: JobView, asked: FlexAsked) -> list[ContainerAsk]:
    """The job's containers with the new count, sized as skein was given them at submit."""
    spec = app.get_specification()
    counts = {**current_counts(view), asked.role: asked.count}
    keys = {dimension: asked.option for dimension in ("memory_mb", "vcores", "gpus", "label")}
    requests = []
    for name, service in spec.services.items():
        count = counts.get(name, service.instances)
        size = Resources(service.resources.memory, service.resources.vcores,
                         service.resources.gpus)
        requests.append(ContainerAsk(name, count, size, service.node_label or "", COMMAND_LINE,
                                     keys))
    master = spec.master.resources
    requests.append(ContainerAsk("AppMaster", 1, Resources(master.memory, master.vcores),
                                 spec.node_label or "", COMMAND_LINE, keys,
                                 appmaster=True))
    return requests


def check_capacity(app, view: JobView, asked: FlexAsked, queue: str) -> Preflight:
    """Whether the cluster can ever hold the job with the new count: its problems refuse the
    flex (the job's own containers count in the queue's use now, so "busy" is not said)."""
    checked = run_preflight(job_containers(app, view, asked), queue,
                            (COMMAND_LINE, asked.option))
    return checked


def ask(app, asked: FlexAsked, wait_s: float = ANSWER_WAIT_S) -> tuple[bool, str]:
    """The AppMaster's answer: (accepted, what it did or why not)."""
    request = uuid.uuid4().hex[:12]
    app.kv.put(registry.FLEX_REQUEST_PREFIX + request,
               json.dumps({"role": asked.role, "count": asked.count}).encode())
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        answer = app.kv.get(registry.flex_answer_key(request))
        if answer is not None:
            said = json.loads(answer)
            return bool(said["accepted"]), str(said["text"])
        time.sleep(0.5)
    raise TfyarnError(f"the AppMaster did not answer the flex within {wait_s:.0f} s",
                      "see `tfyarn status APP`; the request may still be handled.")
