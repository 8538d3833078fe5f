"""The stall watchdog and stragglers: the rules on steps (appmaster/model/stall.py), the job's
watchdog played as the master would hear it (appmaster/model/jobstall.py), the settings'
refusals, and the containers' side: tfyarn.progress's file, the agent's reading of it, and
a process writing its stacks on the agent's signal."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from appmaster.agent import steps
from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.vocabulary import Framework, JobState, TaskState
from appmaster.model import stall
from appmaster.model.job import DumpStacks
from appmaster.model.jobactions import CHIEF_STOP_GRACE_S, STOP_GRACE_S, Stop
from appmaster.model.jobstall import STACKS_GRACE_S
from appmaster.page.jobpage import render_page
from appmaster.page.report import render_report
from appmaster.page.view import JobView
from tests.test_job import Cluster, plan
from tfyarn.watch.jobview import format_status, progress_lines

TIMEOUT = 60.0


# ------------------------------------------------------------------ the rules


def test_a_track_is_stalled_only_past_the_timeout_since_its_step_last_changed() -> None:
    track = stall.StepTrack.first(4, 0.0)
    assert stall.stalled({"a": track}, 1000.0, lambda name: TIMEOUT) == []  # its first step
    track.heard(5, 100.0)
    track.heard(5, 150.0)  # the same step again is no progress
    def timeout(name: str) -> float:
        return TIMEOUT

    assert stall.stalled({"a": track}, 159.0, timeout) == []
    assert stall.stalled({"a": track}, 161.0, timeout) == ["a"]
    track.heard(6, 161.0)
    assert stall.stalled({"a": track}, 200.0, timeout) == []
    assert stall.next_stall_check({"a": track}, timeout) == 221.0


def test_behind_are_the_stalled_tasks_at_the_lowest_step() -> None:
    tracks = {"a": stall.StepTrack.first(30, 0.0), "b": stall.StepTrack.first(29, 0.0),
              "c": stall.StepTrack.first(29, 0.0)}  # behind: whatever moved or not
    assert stall.behind(tracks, ["a", "b", "c"]) == ["b", "c"]
    assert stall.behind(tracks, ["a"]) == ["a"]
    assert stall.behind(tracks, []) == []


def test_the_rate_is_over_the_window_and_falls_while_a_task_stands_still() -> None:
    track = stall.StepTrack.first(0, 0.0)
    assert track.rate(0.5) is None  # one report says nothing of a rate
    for second in range(1, 11):
        track.heard(second * 2, float(second))
    assert track.rate(10.0) == pytest.approx(2.0)
    assert track.rate(20.0) == pytest.approx(1.0)  # ten seconds without a step
    for second in range(11, 200):
        track.heard(second * 2, float(second))
    assert track.samples[0][0] >= 199 - stall.RATE_WINDOW_S - 1  # old samples let go
    assert track.rate(199.0) == pytest.approx(2.0, rel=0.05)


def test_a_straggler_is_under_half_the_median_rate_of_three_or_more() -> None:
    assert stall.stragglers({"a": 10.0, "b": 9.0, "c": 4.0}) == ["c"]
    assert stall.stragglers({"a": 10.0, "b": 9.0, "c": 6.0}) == []
    assert stall.stragglers({"a": 10.0, "b": 1.0}) == []  # two: which one is slow?
    assert stall.stragglers({"a": 0.0, "b": 0.0, "c": 0.0}) == []


# ------------------------------------------------------------------ the job's watchdog


def group_plan(**settings) -> JobPlan:
    """A JAX job of three ranks (chiefworker 0, workers 0 and 1), restarts tolerated."""
    roles = (RolePlan("chiefworker", 1, 1, 1024, 1, failure_threshold=2),
             RolePlan("worker", 2, 2, 1024, 1, failure_threshold=2))
    return JobPlan(name="job", entry="train.py", python="python3", work_dir="/w", roles=roles,
                   framework=Framework.JAX, stall_timeout_s=TIMEOUT, **settings)


def report(cluster: Cluster, steps_by_task: dict[tuple[str, int], int]) -> None:
    for key, step in steps_by_task.items():
        cluster.job.on_steps(cluster.container(*key), [step], cluster.now)


def test_a_job_without_a_step_is_never_judged_and_says_it_has_no_signal() -> None:
    cluster = Cluster(group_plan())
    cluster.everyone_running()
    assert cluster.job.next_deadline() is None or cluster.job.watchdog.next_deadline() is None
    cluster.tick(10 * TIMEOUT)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    view = JobView.of(cluster.job, "app", None, cluster.now)
    assert view.watchdog.startswith("no progress signal")
    assert any("no progress signal" in line for line in progress_lines(view, time.time()))
    assert all(task.state == TaskState.RUNNING for task in cluster.job.tasks.values())


def judged_stall(cluster: Cluster, steps: int, last: dict[tuple[str, int], int]) -> list:
    """The chief and workers 0 and 1 run and report steps 1 to ``steps`` - 1, then ``last``
    (those that went on); the watchdog fires, and judges its stacks' grace later: the
    actions of its judgement."""
    cluster.everyone_running()
    for step in range(1, steps):
        report(cluster, dict.fromkeys([("chiefworker", 0), ("worker", 0), ("worker", 1)], step))
        cluster.tick(1.0)
    report(cluster, last)
    cluster.tick(TIMEOUT + 0.5)
    cluster.apply(cluster.job.on_tick(cluster.now))
    cluster.tick(STACKS_GRACE_S)
    return cluster.apply(cluster.job.on_tick(cluster.now))


def test_a_stalled_rank_gets_every_stack_then_its_group_restarts_counted_as_stalled() -> None:
    cluster = Cluster(group_plan())
    cluster.everyone_running()
    ranks = [("chiefworker", 0), ("worker", 0), ("worker", 1)]
    for step in range(1, 30):
        report(cluster, dict.fromkeys(ranks, step))
        cluster.tick(1.0)
    # worker 1 stops before step 30; the others wait in step 30's collective, at 30
    report(cluster, {("chiefworker", 0): 30, ("worker", 0): 30})
    assert cluster.job.watchdog.next_deadline() == pytest.approx(cluster.now - 1.0 + TIMEOUT)
    cluster.tick(TIMEOUT + 0.5)
    actions = cluster.apply(cluster.job.on_tick(cluster.now))
    assert [a for a in actions if isinstance(a, DumpStacks)] == [DumpStacks(0, (
        "stalled (no step for 60 s, site.global.stall.timeout): worker 1 at step 29; every "
        "process's stacks are in its stderr log"))]
    assert not cluster.killed  # the stacks first
    assert cluster.job.watchdog.next_deadline() == pytest.approx(cluster.now + STACKS_GRACE_S)
    cluster.tick(STACKS_GRACE_S)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert sorted(cluster.killed) == ["chiefworker_0", "worker_0", "worker_1"]
    stalled = cluster.job.tasks[("worker", 1)]
    assert stalled.state == TaskState.STALLED and stalled.verdicts == {"stalled": 1}
    assert cluster.job.generation == 1 and cluster.job.state == JobState.RESTARTING
    assert cluster.job.failures["worker"] == 1
    assert cluster.job.restarts == ["worker 1 stalled at step 29: cluster restarted as "
                                    "generation 1"]
    # the new generation: no step yet, so nothing judged however long it compiles
    cluster.everyone_running()
    cluster.tick(5 * TIMEOUT)
    assert cluster.apply(cluster.job.on_tick(cluster.now)) == []
    view = JobView.of(cluster.job, "app", None, cluster.now)
    assert "worker 1 at step 29" in view.watchdog and "generation 0" in view.watchdog
    assert view.verdicts == {"stalled": 1}


def test_a_stalled_rank_0_is_stopped_so_that_its_work_dir_goes_up_before_the_restart(
        ) -> None:
    """Rank 0 stalled, hung in a collective: asked to stop as a healthy chief is (its agent
    SIGTERMs, then SIGKILLs its processes after their grace, then copies its work dir to
    HDFS in full) rather than killed, so the next generation restores what it saved; the
    other ranks are stopped too. Killed at the latest at its grace's end."""
    cluster = Cluster(group_plan())
    # rank 0 hung at 29
    actions = judged_stall(cluster, 30, {("worker", 0): 30, ("worker", 1): 30})
    assert cluster.job.tasks[("chiefworker", 0)].verdicts == {"stalled": 1}
    assert [a for a in actions if isinstance(a, Stop)] == [
        Stop("chiefworker_0", CHIEF_STOP_GRACE_S, chief=True),
        Stop("worker_0", STOP_GRACE_S), Stop("worker_1", STOP_GRACE_S)]
    assert cluster.job.restarts == ["chiefworker 0 stalled at step 29: cluster restarted as "
                                    "generation 1"]


