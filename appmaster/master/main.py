"""The ApplicationMaster's I/O: runs beside skein's Java AppMaster as its driver script.

It serves the agents' rendezvous (appmaster/master/rendezvous.py: their exports, words and
heartbeats; their tasks and the cluster spec) and hears every container's end from skein's
registry, where each ``task/<container>`` key is owned by its container. Both arrive as events
on one queue (no polling); it reads the agents' heartbeats when due, feeds it all to the job's
rules (appmaster/model/job.py), then does what those decide: asks YARN for containers, kills them,
publishes the cluster spec, ends the application.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
import time
from pathlib import Path

import skein

from appmaster.common import agentlink, hdfstokens, registry, storage
from appmaster.common.clusterview import host_of
from appmaster.common.jobplan import JobPlan
from appmaster.common.registry import APPMASTER_BUILD_ENV, AgentState, AgentStatus
from appmaster.common.settings import NODE_FAILURE_THRESHOLD
from appmaster.common.vocabulary import JobState, Role, TaskState
from appmaster.master import attempts, clusterwatch, rendezvous
from appmaster.master.stopping import Stopping
from appmaster.model import verdicts
from appmaster.model.job import (
    Action,
    DumpStacks,
    EndJob,
    Fence,
    FlexAnswer,
    Job,
    Kill,
    PublishSpec,
    Request,
    ShowTensorBoard,
    Stop,
    Task,
    TrainingDone,
)
from appmaster.model.jobactions import CHIEF_STOP_GRACE_S
from appmaster.model.placement import Placement
from appmaster.model.placementwait import relaxed_line
from appmaster.page import webpage
from appmaster.page.report import ReportWriter
from appmaster.page.view import JobView

log = logging.getLogger("tfyarn.master")

SKEIN_KEY_FILE = ".skein.pem"  # skein's per-application key, in the AppMaster's directory
# While tasks wait for containers: how often the RM is asked of the nodes and the queue.
CLUSTER_EVERY_S = 30.0
REFRESH_S = 5.0  # asked again before a decision on waiting tasks, unless this recent


class Master:
    def __init__(self, app: skein.ApplicationClient, plan: JobPlan, work_dir: str,
                 am_attempt: int = 1) -> None:
        self.app = app
        self.plan = plan
        self.work_dir = work_dir
        self.job = Job(plan, time.monotonic(), am_attempt)
        self.job.history.wall_offset = time.time() - time.monotonic()  # for the view's times
        # skein asks for every task's container itself at start-up (the spec's instances,
        # see tfyarn/submission/appspec.py): those are adopted, not asked for again.
        self.adoptable: dict[tuple[str, int], str] = {}
        self.lock = threading.Lock()  # the web page reads while events are handled
        self.store = rendezvous.Store()  # what the agents write and read
        self.events: skein.kv.EventQueue | None = None  # once begun
        self.first_end: EndJob | None = None  # the start's, if it ended the job
        self.placement = Placement(plan)  # where a role's next containers are asked for
        self.placed: dict[str, str] = {}  # the placement last written, by role
        self.cluster = clusterwatch.ClusterWatch(app.id)  # asked while tasks wait
        self.cluster_asked_at = -CLUSTER_EVERY_S
        self.stopping = Stopping(self.store, app.kill_container)  # healthy tasks ended

    # ------------------------------------------------------------ main loop

    def begin(self) -> None:
        """What the agents wait for, first thing (main calls it before the job page and the
        reports): the events heard, the rendezvous served, every task given its container.
        skein started the containers it asked for with its AppMaster: their agents may
        already be looking for the rendezvous."""
        if self.events is not None:
            return
        events = self.app.kv.event_queue()
        events.subscribe(prefix="task/", event_type="DELETE")  # a container ended
        events.subscribe(prefix=registry.PREEMPT_PREFIX, event_type="PUT")  # YARN's notice
        events.subscribe(prefix=registry.CONSTRAINTS_OFF_PREFIX, event_type="PUT")
        events.subscribe(prefix=registry.LOCALIZED_PREFIX, event_type="PUT")  # YARN's copies
        events.subscribe(prefix=registry.FLEX_REQUEST_PREFIX, event_type="PUT")  # tfyarn flex
        # An agent's write joins skein's events on the same queue, in the order it came.
        self.store.on_put = lambda key, value: events.put(
            skein.kv.Event(key, skein.kv.ValueOwnerPair(value, None), "PUT", None))
        self.events = events
        self.serve_rendezvous()
        with self.lock:
            self.first_end = self.start(time.monotonic())
        threading.Thread(target=lambda: self.placement.heard_nodes(self.cluster.partition_hosts()),
                         daemon=True).start()  # the nodes a replacement may be steered to

    def run(self) -> EndJob:
        """Events until one ends the job: how it ended (the job's :class:`EndJob`)."""
        self.begin()
        events = self.events
        refresher = hdfstokens.TokenRefresher.for_job(self.plan.principal, self.work_dir,
                                                      self.publish_tokens)
        if refresher:
            refresher.start()
        try:
            end = self.first_end
            while end is None:
                try:
                    event = events.get(timeout=self.seconds_to_next_deadline())
                except queue.Empty:
                    with self.lock:
                        end = self.on_deadline(time.monotonic())
                    continue
                with self.lock:
                    end = self.handle(event)
            return end
        finally:
            if refresher:
                refresher.stop()

    def start(self, now: float) -> EndJob | None:
        """The job's first requests: the containers skein asked for at its start are
        adopted; any task without one (none when the spec gave every role its instances)
        is asked for now."""
        self.adoptable = self.containers_skein_requested()
        try:
            return self.perform(self.job.start(now))
        finally:
            self.adoptable = {}

    def seconds_to_next_deadline(self) -> float | None:
        asks = self.cluster_asked_at + CLUSTER_EVERY_S if self.job.waits_for_containers() \
            else None
        kills = self.stopping.next_deadline()
        due = [t for t in (self.job.next_deadline(), self.placement.next_escalation(), asks,
                           kills) if t is not None]
        return max(0.0, min(due) - time.monotonic()) if due else None

    def handle(self, event: skein.kv.Event) -> EndJob | None:
        """One event, its actions performed: the job's end if it ended it."""
        kind, now = event.key.split("/", 1)[0], time.monotonic()
        if kind.startswith(registry.PREEMPT_PREFIX):
            self.on_preempt_notice(kind.removeprefix(registry.PREEMPT_PREFIX), now)
            return None
        if kind.startswith(registry.LOCALIZED_PREFIX):  # the patched AppMaster's word
            there, in_all = map(int, event.result.value.decode().split()[:2])
            self.job.on_localized(kind.removeprefix(registry.LOCALIZED_PREFIX), there, in_all)
            return None
        if kind.startswith(registry.CONSTRAINTS_OFF_PREFIX):  # the patched AppMaster's word
            self.job.on_constraints_off(kind.removeprefix(registry.CONSTRAINTS_OFF_PREFIX), now)
            return None
        if kind == "exports":
            return self.perform(self.job.on_export(registry.Export.from_json(event.result.value),
                                                   now))
        if kind == "status":
            return self.on_status(registry.container_of(event.key),
                                  AgentStatus.from_json(event.result.value), now)
        if kind == "task":
            return self.on_container_end(registry.container_of(event.key), now)
        if event.key.startswith(registry.FLEX_REQUEST_PREFIX):
            request = event.key.removeprefix(registry.FLEX_REQUEST_PREFIX)
            try:
                asked = json.loads(event.result.value)
                role, count = str(asked["role"]), int(asked["count"])
            except (ValueError, TypeError, KeyError):  # not tfyarn flex's: answered, not fatal
                return self.perform([FlexAnswer(request, False, "not a flex request")])
            return self.perform(self.job.on_flex(request, role, count, now))
        if kind == "steps":
            steps = json.loads(event.result.value).get("steps") or []
            self.job.on_steps(registry.container_of(event.key), steps, now)
            return None
        if kind in ("mirror", "progress"):
            self.job.on_status(registry.container_of(event.key),
                               **{kind: json.loads(event.result.value)}, now=now)
        return None

    def on_status(self, container: str, status: AgentStatus, now: float) -> EndJob | None:
        """An agent's word on its task."""
        if status.gpus is not None:  # what its agent found: its own GPUs, or why it found none
            self.job.on_status(container, gpus=status.gpus)
        if status.state == AgentState.STARTED:
            if (task := self.job.task_of(container)) and status.node:
                self.placement.ran(task.key, host_of(status.node))
            return self.perform(self.job.on_started(
                container, now, node=status.node, yarn_container_id=status.yarn_container_id,
                user=status.user))
        if status.state == AgentState.RUNNING:
            return self.perform(self.job.on_running(container, now))
        if status.state == AgentState.EXITED:
            code = status.exit_code
            task = self.job.task_of(container)
            failure = self.describe_failure(task, container, "exited", code) if (
                task and code != 0 and task.role != Role.TENSORBOARD) else ""
            if task and code not in (0, None) and not verdicts.killed_by_signal(code):
                self.count_failure(task, container)
            return self.perform(self.job.on_exited(container, code, now, failure))
        return None

    def on_preempt_notice(self, container: str, now: float) -> None:
        """YARN will take the container back (its kill follows after the scheduler's
        max_wait_before_kill): its agent and the chief's tell their scripts (the value: the
        container to be preempted); the chief may save a checkpoint."""
        for told in self.job.on_preempt_notice(container, now):
            self.store.put(registry.notice_key(told), container.encode())

    def on_container_end(self, container: str, now: float) -> EndJob | None:
        """YARN ended the container (the registry dropped the key it owned)."""
        task = self.job.task_of(container)
        if task is None:
            self.job.on_container_end(container, False, now)  # one the job stopped itself
            self.stopping.ended(container)
            return None
        report = self.container_report(task.role, container)
        state = str(report.state) if report else "UNKNOWN"
        end = verdicts.judge(state, report.exit_message if report else "")  # YARN's why
        failure = "" if state == "SUCCEEDED" else self.describe_failure(task, container, state)
        if state != "SUCCEEDED" and end.verdict.counted:
            self.count_failure(task, container)
        return self.perform(self.job.on_container_end(container, state == "SUCCEEDED", now,
                                                      failure, end))

    def count_failure(self, task: Task, container: str) -> None:
        """A failed container counts toward its host's yarn.node.failure.threshold: past it,
        the host joins the job's blacklist (tfyarn's patched AppMaster tells YARN)."""
        if self.placement.failed(task.key, container, task.host):
            self.app.kv.put(registry.BLACKLIST_KEY, self.placement.blacklist().encode())
            kept = (" (kept open for a STRICT task's return: the job's other tasks are asked "
                    "for on other hosts only)" if task.host in self.placement.held() else "")
            log.warning("%s failed on %s: the job uses that host no more (%s)%s", task.name,
                        task.host, NODE_FAILURE_THRESHOLD.key, kept)

    def on_deadline(self, now: float) -> EndJob | None:
        self.stopping.kill_late(now)
        if escalated := self.placement.escalations(now):
            end = self.relax(escalated, now)
            if end is not None:
                return end
        waiting_for_yarn = self.job.waiting_for_yarn(now)
        if waiting_for_yarn:  # given but still localizing is not "not given"
            self.note_allocated()
        # every CLUSTER_EVERY_S while tasks wait, and before the job's decisions on them
        decides = waiting_for_yarn and now >= self.cluster_asked_at + REFRESH_S
        if self.job.waits_for_containers() and (
                decides or now >= self.cluster_asked_at + CLUSTER_EVERY_S):
            self.cluster_asked_at = now
            if facts := self.cluster.facts():
                end = self.perform(self.job.on_cluster(facts.nodes, facts.standing, now,
                                                       facts.pending))
                if end is not None:
                    return end
        if self.job.heartbeats_due(now):
            end = self.perform(self.job.on_heartbeats(self.store.beats(), now))
            if end is not None:
                return end
        return self.perform(self.job.on_tick(now))

    def note_allocated(self) -> None:
        """Tells the job which of its requests YARN has met (skein's RUNNING containers,
        still localizing included)."""
        self.job.on_allocated({c.id: c.yarn_node_http_address
                               for c in self.app.get_containers(states=["RUNNING"])},
                              time.monotonic())

    def relax(self, escalated: dict[tuple[str, int], float], now: float) -> EndJob | None:
        """Requests for named hosts past yarn.placement.escalate.seconds: those YARN has
        not met (given but still localizing is met) are withdrawn and asked for anywhere."""
        self.note_allocated()
        lines = {}
        for key, waited in escalated.items():
            task, role = self.job.tasks.get(key), self.job.plan.role(key[0])
            if task is not None and role is not None:
                lines[key] = relaxed_line(task.name, role, self.placement.asked.get(key, "?"),
                                          waited)
        return self.perform(self.job.on_placement_relaxed(lines, now))

    # ------------------------------------------------------------ actions

    def perform(self, actions: list[Action]) -> EndJob | None:
        """Do what the job decided; its end, if it decided it (always its last action), is
        returned for :meth:`run` to act on."""
        asks: list[Request] = []  # a run of requests, asked for together
        for action in actions:
            if isinstance(action, Request):
                asks.append(action)
                continue
            self.request(asks)
            asks = []
            if isinstance(action, Stop):
                self.stopping.stop(action, time.monotonic())
            elif isinstance(action, Kill):
                # skein releases the container: YARN reports it ABORTED ("Container released
                # by application"), never KILLED_BY_APPMASTER, at which skein's AppMaster
                # would stop reading the heartbeat's other ends (issue 36; the test:
                # tests/test_verdicts_yarn.py, an end beside tfyarn's own kills)
                self.app.kill_container(action.container)
            elif isinstance(action, Fence):  # its agent, if it beats again, ends itself
                self.store.delete(registry.task_key(action.container))
                self.app.kv.discard(registry.task_key(action.container))
            elif isinstance(action, PublishSpec):
                self.publish_spec(action.generation, action.spec.to_json())
                log.info("cluster spec (generation %d): %s", action.generation,
                         action.spec.to_json())
            elif isinstance(action, ShowTensorBoard):
                # skein's UI forwards /pages/tensorboard/<rest> to <target>/<rest>; the
                # task's guard answers only that path (appmaster/common/pageguard.py)
                self.app.ui.add_page(Role.TENSORBOARD, f"http://{action.address}/{action.path}/",
                                     link_name="TensorBoard")
                log.info("TensorBoard at http://%s, for YARN's proxy only (/pages/%s/)",
                         action.address, Role.TENSORBOARD)
            elif isinstance(action, DumpStacks):  # each agent signals its processes
                self.store.put(registry.STACKS_KEY, json.dumps(
                    {"generation": action.generation, "why": action.why}).encode())
            elif isinstance(action, TrainingDone):
                self.store.put(registry.TRAINING_DONE_KEY, b"1")
            elif isinstance(action, FlexAnswer):
                self.app.kv.put(registry.flex_answer_key(action.request), json.dumps(
                    {"accepted": action.accepted, "text": action.text}).encode())
            elif isinstance(action, EndJob):
                return action
        self.request(asks)
        self.stopping.settle()
        return None

    def wind_down(self, timeout_s: float) -> None:
        """The job ends: every task still running is asked to stop, the chief's last copy
        to HDFS awaited (Stopping.wind_down), and copies cut short removed."""
        with self.lock:
            running = {c: t for c, t in self.job.by_container.items()
                       if t.state == TaskState.RUNNING}
        chief = next((c for c, t in running.items() if t.key == self.plan.chief), None)
        if self.stopping.wind_down(list(running), chief, timeout_s):  # no copy under way
            storage.remove_unfinished_copies(self.work_dir)  # no next chief will

    def request(self, asks: list[Request]) -> None:
        """Containers for these tasks: those skein asked for at start-up are adopted; the
        rest are asked for a role at a time, in one call (skein's scale): asked one at a time,
        YARN gave containers beyond them while they came in, which skein released with the
        asks they stood for, and those tasks waited REASK_S for their request again."""
        new: dict[str, list[Task]] = {}
        for ask in asks:
            self.stopping.asked(ask.generation)
            if ask.anywhere:
                self.placement.given_back(ask.task.key)
            key = (ask.task.role, ask.task.index)
            adopted = self.adoptable.pop(key, None) if ask.generation == 0 else None
            if adopted is None:
                new.setdefault(ask.task.role, []).append(ask.task)
            else:
                self.assign(ask.task, adopted)
        for role, tasks in new.items():
            self.place(role, tasks)
            containers = (self.app.scale(role, delta=len(tasks)) if len(tasks) > 1
                          else [self.app.add_container(role)])
            for task, container in zip(tasks, containers, strict=True):
                self.assign(task, container.id)

    def place(self, role: str, tasks: list[Task]) -> None:
        """The role's placement for these requests (appmaster/model/placement.py), written
        where tfyarn's patched AppMaster reads it before asking YARN."""
        now = time.monotonic()
        text = self.placement.for_request(role, [task.key for task in tasks], now,
                                          lost=self.job.recently_lost(now))
        if text != self.placed.get(role, ""):
            self.app.kv.put(registry.PLACEMENT_PREFIX + role, text.encode())
            self.placed[role] = text
            log.info("%s asked for at %s", role, text.replace("\n", ", ") or "any host")

    def assign(self, task: Task, container: str) -> None:
        """``container`` runs ``task``: its agent learns so from the rendezvous."""
        assignment = self.job.assigned(task, container, time.monotonic()).to_json().encode()
        self.store.put(registry.task_key(container), assignment)  # what its agent waits for
        # Owned by the container in skein's registry: its end, however it comes, deletes the
        # key and tells us.
        self.app.kv.put(registry.task_key(container), assignment, owner=container)

    def publish_spec(self, generation: int, spec: str) -> None:
        self.store.put(registry.spec_key(generation), spec.encode())
        self.store.put(registry.LATEST_SPEC_KEY, json.dumps(
            {"generation": generation, "spec": spec}).encode())  # the evaluator's
        self.app.kv.put(registry.spec_key(generation), spec.encode())  # shown on skein's page

    def publish_tokens(self, tokens: bytes) -> None:
        """New HDFS tokens: for the agents (their heartbeats hear of them) and for the
        master's own HDFS calls."""
        self.store.put(registry.TOKENS_KEY, tokens)
        hdfstokens.install(tokens)

    def serve_rendezvous(self) -> None:
        """On the first free of the job's candidate ports, over TLS with skein's certificate
        of this application, which the agents pin (appmaster/common/agentlink.py)."""
        token = Path(agentlink.TOKEN_FILE).read_text().strip()
        tls = rendezvous.server_tls(agentlink.CERT_FILE, SKEIN_KEY_FILE)
        server = rendezvous.serve_on_candidates(self.store, token, tls=tls)
        log.info("agents' rendezvous on port %d", server.server_address[1])

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
            return JobView.of(self.job, self.app.id, self.work_dir, time.monotonic(),
                              os.environ.get(APPMASTER_BUILD_ENV)).to_dict()

    def container_report(self, role: str, container: str) -> skein.Container | None:
        # every state, the ended ones too (skein's default: the active ones only)
        every = [str(state) for state in skein.model.ContainerState]
        for report in self.app.get_containers(services=[role], states=every):
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
            stored = self.store.get(registry.status_key(container))
            code = AgentStatus.from_json(stored[0]).exit_code if stored else None
        tail = self.store.get(registry.tail_key(container))
        tail = tail[0].decode(errors="replace") if tail else ""
        message = report.exit_message if report else ""
        text = (f"({where}): container {state}"
                + (f", exit code {code}" if code is not None else "")
                + (f": {message.strip().rstrip('.')}" if message else "") + ".")
        if localization := verdicts.localization_failure(message):
            text += f"\n{localization}"
        if tail:
            text += f"\nLast stderr lines of {task.name}:\n{tail.rstrip()}"
        return text


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
        outcome = EndJob(JobState(decided[0]), decided[1])
    else:
        master = Master(app, plan, work_dir, am_attempt=attempt)
        reports = None
        try:
            master.begin()  # first: the agents wait for it, the page and the reports do not
            reports = ReportWriter(work_dir, master.view, app.id).start()
            publish_page(app, master)
            outcome = master.run()
        except Exception as exc:  # a bug of ours must still end the job with a reason
            log.exception("the tfyarn master failed")
            outcome = EndJob(JobState.FAILED, f"The tfyarn AppMaster failed: {exc!r}")
        master.wind_down(CHIEF_STOP_GRACE_S)
        with master.lock:
            master.job.ended(outcome.status, time.monotonic())
        print(webpage.FINAL_VIEW_MARKER + json.dumps(master.view()), flush=True)
        if reports is None:  # the start failed: one report, the final one
            reports = ReportWriter(work_dir, master.view, app.id)
        reports.final()  # in the work dir, where `tfyarn report` and `status` find it
        if outcome.status == JobState.FAILED:
            attempts.write_outcome(work_dir, str(outcome.status), outcome.diagnostics)
    log.info("ending the application: %s: %s", outcome.status, outcome.diagnostics)
    app.shutdown(str(outcome.status), outcome.diagnostics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
