"""Operating a job on the local YARN: status, list, logs (live and after), options, errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
import requests
from jobtools import (
    TFYARN,
    JobFiles,
    ReleaseFile,
    app_report,
    interruptible,
    prepare_light_job,
    read_json,
    run_tfyarn,
    submit_and_wait,
    wait_for,
)

from appmaster.common import registry
from tfyarn.cli import exitcodes

pytestmark = pytest.mark.yarn


def light_job(tmp_path: Path, sleep_s: float, release: ReleaseFile,
              *args: str, **settings: str) -> tuple[Path, Path]:
    return prepare_light_job(tmp_path, ["--sleep", str(sleep_s), "--release_file", release.url,
                                        *args],
                             settings={"app.name": "tfyarn-operate-test", **settings})


def listed(yarn_cluster, *options: str) -> list[str]:
    out = run_tfyarn(yarn_cluster, "list", "--json", *options)
    assert out.returncode == 0, out.stderr
    return [app["id"] for app in json.loads(out.stdout)]


def test_status_list_wait_and_logs_while_running_and_after(yarn_cluster, skein_client,
                                                          tmp_path: Path):
    """A detached job, followed as a user does: status (its table, --json with times,
    --exit-code, each task's steps, a straggler with its node), list and its filters, logs
    (live, --follow, after the end), `wait` with the outcome as its exit code; submit's
    options reach YARN and the arguments after -- reach the script in every task.

    The chief and workers report a step every half second through the progress file (no
    tfyarn import), worker 1 (TensorFlow's worker 2) four times slower: in a
    parameter-server job each worker steps on its own, and that one is a straggler."""
    # The tasks end once it exists (on HDFS): live checks come first.
    release = ReleaseFile.fresh(yarn_cluster.layout)
    resources, app_config = light_job(tmp_path, 240, release, "--step_every", "0.5",
                                      "--slow", "worker:2", **{"progress.interval": "1"})
    submitted = run_tfyarn(yarn_cluster, "submit", "--resources", str(resources), "--app-config",
                           str(app_config), "--detach", "--json", "--tag", "team-a",
                           "--am-memory", "640", "--", "--extra", "x y")
    assert submitted.returncode == 0, submitted.stderr
    app_id = json.loads(submitted.stdout)["application_id"]
    tracking_url = json.loads(submitted.stdout)["tracking_url"]

    # YARN got the options.
    report = app_report(yarn_cluster, app_id)
    assert {"tfyarn", "team-a"} <= set(report["applicationTags"].split(","))
    assert report["name"] == "tfyarn-operate-test"
    running = run_tfyarn(yarn_cluster, "status", app_id, "--json", "--exit-code")
    assert running.returncode == exitcodes.JOB_RUNNING, running.stderr
    application = json.loads(running.stdout)["application"]
    assert application["finish_time"] is None
    assert datetime.fromisoformat(application["start_time"]).utcoffset() is not None
    assert app_id in listed(yarn_cluster, "--state", "accepted", "--state", "RUNNING",
                            "--name", "tfyarn-operate-*")
    assert app_id not in listed(yarn_cluster, "--state", "FINISHED", "--name", "tfyarn-operate-*")
    assert app_id not in listed(yarn_cluster, "--all", "--name", "other-name")
    assert app_id not in listed(yarn_cluster, "--all", "--queue", "small")

    # Live: every task running, with its address, container, node and log URL.
    def running_view():
        out = run_tfyarn(yarn_cluster, "status", app_id, "--json")
        view = json.loads(out.stdout)["job"] if out.returncode == 0 else None
        return view if view and view["state"] == "RUNNING" else None

    view = wait_for("all tasks running", running_view)
    # --follow prints as the job goes and returns when it ends; it runs beside the checks below.
    follower = subprocess.Popen([*TFYARN, "logs", app_id, "--role",
                                 "chiefworker", "--follow"], env=yarn_cluster.env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert sorted((t["role"], t["index"]) for t in view["tasks"]) == [
        ("chiefworker", 0), ("ps", 0), ("worker", 0), ("worker", 1)]
    for task in view["tasks"]:
        assert task["state"] == "running" and task["address"] and task["node"]
        assert task["yarn_container_id"].startswith("container_")
        assert requests.get(task["log_url"], timeout=5).ok
    assert view["cluster_spec"]["worker"] == [t["address"] for t in view["tasks"]
                                              if t["role"] == "worker"]
    table = run_tfyarn(yarn_cluster, "status", app_id).stdout
    assert "ROLE" in table and "HOST:PORT" in table and "chiefworker" in table
    exports = requests.get(f"{tracking_url}pages/tfyarn/ws/v1/slider/publisher/"
                           "exports/worker", timeout=5).json()
    assert [e["value"] for e in exports["entries"]["worker"]] == view["cluster_spec"]["worker"]

    assert app_id in listed(yarn_cluster)

    # The patched AppMaster asked each container's NodeManager how much of its files YARN
    # had copied (what a job still localizing its env shows while it waits): all of them.
    localized = skein_client.connect(app_id).kv.get_prefix(registry.LOCALIZED_PREFIX)
    assert len(localized) == 4, localized
    for value in localized.values():
        there, in_all, files_there, files = map(int, value.decode().split())
        assert there == in_all > 0 and files_there == files > 1, localized

    # Each rank's step and rate; the slow worker flagged, with its node, in both views.
    def straggling():
        view = json.loads(run_tfyarn(yarn_cluster, "status", app_id, "--json").stdout)["job"]
        flagged = [(t["role"], t["index"]) for t in view["tasks"] if t.get("straggler")]
        return view if flagged else None

    view = wait_for("a straggler flagged", straggling, timeout_s=60)
    rates = {(t["role"], t["index"]): t for t in view["tasks"]}
    slow = rates[("worker", 1)]
    assert [key for key, t in rates.items() if t.get("straggler")] == [("worker", 1)], rates
    assert all(rates[key]["steps_per_s"] > 2 * slow["steps_per_s"] > 0
               for key in (("chiefworker", 0), ("worker", 0))), rates
    table = run_tfyarn(yarn_cluster, "status", app_id).stdout
    assert f"straggler on {slow['node'].rsplit(':', 1)[0]}: " in table, table

    live = run_tfyarn(yarn_cluster, "logs", app_id, "--role", "worker", "--index", "1")
    assert "light task worker 2 started" in live.stdout  # worker 1 is --task_index=2

    release.touch()
    waited = run_tfyarn(yarn_cluster, "wait", app_id, timeout_s=240)
    assert waited.returncode == exitcodes.OK, waited.stdout + waited.stderr
    assert f"Following {app_id} (tfyarn-operate-test)" in waited.stdout
    assert waited.stdout.splitlines()[-1].startswith(f"{app_id} SUCCEEDED"), waited.stdout
    followed, _ = follower.communicate(timeout=180)
    assert "[chiefworker-0.stdout] light task worker 0 started" in followed
    assert f"{app_id} ended: FINISHED" in followed
    # The script got the files' args, then those after --, in every task.
    records = [read_json(path) for path in JobFiles(yarn_cluster.layout, app_id)
               .glob("light/*.json")]
    assert len(records) == 4 and all(r["argv"][-2:] == ["--extra", "x y"]
                                     for r in records), [r["argv"] for r in records]

    # After the end: YARN's record (final task table, aggregated logs).
    final = wait_for("the final task table",
                     lambda: json.loads(run_tfyarn(yarn_cluster, "status", app_id, "--json")
                                        .stdout)["job"], timeout_s=90)
    assert final["state"] == "SUCCEEDED"
    states = {(t["role"], t["index"]): t["state"] for t in final["tasks"]}
    assert states[("chiefworker", 0)] == "finished" and states[("ps", 0)] == "stopped"
    after = run_tfyarn(yarn_cluster, "logs", app_id, "--role", "ps")
    assert "light task ps 0 started" in after.stdout and "worker 0 started" not in after.stdout
    assert app_id not in listed(yarn_cluster)
    assert app_id in listed(yarn_cluster, "--all")
    ended = json.loads(run_tfyarn(yarn_cluster, "status", app_id, "--json").stdout)
    start = datetime.fromisoformat(ended["application"]["start_time"])
    finish = datetime.fromisoformat(ended["application"]["finish_time"])
    assert start.utcoffset() is not None and 0 < (finish - start).total_seconds() < 600
    assert run_tfyarn(yarn_cluster, "status", app_id, "--exit-code").returncode == 0
    assert app_id in listed(yarn_cluster, "--state", "FINISHED", "--name", "tfyarn-operate-test")
    assert app_id not in listed(yarn_cluster, "--state", "FAILED", "--state", "KILLED")


def test_clear_messages_for_ids_that_are_not_tfyarn_jobs(yarn_cluster, skein_client):
    import skein

    spec = skein.ApplicationSpec(
        name="not-tfyarn", master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                                               script="sleep 1"))
    other = skein_client.submit(spec)
    out = run_tfyarn(yarn_cluster, "status", other)
    assert out.returncode != 0 and "is not a tfyarn job" in out.stderr
    out = run_tfyarn(yarn_cluster, "status", "application_1_9999")
    assert out.returncode != 0 and "YARN knows no application" in out.stderr
    out = run_tfyarn(yarn_cluster, "logs", "not-an-id")
    assert out.returncode != 0 and "is not a YARN application id" in out.stderr


def test_the_java_driver_log_shows_only_with_verbose(yarn_cluster):
    """`kill` always goes through skein's driver (a write): quiet unless --verbose."""
    quiet = run_tfyarn(yarn_cluster, "kill", "application_1_9999")
    assert "YARN knows no application" in quiet.stderr, quiet.stderr
    assert not re.search(r" (INFO|WARN) ", quiet.stderr), quiet.stderr
    verbose = run_tfyarn(yarn_cluster, "--verbose", "kill", "application_1_9999")
    assert "INFO skein.Driver: Driver started" in verbose.stderr, verbose.stderr


def test_reports_come_from_skein_when_the_rm_web_address_does_not_answer(
        yarn_cluster, skein_client, tmp_path):
    """status/list read the RM's REST API; where it does not answer they fall back to skein's
    driver and say the same."""
    import skein

    other = skein_client.submit(skein.ApplicationSpec(
        name="not-tfyarn-either", master=skein.Master(
            resources=skein.Resources(memory=256, vcores=1), script="sleep 1")))
    conf = Path(shutil.copytree(yarn_cluster.env["HADOOP_CONF_DIR"], tmp_path / "conf"))
    site = conf / "yarn-site.xml"
    site.write_text(re.sub(r"(<name>yarn.resourcemanager.webapp.address</name><value>)[^<]+",
                           r"\g<1>127.0.0.1:9", site.read_text()))
    fallback_env = dict(yarn_cluster.env, HADOOP_CONF_DIR=str(conf))

    def tfyarn_without_rest(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*TFYARN, "--verbose", *args], env=fallback_env,
                              capture_output=True, text=True, timeout=120)

    by_rest = run_tfyarn(yarn_cluster, "--verbose", "status", other)
    by_skein = tfyarn_without_rest("status", other)
    for out in (by_rest, by_skein):
        assert out.returncode != 0, out
        assert "(not-tfyarn-either) is not a tfyarn job" in out.stderr, out.stderr
    assert "skein.Driver" not in by_rest.stderr, by_rest.stderr
    assert "INFO skein.Driver: Driver started" in by_skein.stderr, by_skein.stderr

    unknown = tfyarn_without_rest("status", "application_1_9999")
    assert "YARN knows no application" in unknown.stderr, unknown.stderr
    answers = [json.loads(out.stdout) for out in (
        run_tfyarn(yarn_cluster, "list", "--all", "--json"), tfyarn_without_rest(
            "list", "--all", "--json"))]
    assert [a["id"] for a in answers[0]] == [a["id"] for a in answers[1]], answers


def test_a_taken_port_restarts_the_task_on_a_new_one(yarn_cluster, tmp_path: Path):
    """The job does not fail: the task re-registers on a new port, uncounted (threshold 0)."""
    release = ReleaseFile.fresh(yarn_cluster.layout)  # never created
    resources, app_config = light_job(tmp_path, sleep_s=3, release=release)
    app = json.loads(app_config.read_text())
    app["global"]["site.global.user.scripts.args"].append("--take_own_port")
    app["global"]["site.global.success.policy"] = "all-workers"  # wait for the new worker
    app_config.write_text(json.dumps(app))
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app_config)
    assert run.returncode == 0, run.output
    assert "worker 0 found its port taken: restarted on a new one" in run.output
    # Each attempt ran in a container of its own and wrote its record in that container's
    # work dir: the first (whose port was taken) and the restarted worker 0 (task_index 1).
    records = [read_json(path) for path in run.files.glob("light/worker_1.json")]
    assert sorted(record["attempt"] for record in records) == ["0", "1"], records