def test_the_rank_behind_is_named_though_its_last_step_was_heard_after_the_others() -> None:
    """Each agent reads its processes' steps on its own beat: the rank that stopped first
    may be heard last, up to one report interval after the others' next step."""
    cluster = Cluster(group_plan(progress_interval_s=5.0))
    cluster.everyone_running()
    ranks = [("chiefworker", 0), ("worker", 0), ("worker", 1)]
    for step in range(1, 29):
        report(cluster, dict.fromkeys(ranks, step))
        cluster.tick(1.0)
    report(cluster, {("chiefworker", 0): 30, ("worker", 0): 30})  # waiting in 30's collective
    cluster.tick(4.0)
    report(cluster, {("worker", 1): 29})  # its agent's beat came later
    cluster.tick(TIMEOUT - 4.0 + 0.5)  # past the others' timeout, not yet past worker 1's
    actions = cluster.apply(cluster.job.on_tick(cluster.now))
    (dump,) = [a for a in actions if isinstance(a, DumpStacks)]
    assert ": worker 1 at step 29; every" in dump.why, dump
    cluster.tick(STACKS_GRACE_S)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.job.tasks[("worker", 1)].verdicts == {"stalled": 1}
    assert cluster.job.restarts == ["worker 1 stalled at step 29: cluster restarted as "
                                    "generation 1"]


