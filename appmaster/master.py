"""The ApplicationMaster's brain: runs beside skein's Java AppMaster as its driver script.

It requests the task containers role by role in priority order, hears every export and
every container's end as registry events (no polling), publishes the cluster spec once
every task has exported, applies each role's failure policy, and ends the application
when the job's success rule is met.

Failures: a worker is stateless, so a failed worker is replaced by a new container for
the same task index. A ps holds state and the chief drives training, so when one of them
fails the whole TensorFlow cluster restarts as a new generation (old containers killed
first, fresh rendezvous) and the script resumes from the latest checkpoint.
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import skein

from appmaster import attempts, registry, webpage
from appmaster.cluster_spec import ClusterSpec
from appmaster.jobplan import JobPlan
from appmaster.liveness import Liveness

log = logging.getLogger("tfyarn.master")

TENSORBOARD = "tensorboard"
SUCCEEDED, FAILED = "SUCCEEDED", "FAILED"
ALL_STATES = ["WAITING", "REQUESTED", "RUNNING", "SUCCEEDED", "FAILED", "KILLED"]


@dataclass
class Task:
    """One TensorFlow task and the container currently running it."""

    role: str
    index: int
    container: str = ""
    attempt: int = 0
    address: str | None = None
    previous_address: str | None = None  # before its last restart: its successor tries it
    state: str = "requested"  # requested, started, registered, running, finished, failed
    failed_at: float | None = None  # when its last failure was heard, for recovery times
    yarn_container_id: str | None = None
    node: str | None = None  # the NodeManager's host:http-port
    user: str | None = None
    exit_code: int | None = None
    mirror: dict | None = None  # its local work dir against HDFS (appmaster/mirror.py)
    gpus: dict | None = None  # the GPUs its agent found and holds (appmaster/gpus.py)

    def row(self) -> dict:
        log_url = (f"http://{self.node}/node/containerlogs/{self.yarn_container_id}/{self.user}"
                   if self.node and self.yarn_container_id and self.user else None)
        return {"role": self.role, "index": self.index, "state": self.state,
                "address": self.address, "container": self.container,
                "yarn_container_id": self.yarn_container_id, "node": self.node,
                "restarts": self.attempt, "exit_code": self.exit_code, "log_url": log_url,
                "mirror": self.mirror, "gpus": self.gpus}

    @property
    def name(self) -> str:
        return f"{self.role} {self.index}"


@dataclass
class PhaseClock:
    """When each start-up phase of a generation ended, for the log (and the benchmarks)."""

    requested_at: float = 0.0
    marks: dict[str, float] = field(default_factory=dict)

    def restart(self) -> None:
        self.requested_at, self.marks = time.monotonic(), {}

    def mark_once(self, phase: str) -> None:
        if phase not in self.marks:
            self.marks[phase] = time.monotonic()
            log.info("phase %s: %.3f s after the container requests", phase,
                     self.marks[phase] - self.requested_at)

    def seconds(self) -> dict[str, float]:
        return {name: at - self.requested_at for name, at in self.marks.items()}

    def summary(self) -> str:
        order = ["all started", "all registered", "spec published", "all running"]
        points = [("requested", self.requested_at)] + [
            (name, self.marks[name]) for name in order if name in self.marks
        ]
        pairs = zip(points, points[1:], strict=False)
        return "; ".join(f"{a} -> {b}: {tb - ta:.3f} s" for (a, ta), (b, tb) in pairs)


class Outcome(Exception):
    """Raised to end the application with a final status and diagnostics."""

    def __init__(self, status: str, diagnostics: str) -> None:
        super().__init__(diagnostics)
        self.status = status
        self.diagnostics = diagnostics


class Master:
    def __init__(self, app: skein.ApplicationClient, plan: JobPlan, work_dir: str,
                 am_attempt: int = 1) -> None:
        self.app = app
        self.plan = plan
        self.work_dir = work_dir
        self.am_attempt = am_attempt
        self.generation = 0
        # A later AppMaster attempt starts every task again: count the earlier starts.
        self.tasks = {key: Task(*key, attempt=am_attempt - 1) for key in plan.task_keys()}
        # Beside the TensorFlow cluster: not in its spec, its end never ends the job.
        self.tensorboard = Task(TENSORBOARD, 0) if plan.tensorboard else None
        self.by_container: dict[str, Task] = {}
        self.failures: Counter[str] = Counter()
        self.restarts: list[str] = []  # one line per restart, for diagnostics and status
        self.clock = PhaseClock()
        self.started_at = time.monotonic()
        self.allocation_deadline = self.registration_deadline = 0.0
        self.state = "STARTING"
        self.spec: ClusterSpec | None = None
        self.lock = threading.Lock()  # the web page reads while events are handled
        # Agents' heartbeats: a silent task is lost long before YARN notices its node.
        self.liveness = Liveness(plan.heartbeat_timeout_s)
        self.next_liveness_check = 0.0
        self.lost_nodes: dict[str, float] = {}  # host -> when a task there was lost

    # ------------------------------------------------------------ main loop

    def run(self) -> Outcome:
        events = self.app.kv.event_queue()
        events.subscribe(prefix="exports/", event_type="PUT")
        events.subscribe(prefix="status/", event_type="PUT")
        events.subscribe(prefix="task/", event_type="DELETE")
        events.subscribe(prefix="mirror/", event_type="PUT")
        with self.lock:
            self.request_all()
        try:
            while True:
                try:
                    event = events.get(timeout=self._seconds_to_next_deadline())
                except queue.Empty:
                    with self.lock:
                        self.check_deadlines()
                    continue
                with self.lock:
                    self.handle(event)
        except Outcome as outcome:
            self.state = outcome.status
            return outcome

    def mark_stopped(self) -> None:
        """At the end, tasks still running were ended by tfyarn, not failed."""
        for task in self.tasks.values():
            if task.state not in ("finished", "failed"):
                task.state = "finished" if task.exit_code == 0 else "stopped"

    def view(self) -> dict:
        """The job as the web page, `tfyarn status` and the final log line show it."""
        with self.lock:
            now = time.monotonic()
            return {
                "app_id": self.app.id, "name": self.plan.name, "state": self.state,
                "work_dir": self.work_dir,
                "generation": self.generation, "updated": int(time.time() * 1000),
                "tasks": [{**task.row(),
                           "silent_s": self.liveness.silent_for(task.container, now)}
                          for task in self.tasks.values()],
                "heartbeat_timeout_s": self.plan.heartbeat_timeout_s,
                "lost_nodes": sorted(self.lost_nodes),
                "tensorboard": self.tensorboard.row() if self.tensorboard else None,
                "tensorboard_url": (f"http://{self.tensorboard.address}"
                                    if self.tensorboard and self.tensorboard.address else None),
                "cluster_spec": json.loads(self.spec.to_json()) if self.spec else None,
                "restarts": list(self.restarts), "phases": self.clock.seconds(),
            }

    def handle(self, event: skein.kv.Event) -> None:
        kind = event.key.split("/", 1)[0]
        if kind == "exports":
            self.on_export(registry.Export.from_json(event.result.value))
        elif kind == "status":
            self.on_status(registry.container_of(event.key), json.loads(event.result.value))
        elif kind == "task":
            self.on_container_end(registry.container_of(event.key))
        elif kind == "mirror" and (task := self.by_container.get(
                registry.container_of(event.key))):
            task.mirror = json.loads(event.result.value)

    # ------------------------------------------------------------ requests

    def live_tasks(self) -> list[Task]:
        """Tasks the job still counts on (an ignored failed worker is dropped)."""
        return [t for t in self.tasks.values() if t.state != "failed"]

    def request_all(self) -> None:
        """Ask for every task's container, role by role in priority order (skein keeps FIFO).

        At the start, skein has already asked for the first role's containers itself (the
        spec's instances, see tfyarn/appspec.py): those are adopted, not asked for again.
        """
        self.clock.restart()
        adopted = self.containers_skein_requested() if self.generation == 0 else {}
        for role in self.plan.roles:
            for index in range(role.instances):
                self.request(self.tasks[(role.name, index)], adopted.get((role.name, index)))
        if self.tensorboard and self.tensorboard.container not in self.by_container:
            self.request(self.tensorboard)
        log.info("generation %d: requested %d containers (%s)", self.generation, len(self.tasks),
                 ", ".join(f"{role.instances} {role.name}" for role in self.plan.roles))

    def containers_skein_requested(self) -> dict[tuple[str, int], str]:
        """Containers skein asked for at start-up (named ``<service>_<n>``), by task."""
        found = {}
        for container in self.app.get_containers(states=["WAITING", "REQUESTED", "RUNNING"]):
            service, _, number = container.id.rpartition("_")
            found[(service, int(number))] = container.id
        return found

    def request(self, task: Task, container: str | None = None) -> None:
        now = time.monotonic()
        self.allocation_deadline = now + self.plan.allocation_timeout_s
        self.registration_deadline = now + self.plan.registration_timeout_s
        if container is None:
            container = self.app.add_container(task.role).id
        task.previous_address = task.address or task.previous_address
        task.container, task.state, task.address = container, "requested", None
        task.gpus = None  # its new agent says which it holds
        self.by_container[container] = task
        assignment = registry.TaskAssignment(task.role, task.index, self.generation, task.attempt,
                                             task.previous_address)
        # Owned by the container: its end, however it comes, deletes the key and tells us.
        self.app.kv.put(registry.task_key(container), assignment.to_json().encode(),
                        owner=container)

    # ------------------------------------------------------------ events

    def on_status(self, container: str, status: dict) -> None:
        task = self.by_container.get(container)
        if task is None:
            return
        if "gpus" in status:  # what its agent found: its own GPUs, or why it found none
            task.gpus = status["gpus"]
        if status["state"] == "started" and task.state == "requested":
            if self.on_a_lost_node(task, container, status.get("node")):
                return
            task.state = "started"
            task.yarn_container_id = status.get("yarn_container_id")
            task.node, task.user = status.get("node"), status.get("user")
            if task is not self.tensorboard:
                self.liveness.watch(container, time.monotonic())
            if all(t.state != "requested" for t in self.live_tasks()):
                self.clock.mark_once("all started")
        elif status["state"] == "exited":
            task.exit_code = status.get("exit_code")
            if task is not self.tensorboard and task.state not in ("finished", "failed"):
                # The agent's word comes at once, YARN's container end only with skein's next
                # heartbeat to the RM (up to 5 s later): act now; that end is then ours.
                del self.by_container[container]
                self.liveness.forget(container)
                if task.exit_code == 0:
                    self.on_task_succeeded(task)
                else:
                    report = self.container_report(task.role, container)
                    self.on_task_failed(task, self.describe_failure(task, container, report,
                                                                    "exited"))
        elif status["state"] == "running":
            task.state = "running"
            if task.failed_at is not None:
                log.info("%s training again %.2f s after its failure was heard (attempt %d)",
                         task.name, time.monotonic() - task.failed_at, task.attempt)
                task.failed_at = None
            if all(t.state in ("running", "finished") for t in self.live_tasks()):
                self.clock.mark_once("all running")
                self.state = "RUNNING"

    def on_export(self, export: registry.Export) -> None:
        task = self.by_container.get(export.container)
        if task is None:
            return  # a late word from a container we no longer count on
        if task is self.tensorboard:
            task.address, task.state = export.address, "running"
            self.app.ui.add_page(TENSORBOARD, f"http://{export.address}", link_name="TensorBoard")
            log.info("TensorBoard at http://%s", export.address)
            return
        if export.generation != self.generation:
            return
        moved = self.spec is not None and export.address != task.previous_address
        task.address, task.state = export.address, "registered"
        log.info("%s registered at %s (container %s)", task.name, export.address, task.container)
        if moved:
            # Its old port was taken, or YARN put it on another node: the running tasks still
            # hold the old address (a ps keeps calling it), and TF scripts read theirs once.
            # Only a fresh generation gets everyone the new one.
            self.restarts.append(f"{task.name} came back at {export.address}: cluster restarted "
                                 f"as generation {self.generation + 1} from the last checkpoint")
            self.restart_generation(task)
            return
        if all(t.address for t in self.live_tasks()):
            self.clock.mark_once("all registered")
            self.publish_spec()

    def publish_spec(self) -> None:
        """(Re)publish the generation's spec; a replaced worker's new address goes in."""
        exports: dict[str, dict[int, str]] = {}
        for task in self.live_tasks():
            exports.setdefault(task.role, {})[task.index] = task.address
        spec = self.spec = ClusterSpec.from_exports(exports)
        self.app.kv.put(registry.spec_key(self.generation), spec.to_json().encode())
        self.clock.mark_once("spec published")
        log.info("cluster spec (generation %d): %s", self.generation, spec.to_json())

    def on_container_end(self, container: str) -> None:
        task = self.by_container.pop(container, None)
        self.liveness.forget(container)
        if task is None:
            return  # one we killed ourselves
        report = self.container_report(task.role, container)
        state = str(report.state) if report else "UNKNOWN"
        if task is self.tensorboard:
            task.state = "finished" if state == "SUCCEEDED" else "failed"
            log.warning("TensorBoard ended (%s); the job goes on without it", state)
            return
        if state == "SUCCEEDED":
            self.on_task_succeeded(task)
        else:
            self.on_task_failed(task, self.describe_failure(task, container, report, state))

    def on_task_succeeded(self, task: Task) -> None:
        task.state = "finished"
        log.info("%s finished (container %s)", task.name, task.container)
        if self.plan.success_policy == "chief":
            done = (task.role, task.index) == self.plan.chief  # worker 0 without chiefworker
        else:
            done = all(t.state == "finished" for t in self.live_tasks() if t.role != "ps")
        if done:
            raise Outcome(SUCCEEDED, self.success_message())

    def on_a_lost_node(self, task: Task, container: str, node: str | None) -> bool:
        """A replacement YARN placed on a node where a task was just lost goes back: that
        node may be half alive (YARN has not noticed it yet). It is asked for again."""
        host = (node or "").rsplit(":", 1)[0]
        lost_at = self.lost_nodes.get(host)
        if lost_at is None or time.monotonic() - lost_at > 3 * self.plan.heartbeat_timeout_s:
            return False
        log.warning("%s landed on %s, where a task was lost %.0f s ago: asking for another "
                    "container", task.name, host, time.monotonic() - lost_at)
        del self.by_container[container]
        self.app.kill_container(container)
        self.request(task)
        return True

    def check_liveness(self) -> None:
        """Read every agent's heartbeat at once; a task silent past the timeout is lost."""
        now = time.monotonic()
        self.next_liveness_check = now + self.plan.heartbeat_interval_s
        if not self.liveness.watched():
            return
        beats = {registry.container_of(key): value
                 for key, value in self.app.kv.get_prefix("alive/").items()}
        self.liveness.update(beats, now)
        for container, silent_s in self.liveness.silent(now):
            task = self.by_container.get(container)
            self.liveness.forget(container)
            if task is not None and task.state not in ("finished", "failed"):
                self.on_task_lost(task, silent_s)

    def on_task_lost(self, task: Task, silent_s: float) -> None:
        """Like a failure, counted against the role's threshold, and the old container is
        fenced off: if its host comes back, its agent finds its task gone and ends itself."""
        container, host = task.container, (task.node or "?").rsplit(":", 1)[0]
        del self.by_container[container]
        self.lost_nodes[host] = time.monotonic()
        self.app.kv.discard(registry.task_key(container))  # the old agent's fence
        self.app.kill_container(container)  # YARN frees it once it reaches the node
        task.exit_code = None
        reason = (f"{task.name} (attempt {task.attempt}) lost: its agent on {task.node} was "
                  f"silent for {silent_s:.0f} s (site.global.task.heartbeat.timeout "
                  f"{self.plan.heartbeat_timeout_s:.0f} s): its host died or was cut off.")
        self.on_task_failed(task, reason, how=f"lost on {host}")

    def on_task_failed(self, task: Task, reason: str, how: str = "failed") -> None:
        if task.exit_code == registry.PORT_TAKEN_EXIT:
            # Not the task's fault: it starts again on a new port, uncounted.
            self.restarts.append(f"{task.name} found its port taken: restarted on a new one")
            self.restart(task)
            return
        role = self.plan.role(task.role)
        self.failures[task.role] += 1
        failures = self.failures[task.role]
        log.warning("failure %d of %s: %s", failures, task.role, reason)
        if role.failure_policy == "ignore":
            task.state = "failed"
            self.restarts.append(f"{task.name} dropped (failure policy ignore)")
            if not any(t.role == "worker" for t in self.live_tasks()):
                raise Outcome(FAILED, f"Every worker failed and was dropped. Last: {reason}")
            return
        if not role.may_restart(failures):
            task.state = "failed"  # the failure that ends the job, not a task tfyarn stopped
            raise Outcome(FAILED, self.over_threshold_message(task, failures, reason))
        if self.replaceable(task):
            self.restarts.append(f"{task.name} replaced (attempt {task.attempt + 1})" if
                                 how == "failed" else
                                 f"{task.name} {how}: replaced (attempt {task.attempt + 1})")
        else:
            self.restarts.append(f"{task.name} {how}: cluster restarted as generation "
                                 f"{self.generation + 1} from the last checkpoint")
        self.restart(task)

    def restart(self, task: Task) -> None:
        """A stateless worker alone; a ps or the chief with the whole cluster."""
        task.attempt += 1
        task.failed_at = time.monotonic()
        task.exit_code = None
        if self.replaceable(task):
            log.info("replacing %s with a new container (attempt %d)", task.name, task.attempt)
            self.request(task)
        else:
            self.restart_generation(task)

    def replaceable(self, task: Task) -> bool:
        """A plain worker: not the chief (worker 0 in a job without a chiefworker)."""
        return task.role == "worker" and (task.role, task.index) != self.plan.chief

    def restart_generation(self, failed: Task) -> None:
        """End every old container first, then a fresh rendezvous for every task."""
        self.generation += 1
        self.spec, self.state = None, "RESTARTING"
        for task in self.tasks.values():
            if task.container in self.by_container:
                del self.by_container[task.container]  # its end is ours, not a failure
                self.liveness.forget(task.container)
                self.app.kill_container(task.container)
            if task is not failed:
                task.attempt += 1
            task.state, task.failed_at = "requested", failed.failed_at
        log.info("restarting every task as generation %d after %s failed", self.generation,
                 failed.name)
        self.request_all()

    # ------------------------------------------------------------ deadlines

    def _deadlines(self) -> list[float]:
        live = self.live_tasks()
        deadlines = []
        if any(t.state == "requested" for t in live):
            deadlines.append(self.allocation_deadline)
        if any(t.address is None for t in live):
            deadlines.append(self.registration_deadline)
        if self.plan.deadline_s:
            deadlines.append(self.started_at + self.plan.deadline_s)
        if self.liveness.watched():
            deadlines.append(self.next_liveness_check)
        return deadlines

    def _seconds_to_next_deadline(self) -> float | None:
        deadlines = self._deadlines()
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def check_deadlines(self) -> None:
        now = time.monotonic()
        if now >= self.next_liveness_check:
            self.check_liveness()
        live = self.live_tasks()
        if self.plan.deadline_s and now >= self.started_at + self.plan.deadline_s:
            raise Outcome(FAILED, f"The job ran past its deadline of {self.plan.deadline_s:.0f} s "
                          "(site.global.job.deadline) and was stopped.")
        waiting = [t for t in live if t.state == "requested"]
        if waiting and now >= self.allocation_deadline:
            lines = [f"YARN did not allocate {len(waiting)} container(s) within "
                     f"{self.plan.allocation_timeout_s:.0f} s (site.global.allocation.timeout):"]
            lines += [f"  {t.name}: {self.describe_request(t)}" for t in waiting]
            raise Outcome(FAILED, "\n".join(lines))
        missing = [t for t in live if t.address is None]
        if missing and now >= self.registration_deadline:
            lines = [f"Tasks did not register within {self.plan.registration_timeout_s:.0f} s "
                     f"(site.global.registration.timeout): {len(missing)} of {len(live)} missing."]
            lines += [f"  {t.name}: {self.describe_container(t)}" for t in missing]
            raise Outcome(FAILED, "\n".join(lines))

    # ------------------------------------------------------------ reports

    def container_report(self, role: str, container: str) -> skein.Container | None:
        for report in self.app.get_containers(services=[role], states=ALL_STATES):
            if report.id == container:
                return report
        return None

    def describe_request(self, task: Task) -> str:
        role = self.plan.role(task.role)
        gpus = f", {role.gpus} yarn.io/gpu" if role.gpus else ""
        partition = f"node label {role.label!r}" if role.label else "the default partition"
        return (f"asked for {role.memory_mb} MB, {role.vcores} vcore(s){gpus} in {partition}; "
                "no node there has that much free for this queue (check `yarn node -list "
                "-showDetails` and the queue's capacity for that label)")

    def describe_container(self, task: Task) -> str:
        report = self.container_report(task.role, task.container)
        if report is None:
            return f"container {task.container}: unknown to YARN"
        state = str(report.state)
        if state in ("WAITING", "REQUESTED"):
            return f"container {task.container} still {state}: {self.describe_request(task)}"
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
        text = (f"{task.name} (attempt {task.attempt}) failed ({where}): container {state}"
                + (f", exit code {code}" if code is not None else "")
                + (f": {message.strip().rstrip('.')}" if message else "") + ".")
        if tail:
            text += f"\nLast stderr lines of {task.name}:\n{tail.rstrip()}"
        return text

    def over_threshold_message(self, task: Task, failures: int, reason: str) -> str:
        role = self.plan.role(task.role)
        if role.failure_policy == "fatal":
            rule = "its failure policy is fatal"
        else:
            rule = (f"that is more than its yarn.container.failure.threshold of "
                    f"{role.failure_threshold}")
        return (f"Component {task.role} failed {failures} time(s); {rule}. "
                f"The job is stopped.\n{reason}")

    def success_message(self) -> str:
        text = f"The chief finished successfully. {self.clock.summary()}."
        if self.am_attempt > 1:
            text += (f" AppMaster attempt {self.am_attempt}: the earlier attempt was lost and "
                     "every task started again from the checkpoint.")
        if self.restarts:
            text += f" Restarts ({len(self.restarts)}): " + "; ".join(self.restarts) + "."
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
            outcome = Outcome(FAILED, f"The tfyarn AppMaster failed: {exc!r}")
        master.state = outcome.status
        master.mark_stopped()
        print(webpage.FINAL_VIEW_MARKER + json.dumps(master.view()), flush=True)
        if outcome.status == FAILED:
            attempts.write_outcome(work_dir, outcome.status, outcome.diagnostics)
    log.info("ending the application: %s: %s", outcome.status, outcome.diagnostics)
    app.shutdown(outcome.status, outcome.diagnostics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
