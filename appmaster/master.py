"""The ApplicationMaster's I/O: runs beside skein's Java AppMaster as its driver script.

It hears every export, every agent's word and every container's end as registry events (no
polling), reads the agents' heartbeats when due, and feeds them all to the job's rules
(appmaster/job.py), then does what those decide: asks YARN for containers, kills them,
publishes the cluster spec, ends the application.
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import threading
import time

import skein

from appmaster import attempts, registry, webpage
from appmaster.job import (
    Action,
    EndJob,
    Fence,
    Job,
    Kill,
    PublishSpec,
    Request,
    ShowTensorBoard,
    Task,
    TrainingDone,
)
from appmaster.jobplan import JobPlan
from appmaster.view import JobView
from appmaster.vocabulary import JobState, Role

log = logging.getLogger("tfyarn.master")

ALL_STATES = ["WAITING", "REQUESTED", "RUNNING", "SUCCEEDED", "FAILED", "KILLED"]


class Outcome(Exception):
    """Ends the application with a final status and diagnostics."""

    def __init__(self, status: str, diagnostics: str) -> None:
        super().__init__(diagnostics)
        self.status = str(status)
        self.diagnostics = diagnostics


class Master:
    def __init__(self, app: skein.ApplicationClient, plan: JobPlan, work_dir: str,
                 am_attempt: int = 1) -> None:
        self.app = app
        self.plan = plan
        self.work_dir = work_dir
        self.job = Job(plan, time.monotonic(), am_attempt)
        # skein asks for the first role's containers itself at start-up (the spec's
        # instances, see tfyarn/appspec.py): those are adopted, not asked for again.
        self.adoptable: dict[tuple[str, int], str] = {}
        self.lock = threading.Lock()  # the web page reads while events are handled

    # ------------------------------------------------------------ main loop

    def run(self) -> Outcome:
        events = self.app.kv.event_queue()
        events.subscribe(prefix="exports/", event_type="PUT")
        events.subscribe(prefix="status/", event_type="PUT")
        events.subscribe(prefix="task/", event_type="DELETE")
        events.subscribe(prefix="mirror/", event_type="PUT")
        events.subscribe(prefix="progress/", event_type="PUT")
        try:
            with self.lock:
                self.adoptable = self.containers_skein_requested()
                self.perform(self.job.start(time.monotonic()))
                self.adoptable = {}
            while True:
                try:
                    event = events.get(timeout=self.seconds_to_next_deadline())
                except queue.Empty:
                    with self.lock:
                        self.on_deadline(time.monotonic())
                    continue
                with self.lock:
                    self.handle(event)
        except Outcome as outcome:
            return outcome

    def seconds_to_next_deadline(self) -> float | None:
        deadline = self.job.next_deadline()
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def handle(self, event: skein.kv.Event) -> None:
        kind, now = event.key.split("/", 1)[0], time.monotonic()
        if kind == "exports":
            self.perform(self.job.on_export(registry.Export.from_json(event.result.value), now))
        elif kind == "status":
            self.on_status(registry.container_of(event.key), json.loads(event.result.value), now)
        elif kind == "task":
            self.on_container_end(registry.container_of(event.key), now)
        elif kind in ("mirror", "progress"):
            self.job.on_status(registry.container_of(event.key),
                               **{kind: json.loads(event.result.value)})

    def on_status(self, container: str, status: dict, now: float) -> None:
        """An agent's word on its task."""
        if "gpus" in status:  # what its agent found: its own GPUs, or why it found none
            self.job.on_status(container, gpus=status["gpus"])
        if status["state"] == "started":
            self.perform(self.job.on_started(
                container, now, node=status.get("node"),
                yarn_container_id=status.get("yarn_container_id"), user=status.get("user")))
        elif status["state"] == "running":
            self.perform(self.job.on_running(container, now))
        elif status["state"] == "exited":
            code = status.get("exit_code")
            task = self.job.task_of(container)
            failure = self.describe_failure(task, container, "exited", code) if (
                task and code != 0 and task.role != Role.TENSORBOARD) else ""
            self.perform(self.job.on_exited(container, code, now, failure))

    def on_container_end(self, container: str, now: float) -> None:
        """YARN ended the container (the registry dropped the key it owned)."""
        task = self.job.task_of(container)
        if task is None:
            self.job.on_container_end(container, False, now)  # one the job stopped itself
            return
        report = self.container_report(task.role, container)
        state = str(report.state) if report else "UNKNOWN"
        failure = "" if state == "SUCCEEDED" else self.describe_failure(task, container, state)
        self.perform(self.job.on_container_end(container, state == "SUCCEEDED", now, failure))

    def on_deadline(self, now: float) -> None:
        if self.job.waiting_for_yarn(now):  # given but still localizing is not "not given"
            self.job.on_allocated({c.id: c.yarn_node_http_address
                                   for c in self.app.get_containers(states=["RUNNING"])})
        if self.job.heartbeats_due(now):
            beats = {registry.container_of(key): value
                     for key, value in self.app.kv.get_prefix("alive/").items()}
            self.perform(self.job.on_heartbeats(beats, now))
        self.perform(self.job.on_tick(now))

    # ------------------------------------------------------------ actions

    def perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Request):
                self.request(action.task, action.generation)
            elif isinstance(action, Kill):
                self.app.kill_container(action.container)
            elif isinstance(action, Fence):
                self.app.kv.discard(registry.task_key(action.container))
            elif isinstance(action, PublishSpec):
                self.app.kv.put(registry.spec_key(action.generation),
                                action.spec.to_json().encode())
                log.info("cluster spec (generation %d): %s", action.generation,
                         action.spec.to_json())
            elif isinstance(action, ShowTensorBoard):
                self.app.ui.add_page(Role.TENSORBOARD, f"http://{action.address}",
                                     link_name="TensorBoard")
                log.info("TensorBoard at http://%s", action.address)
            elif isinstance(action, TrainingDone):
                self.app.kv.put(registry.TRAINING_DONE_KEY, b"1")
            elif isinstance(action, EndJob):
                raise Outcome(action.status, action.diagnostics)

    def request(self, task: Task, generation: int) -> None:
        container = self.adoptable.pop((task.role, task.index), None) if generation == 0 else None
        if container is None:
            container = self.app.add_container(task.role).id
        assignment = self.job.assigned(task, container, time.monotonic())
        # Owned by the container: its end, however it comes, deletes the key and tells us.
        self.app.kv.put(registry.task_key(container), assignment.to_json().encode(),
                        owner=container)

    def containers_skein_requested(self) -> dict[tuple[str, int], str]:
        """Containers skein asked for at start-up (named ``<service>_<n>``), by task."""
        found = {}
        for container in self.app.get_containers(states=["WAITING", "REQUESTED", "RUNNING"]):
            service, _, number = container.id.rpartition("_")
            found[(service, int(number))] = container.id
        return found

    # ------------------------------------------------------------ views and reports

    def view(self) -> dict:
        """The job as the web page, `tfyarn status` and the final log line show it."""
        with self.lock:
            return JobView.of(self.job, self.app.id, self.work_dir, time.monotonic()).to_dict()

    def container_report(self, role: str, container: str) -> skein.Container | None:
        for report in self.app.get_containers(services=[role], states=ALL_STATES):
            if report.id == container:
                return report
        return None

    def describe_failure(self, task: Task, container: str, state: str,
                         code: int | None = None) -> str:
        """Where and how a task's container failed, with its last stderr lines."""
        report = self.container_report(task.role, container)
        where = (f"{report.yarn_container_id} on {report.yarn_node_http_address}"
                 if report else container)
        if code is None:
            code = (self._kv_json(registry.status_key(container)) or {}).get("exit_code")
        tail = (self.app.kv.get(registry.tail_key(container)) or b"").decode(errors="replace")
        message = report.exit_message if report else ""
        text = (f"({where}): container {state}"
                + (f", exit code {code}" if code is not None else "")
                + (f": {message.strip().rstrip('.')}" if message else "") + ".")
        if tail:
            text += f"\nLast stderr lines of {task.name}:\n{tail.rstrip()}"
        return text

    def _kv_json(self, key: str) -> dict | None:
        value = self.app.kv.get(key)
        return json.loads(value) if value else None