def test_a_rank_that_moves_during_the_grace_is_not_judged() -> None:
    cluster = Cluster(group_plan())
    cluster.everyone_running()
    for step in (1, 2):
        report(cluster, {("chiefworker", 0): step, ("worker", 0): step, ("worker", 1): step})
    cluster.tick(TIMEOUT + 1)
    assert any(isinstance(a, DumpStacks) for a in cluster.apply(cluster.job.on_tick(cluster.now)))
    report(cluster, {("chiefworker", 0): 3, ("worker", 0): 3, ("worker", 1): 3})
    cluster.tick(STACKS_GRACE_S)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert not cluster.killed and cluster.job.generation == 0


def test_a_stalled_parameter_server_worker_is_replaced_alone() -> None:
    cluster = Cluster(plan(workers=2, stall_timeout_s=TIMEOUT))
    cluster.everyone_running()
    report(cluster, {("worker", 0): 9, ("worker", 1): 11})
    report(cluster, {("worker", 0): 10, ("worker", 1): 12})  # past their first step
    cluster.tick(20)
    report(cluster, {("worker", 1): 40})
    cluster.tick(TIMEOUT - 10)
    cluster.apply(cluster.job.on_tick(cluster.now))
    cluster.tick(STACKS_GRACE_S)
    cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.killed == ["worker_0"]
    assert cluster.job.tasks[("worker", 0)].state == TaskState.STALLED
    assert cluster.job.generation == 0  # the others train on
    assert cluster.job.restarts == ["worker 0 stalled at step 10: replaced (attempt 1)"]


def test_a_stalled_worker_without_a_ps_restarts_the_cluster_at_once() -> None:
    """MultiWorkerMirrored (no ps): the others wait in the all-reduce the stalled worker
    never joins. Replaced alone, they would stall in turn and the chief be blamed too."""
    cluster = Cluster(plan(ps=0, workers=2, threshold=1, stall_timeout_s=TIMEOUT))
    # worker 1 stopped at 4
    judged_stall(cluster, 5, {("chiefworker", 0): 5, ("worker", 0): 5})
    assert sorted(cluster.killed) == ["chiefworker_0", "worker_0", "worker_1"]
    assert cluster.job.generation == 1 and cluster.job.failures == {"worker": 1}
    assert cluster.job.restarts == ["worker 1 stalled at step 4: cluster restarted as "
                                    "generation 1"]


def test_past_the_threshold_a_stall_fails_the_job() -> None:
    cluster = Cluster(group_plan())
    for _ in range(3):
        cluster.everyone_running()
        report(cluster, {("worker", 0): 1})
        report(cluster, {("worker", 0): 2})
        cluster.tick(TIMEOUT + 1)
        cluster.apply(cluster.job.on_tick(cluster.now))
        cluster.tick(STACKS_GRACE_S)
        cluster.apply(cluster.job.on_tick(cluster.now))
    assert cluster.end is not None and cluster.end.status == JobState.FAILED
    assert "stalled" in cluster.end.diagnostics


