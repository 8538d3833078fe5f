"""The ApplicationMaster's brain: runs beside skein's Java AppMaster as its driver script.

It requests the task containers role by role in priority order, hears every export and
every container's end as registry events (no polling), publishes the cluster spec once
every task has exported, and ends the application when the chief does.
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import time
from dataclasses import dataclass, field

import skein

from appmaster import registry
from appmaster.cluster_spec import ClusterSpec
from appmaster.jobplan import JobPlan

log = logging.getLogger("tfyarn.master")

CHIEF = "chiefworker"
SUCCEEDED, FAILED = "SUCCEEDED", "FAILED"


@dataclass
class Task:
    """One TensorFlow task and the container currently running it."""

    role: str
    index: int
    container: str = ""
    attempt: int = 0
    address: str | None = None
    state: str = "requested"  # requested, started, registered, running, finished, failed

    @property
    def name(self) -> str:
        return f"{self.role} {self.index}"


@dataclass
class PhaseClock:
    """When each start-up phase ended, for the log (and the benchmarks)."""

    requested_at: float = 0.0
    marks: dict[str, float] = field(default_factory=dict)

    def mark_once(self, phase: str) -> None:
        if phase not in self.marks:
            self.marks[phase] = time.monotonic()
            log.info("phase %s: %.3f s after the container requests", phase,
                     self.marks[phase] - self.requested_at)

    def summary(self) -> str:
        order = ["all started", "all registered", "spec published", "all running"]
        points = [("requested", self.requested_at)] + [
            (name, self.marks[name]) for name in order if name in self.marks
        ]
        pairs = zip(points, points[1:], strict=False)
        steps = [f"{a} -> {b}: {tb - ta:.3f} s" for (a, ta), (b, tb) in pairs]
        return "; ".join(steps)


class Outcome(Exception):
    """Raised to end the application with a final status and diagnostics."""

    def __init__(self, status: str, diagnostics: str) -> None:
        super().__init__(diagnostics)
        self.status = status
        self.diagnostics = diagnostics


class Master:
    def __init__(self, app: skein.ApplicationClient, plan: JobPlan) -> None:
        self.app = app
        self.plan = plan
        self.generation = 0
        self.tasks = {key: Task(*key) for key in plan.task_keys()}
        self.by_container: dict[str, Task] = {}
        self.spec_published = False
        self.clock = PhaseClock()
        self.registration_deadline = 0.0

    # ------------------------------------------------------------ main loop

    def run(self) -> Outcome:
        events = self.app.kv.event_queue()
        events.subscribe(prefix="exports/", event_type="PUT")
        events.subscribe(prefix="status/", event_type="PUT")
        events.subscribe(prefix="task/", event_type="DELETE")
        self.request_all()
        try:
            while True:
                try:
                    event = events.get(timeout=self._seconds_to_deadline())
                except queue.Empty:
                    self.registration_timed_out()
                    continue
                self.handle(event)
        except Outcome as outcome:
            return outcome

    def handle(self, event: skein.kv.Event) -> None:
        kind = event.key.split("/", 1)[0]
        if kind == "exports":
            self.on_export(registry.Export.from_json(event.result.value))
        elif kind == "status":
            self.on_status(registry.container_of(event.key), json.loads(event.result.value))
        elif kind == "task":
            self.on_container_end(registry.container_of(event.key))

    # ------------------------------------------------------------ requests

    def request_all(self) -> None:
        """Ask for every task's container, role by role in priority order (skein keeps FIFO)."""
        self.clock.requested_at = time.monotonic()
        self.registration_deadline = self.clock.requested_at + self.plan.registration_timeout_s
        for role in self.plan.roles:
            for index in range(role.instances):
                self.request(self.tasks[(role.name, index)])
        log.info("requested %d containers: %s", len(self.tasks), ", ".join(
            f"{role.instances} {role.name}" for role in self.plan.roles))

    def request(self, task: Task) -> None:
        container = self.app.add_container(task.role)
        task.container, task.state, task.address = container.id, "requested", None
        self.by_container[container.id] = task
        assignment = registry.TaskAssignment(task.role, task.index, self.generation, task.attempt)
        # Owned by the container: its end, however it comes, deletes the key and tells us.
        self.app.kv.put(registry.task_key(container.id), assignment.to_json().encode(),
                        owner=container.id)

    # ------------------------------------------------------------ events

    def on_status(self, container: str, status: dict) -> None:
        task = self.by_container.get(container)
        if task is None or task.state in ("finished", "failed"):
            return
        if status["state"] == "running":
            task.state = "running"
            if all(t.state == "running" for t in self.tasks.values()):
                self.clock.mark_once("all running")
        elif status["state"] == "started" and task.state == "requested":
            task.state = "started"
            if all(t.state != "requested" for t in self.tasks.values()):
                self.clock.mark_once("all started")

    def on_export(self, export: registry.Export) -> None:
        task = self.by_container.get(export.container)
        if task is None or export.generation != self.generation:
            return  # a late word from a container we no longer count on
        task.address, task.state = export.address, "registered"
        log.info("%s registered at %s (container %s)", task.name, export.address, task.container)
        if all(t.address for t in self.tasks.values()):
            self.clock.mark_once("all registered")
            self.publish_spec()

    def publish_spec(self) -> None:
        exports: dict[str, dict[int, str]] = {}
        for task in self.tasks.values():
            exports.setdefault(task.role, {})[task.index] = task.address
        spec = ClusterSpec.from_exports(exports)
        self.app.kv.put(registry.spec_key(self.generation), spec.to_json().encode())
        self.spec_published = True
        self.clock.mark_once("spec published")
        log.info("cluster spec (generation %d): %s", self.generation, spec.to_json())

    def on_container_end(self, container: str) -> None:
        task = self.by_container.pop(container, None)
        if task is None:
            return
        report = self.container_report(task.role, container)
        state = str(report.state) if report else "UNKNOWN"
        if state == "SUCCEEDED":
            task.state = "finished"
            log.info("%s finished (container %s)", task.name, container)
            if task.role == CHIEF:
                raise Outcome(SUCCEEDED, f"The chief finished successfully. {self.clock.summary()}")
            return
        task.state = "failed"
        raise Outcome(FAILED, self.describe_failure(task, container, report, state))

    def registration_timed_out(self) -> None:
        missing = [t for t in self.tasks.values() if not t.address]
        lines = [
            f"Tasks did not register within {self.plan.registration_timeout_s:.0f} s "
            f"(site.global.registration.timeout): {len(missing)} of {len(self.tasks)} missing."
        ]
        for task in missing:
            lines.append(f"  {task.name}: {self.describe_container(task)}")
        raise Outcome(FAILED, "\n".join(lines))

    # ------------------------------------------------------------ reports

    def container_report(self, role: str, container: str) -> skein.Container | None:
        for report in self.app.get_containers(services=[role], states=[
            "WAITING", "REQUESTED", "RUNNING", "SUCCEEDED", "FAILED", "KILLED"
        ]):
            if report.id == container:
                return report
        return None

    def describe_container(self, task: Task) -> str:
        report = self.container_report(task.role, task.container)
        if report is None:
            return f"container {task.container}: unknown to YARN"
        state = str(report.state)
        if state in ("WAITING", "REQUESTED"):
            return (f"container {task.container} still {state}: YARN has not allocated it "
                    "(not enough free resources in the requested partition/queue?)")
        where = report.yarn_node_http_address or "unknown node"
        return (f"container {task.container} ({report.yarn_container_id}) is {state} on "
                f"{where} but its agent never exported an address")

    def describe_failure(self, task: Task, container: str, report, state: str) -> str:
        where = (f"{report.yarn_container_id} on {report.yarn_node_http_address}"
                 if report else container)
        status = self._kv_json(registry.status_key(container)) or {}
        code = status.get("exit_code")
        tail = (self.app.kv.get(registry.tail_key(container)) or b"").decode(errors="replace")
        message = report.exit_message if report else ""
        text = (f"{task.name} failed ({where}): container {state}"
                + (f", exit code {code}" if code is not None else "")
                + (f": {message}" if message else "") + ".")
        if tail:
            text += f"\nLast stderr lines of {task.name}:\n{tail.rstrip()}"
        return text

    def _kv_json(self, key: str) -> dict | None:
        value = self.app.kv.get(key)
        return json.loads(value) if value else None

    def _seconds_to_deadline(self) -> float | None:
        if self.spec_published:
            return None
        return max(0.0, self.registration_deadline - time.monotonic())


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    app = skein.ApplicationClient.from_current()
    plan = JobPlan.from_container()
    try:
        outcome = Master(app, plan).run()
    except Exception as exc:  # a bug of ours must still end the job with a reason
        log.exception("the tfyarn master failed")
        outcome = Outcome(FAILED, f"The tfyarn AppMaster failed: {exc!r}")
    log.info("ending the application: %s: %s", outcome.status, outcome.diagnostics)
    app.shutdown(outcome.status, outcome.diagnostics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