def publish_page(app: skein.ApplicationClient, master: Master) -> None:
    """Serve the job's page and link it from skein's UI, behind YARN's tracking URL."""
    server = webpage.serve(master.view)  # loopback: skein's AM runs in this container
    app.ui.add_page(webpage.PAGE_ROUTE, server.target, link_name="TensorFlow job")
    # The target's path is the page's secret: only its port goes to the log.
    log.info("job page on 127.0.0.1:%d (tracking URL /pages/%s/)", server.server_address[1],
             webpage.PAGE_ROUTE)


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    app = skein.ApplicationClient.from_current()
    plan = JobPlan.from_container()
    work_dir = plan.resolved_work_dir(app.id)
    attempt = attempts.attempt_number()
    log.info("tfyarn AppMaster attempt %d of %d for %s", attempt, plan.am_max_attempts, app.id)
    decided = attempts.read_outcome(work_dir) if attempt > 1 else None
    if decided:
        outcome = Outcome(*decided)
    else:
        master = Master(app, plan, work_dir, am_attempt=attempt)
        try:
            publish_page(app, master)
            outcome = master.run()
        except Exception as exc:  # a bug of ours must still end the job with a reason
            log.exception("the tfyarn master failed")
            outcome = Outcome(JobState.FAILED, f"The tfyarn AppMaster failed: {exc!r}")
        with master.lock:
            master.job.ended(JobState(outcome.status))
        print(webpage.FINAL_VIEW_MARKER + json.dumps(master.view()), flush=True)
        if outcome.status == JobState.FAILED:
            attempts.write_outcome(work_dir, outcome.status, outcome.diagnostics)
    log.info("ending the application: %s: %s", outcome.status, outcome.diagnostics)
    app.shutdown(outcome.status, outcome.diagnostics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