@pytest.mark.parametrize("kill_on_exit", [False, True], ids=["keeps-running", "kill-on-exit"])
def test_ctrl_c_on_submit_wait(yarn_cluster, tmp_path: Path, kill_on_exit: bool):
    import signal

    release = ReleaseFile.fresh(yarn_cluster.layout)
    resources, app_config = light_job(tmp_path, sleep_s=240, release=release)
    command = [*TFYARN, "submit", "--resources", str(resources),
               "--app-config", str(app_config), "--wait"]
    if kill_on_exit:
        command.append("--kill-on-exit")
    proc = subprocess.Popen(command, env=yarn_cluster.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    lines = []
    app_id = None
    try:
        for line in proc.stdout:  # follow until the job runs, then press Ctrl-C
            lines.append(line)
            if line.startswith("Submitted "):
                app_id = line.split()[1]
            if "RUNNING gen 0" in line:
                break
        assert app_id, "".join(lines)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130
        if kill_on_exit:
            assert f"killed {app_id} (--kill-on-exit)" in err
            wait_for("YARN to show it killed",
                     lambda: app_report(yarn_cluster, app_id)["state"] == "KILLED", 60)
        else:
            assert f"{app_id} keeps running" in err and f"tfyarn kill {app_id}" in err
            assert app_report(yarn_cluster, app_id)["state"] == "RUNNING"
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
    if not kill_on_exit:
        wait_for("the job to finish after all",
                 lambda: app_report(yarn_cluster, app_id)["finalStatus"] == "SUCCEEDED", 120)