def test_summaries_count_until_the_processes_report_steps_of_their_own() -> None:
    cluster = Cluster(plan(workers=1, stall_timeout_s=TIMEOUT))
    cluster.everyone_running()
    chief = cluster.job.tasks[("chiefworker", 0)]
    cluster.job.on_status(chief.container, progress={"step": 500}, now=cluster.now)
    assert chief.steps is not None and chief.steps.step == 500
    cluster.job.on_steps(chief.container, [None], cluster.now)  # no step of its own yet
    assert chief.steps.step == 500
    cluster.job.on_steps(chief.container, [7], cluster.now)
    cluster.job.on_status(chief.container, progress={"step": 600}, now=cluster.now)
    assert chief.steps.step == 7 and not chief.steps_from_summaries


WORKERS = [("worker", 0), ("worker", 1), ("worker", 2)]


def straggling() -> Cluster:
    """A parameter-server job whose worker 2 steps at a fifth of the others' rate."""
    cluster = Cluster(plan(workers=3, stall_timeout_s=TIMEOUT))
    cluster.everyone_running()
    for second in range(30):
        report(cluster, {WORKERS[0]: 10 * second, WORKERS[1]: 9 * second,
                         WORKERS[2]: 2 * second})
        cluster.tick(1.0)
    return cluster


def test_a_straggler_is_flagged_with_its_node_in_status() -> None:
    cluster = straggling()
    view = JobView.of(cluster.job, "app", None, cluster.now)
    assert [t.name for t in view.tasks if t.straggler] == ["worker 2"]
    status = format_status(JobView.from_dict(json.loads(json.dumps(view.to_dict()))))
    line = next(line for line in status.splitlines() if line.split()[:2] == ["worker", "2"])
    assert "straggler on nm1" in line and "STEPS/S" in status


def test_the_page_and_the_report_flag_the_straggler_and_say_the_watchdogs_word() -> None:
    cluster = straggling()
    second = 30
    while not any(isinstance(action, DumpStacks) for action in cluster.apply(
            cluster.job.on_tick(cluster.now))):  # worker 2 now stands still at step 58
        report(cluster, {WORKERS[0]: 10 * second, WORKERS[1]: 9 * second})
        cluster.tick(1.0)
        second += 1
    view = JobView.of(cluster.job, "app", None, cluster.now).to_dict()
    assert view["watchdog"].startswith("last fired in generation 0: stalled (no step for ")
    assert view["watchdog"].endswith("worker 2 at step 58; every process's stacks are in its "
                                     "stderr log")
    for page in (render_page(view), render_report(view)):
        assert f"<dt>watchdog</dt><dd>{html.escape(view['watchdog'])}</dd>" in page
        rows = dict(re.findall(r'data-task="(worker-\d)">(.*?)</tr>', page))
        assert '"col-straggler extra">yes<' in rows["worker-2"] and ">nm1:8042<" in rows[
            "worker-2"]
        assert '"col-straggler extra">no<' in rows["worker-0"] + rows["worker-1"]
        assert '"col-straggler extra">yes<' not in rows["worker-0"] + rows["worker-1"]


# ------------------------------------------------------------------ the settings


def test_a_stall_timeout_below_two_progress_intervals_or_not_a_number_is_refused(
        tmp_path: Path) -> None:
    from tfyarn.errors import TfyarnError
    from tfyarn.jobconfig import load_job

    def load(settings: dict) -> str:
        (tmp_path / "train.py").write_text("")
        (tmp_path / "resources.json").write_text(json.dumps({"components": {
            "chiefworker": {"yarn.role.priority": "1"}}}))
        (tmp_path / "appConfig.json").write_text(json.dumps({"global": {
            "site.global.user.scripts.entry": "train.py", **settings}}))
        with pytest.raises(TfyarnError) as refused:
            load_job(tmp_path / "resources.json", tmp_path / "appConfig.json")
        return str(refused.value)

    text = load({"site.global.stall.timeout": "8", "site.global.progress.interval": "5"})
    assert "appConfig.json" in text and "site.global.stall.timeout" in text
    assert "below twice site.global.progress.interval" in text and '"10"' in text
    text = load({"site.global.stall.timeout": "ten minutes"})
    assert "site.global.stall.timeout" in text and "positive number of seconds" in text


# ------------------------------------------------------------------ the containers' side


def test_report_step_keeps_the_number_and_its_thread_writes_the_newest_whole(
        tmp_path: Path) -> None:
    """The thread writes the newest step of many (at its interval, here 50 ms), and flush()
    writes at once (with an interval of an hour). Each wait below is for the file to say so,
    not a sleep: a busy machine may delay a thread, never change what it writes."""
    path = tmp_path / "steps" / "0"
    path.parent.mkdir()
    script = textwrap.dedent(f"""\
        import time
        from tfyarn import progress
        def written(step):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                text = open({str(path)!r}).read().strip() if os.path.exists({str(path)!r}) else ""
                if text == str(step):
                    return text
                time.sleep(0.01)
            return text
        import os, sys
        progress.WRITE_INTERVAL_S = float(sys.argv[1])
        for step in range(1, 1001):
            progress.report_step(step)
        print(written(1000) if sys.argv[2] == "wait" else "", flush=True)
        if sys.argv[2] == "flush":
            progress.flush()
            print(written(1000), flush=True)
        progress.report_step(1002)
        progress.flush()
        print(written(1002), flush=True)
        """)

    def run(interval_s: str, how: str) -> list[str]:
        path.unlink(missing_ok=True)
        return subprocess.run([sys.executable, "-c", script, interval_s, how],
                              capture_output=True, text=True, check=True, timeout=90,
                              env={**os.environ, "TFYARN_PROGRESS_FILE": str(path)}
                              ).stdout.split()

    assert run("0.05", "wait") == ["1000", "1002"]  # the interval writes the newest
    assert run("3600", "flush") == ["1000", "1002"]  # flush() wakes it: no hour's wait
    assert os.listdir(path.parent) == ["0"]  # the file aside was renamed
    outside = {k: v for k, v in os.environ.items() if k != "TFYARN_PROGRESS_FILE"}
    subprocess.run([sys.executable, "-c", "from tfyarn import progress\n"
                    "progress.report_step(1)"], env=outside, check=True, timeout=60)


def test_the_agent_reports_its_processes_steps_when_they_change(tmp_path: Path) -> None:
    files = [tmp_path / "0", tmp_path / "1"]
    heard: list[dict] = []
    reporter = steps.StepReporter(files, heard.append, interval_s=60)
    reporter.read()
    files[0].write_text("12\n")
    files[1].write_text("not a number")  # a script's own writing, not a step
    reporter.read()
    reporter.read()
    assert heard == [{"steps": [12, None]}]  # nothing before the first step, once each


def test_a_process_writes_every_threads_stack_on_the_agents_signal_and_goes_on(
        tmp_path: Path) -> None:
    own_site = tmp_path / "site"  # an env's own sitecustomize runs too
    own_site.mkdir()
    (own_site / "sitecustomize.py").write_text("import builtins\nbuiltins.OWN_SITE = 1\n")
    script = ("import builtins, threading, time\n"
              "assert builtins.OWN_SITE == 1\n"
              "def waits_for_a_peer():\n    time.sleep(30)\n"
              "threading.Thread(target=waits_for_a_peer, daemon=True).start()\n"
              "print('ready', flush=True)\n"
              "time.sleep(2)\nprint('went on', flush=True)\n")
    env = {**os.environ, "PYTHONPATH": str(own_site)}
    env.update(steps.process_environment(0, env))
    process = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    process.send_signal(steps.STACKS_SIGNAL)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "went on" in out
    assert "waits_for_a_peer" in err and "Current thread" in err
    assert int(signal.SIGRTMIN) < steps.STACKS_SIGNAL < int(signal.SIGRTMAX)


def test_a_component_s_own_stall_timeout_beats_the_job_s_and_is_checked_too(
        tmp_path: Path) -> None:
    from tfyarn.errors import TfyarnError
    from tfyarn.jobconfig import load_job

    (tmp_path / "train.py").write_text("")
    (tmp_path / "appConfig.json").write_text(json.dumps({"global": {
        "site.global.user.scripts.entry": "train.py", "site.global.stall.timeout": "100"}}))

    def load(worker: dict):
        (tmp_path / "resources.json").write_text(json.dumps({"components": {
            "chiefworker": {"yarn.role.priority": "1"},
            "worker": {"yarn.role.priority": "2", **worker}}}))
        return load_job(tmp_path / "resources.json", tmp_path / "appConfig.json")

    spec = load({"yarn.stall.timeout.seconds": "1800"}).spec
    assert (spec.stall_timeout_for("worker"), spec.stall_timeout_for("chiefworker")) == (
        1800.0, 100.0)
    for value, words in (("6", "below twice site.global.progress.interval"),
                         ("soon", "positive number of seconds")):
        with pytest.raises(TfyarnError) as refused:
            load({"yarn.stall.timeout.seconds": value})
        text = str(refused.value)
        assert "resources.json" in text and "yarn.stall.timeout.seconds" in text, text
        assert words in text, text
