"""The CLI's habits (issue 35), without a cluster: -h, global options after the command,
`submit ... -- ARGS`, `wait`, exit codes, list's filters, --json everywhere with ISO times,
the evaluator's logs, shell completion. tests/test_cli_habits_yarn.py runs them on YARN."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner

from appmaster.common.vocabulary import TaskState
from appmaster.page.view import JobView, TaskRow
from tfyarn.cli import exitcodes, jobs, monitor, options
from tfyarn.cli.main import main
from tfyarn.hadoop import driver as driver_module
from tfyarn.submission.api import SubmitOptions, plan_job

REPO = Path(__file__).resolve().parent.parent
APP = "application_1700000000000_0007"
G = "site.global."


def report(app_id: str = APP, state: str = "RUNNING", final_status: str = "UNDEFINED",
           tags=frozenset({"tfyarn"}), **fields) -> SimpleNamespace:
    values = dict(id=app_id, name="job", user="alice", queue="default", tags=tags, state=state,
                  final_status=final_status, tracking_url="http://rm/proxy/app/",
                  diagnostics="", start_time=datetime(2024, 5, 1, 12, 0), finish_time=None)
    values.update(fields)
    return SimpleNamespace(**values)


class FakeYarn:
    """Application reports as skein's client or the RM's REST reader give them: one
    application going through ``states`` (one per question), and ``apps`` for listing."""

    def __init__(self, states=(("RUNNING", "UNDEFINED"),), apps=(), tags=frozenset({"tfyarn"}),
                 known: bool = True) -> None:
        self.states, self.apps, self.tags, self.known = list(states), list(apps), tags, known
        self.asked = 0
        self.listed_states: list[str] | None = None
        self.killed: list[str] = []

    def __enter__(self) -> FakeYarn:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def application_report(self, app_id: str) -> SimpleNamespace:
        if not self.known:
            raise RuntimeError(f"404: application with id '{app_id}' not found")
        state, final = self.states[min(self.asked, len(self.states) - 1)]
        self.asked += 1
        return report(app_id, state, final, self.tags,
                      diagnostics="the chief failed" if final == "FAILED" else "")

    def get_applications(self, states: list[str]) -> list[SimpleNamespace]:
        self.listed_states = states
        return [app for app in self.apps if app.state in states]

    def kill_application(self, app_id: str) -> None:
        self.killed.append(app_id)


@pytest.fixture
def yarn(monkeypatch: pytest.MonkeyPatch):
    """Every command asks ``use(FakeYarn(...))`` for reports; following polls at once."""
    def use(fake: FakeYarn) -> FakeYarn:
        monkeypatch.setattr(monitor, "report_source", lambda driver: fake)
        monkeypatch.setattr(jobs, "report_source", lambda driver: fake)
        monkeypatch.setattr(monitor, "skein_client", lambda driver: fake)
        return fake

    monkeypatch.setattr(driver_module, "time", SimpleNamespace(sleep=lambda s: None))
    monkeypatch.setattr(jobs.jobview, "live_view", lambda url: None)
    monkeypatch.setattr(jobs.jobview, "launch_failure", lambda *a, **k: None)
    monkeypatch.setattr(monitor, "_view", lambda r: (None, "no task table here"))
    return use


# ---------------------------------------------------------------- -h and global options

@pytest.mark.parametrize("command", [[], ["submit"], ["wait"], ["status"], ["logs"],
                                     ["cluster"], ["cluster", "up"], ["tensorboard"]],
                         ids=lambda c: " ".join(c) or "tfyarn")
def test_h_is_help_everywhere(command: list[str]) -> None:
    short = CliRunner().invoke(main, [*command, "-h"])
    assert short.exit_code == 0, short.output
    assert short.stdout == CliRunner().invoke(main, [*command, "--help"]).stdout
    assert short.stdout.startswith("Usage: ") and "-h, --help" in short.stdout


def test_global_options_also_follow_the_command_and_win(yarn, monkeypatch) -> None:
    built: list[tuple] = []
    monkeypatch.setattr(options, "driver_settings",
                        lambda *args: built.append(args) or driver_module.DriverSettings())
    yarn(FakeYarn())
    runner = CliRunner()
    for argv, expected in [
        (["--principal", "a@R", "--keytab", "a.kt", "status", APP], ("a@R", "a.kt", False)),
        (["status", "--principal", "b@R", "--keytab", "b.kt", "-v", APP], ("b@R", "b.kt", True)),
        (["--principal", "a@R", "--keytab", "a.kt", "status", "--principal", "b@R", APP],
         ("b@R", "a.kt", False)),
        (["-v", "status", APP], (None, None, True)),
    ]:
        built.clear()
        result = runner.invoke(main, argv)
        assert result.exit_code == 0, result.output
        assert built == [expected], argv  # built once per invocation, merged


def test_the_environment_does_not_beat_an_option_before_the_command(yarn, monkeypatch) -> None:
    built: list[tuple] = []
    monkeypatch.setattr(options, "driver_settings",
                        lambda *args: built.append(args) or driver_module.DriverSettings())
    yarn(FakeYarn())
    result = CliRunner().invoke(main, ["--principal", "a@R", "--keytab", "a.kt", "status", APP],
                                env={"TFYARN_PRINCIPAL": "env@R", "TFYARN_KEYTAB": "env.kt"})
    assert result.exit_code == 0, result.output
    assert built == [("a@R", "a.kt", False)]


def test_a_half_login_after_the_command_is_refused(yarn) -> None:
    yarn(FakeYarn())
    result = CliRunner().invoke(main, ["status", "--principal", "a@R", APP])
    assert result.exit_code == exitcodes.USAGE  # the command line itself is wrong
    assert "--principal and --keytab go together" in result.output


# ---------------------------------------------------------------- submit ... -- ARGS

@pytest.fixture
def job_files(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_HOME"):  # no cluster to ask
        monkeypatch.delenv(name, raising=False)
    app = json.loads((REPO / "appConfig.json").read_text())
    app["global"][G + "user.scripts.dir"] = str(REPO / "examples")
    app["global"][G + "user.scripts.args"] = ["--epochs", "5"]
    (tmp_path / "appConfig.json").write_text(json.dumps(app))
    return REPO / "resources.json", tmp_path / "appConfig.json"


def dry_run(job_files: tuple[Path, Path], *extra: str) -> click.testing.Result:
    resources, app_config = job_files
    return CliRunner().invoke(main, ["submit", "--resources", str(resources), "--app-config",
                                     str(app_config), "--dry-run", "--skip-preflight", "--json",
                                     *extra])


def test_arguments_after_dashes_follow_the_scripts_args_in_every_task(job_files) -> None:
    result = dry_run(job_files, "--", "--lr", "0.1", "--name", "x y", "-h")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    commands = [command for role in plan["roles"] for command in role["commands"]]
    assert commands and all(
        command.endswith("--epochs 5 --lr 0.1 --name 'x y' -h") for command in commands)
    plain = json.loads(dry_run(job_files).stdout)
    assert all(command.endswith("--epochs 5")
               for role in plain["roles"] for command in role["commands"])
    # the Python API's same option
    planned = plan_job(*job_files, SubmitOptions(script_args=("--lr", "0.1"), skip_preflight=True))
    assert planned.plan.script_args == ("--epochs", "5", "--lr", "0.1")


def test_dashes_with_nothing_after_them_are_a_usage_error(job_files) -> None:
    result = dry_run(job_files, "--")
    assert result.exit_code == exitcodes.USAGE
    assert "nothing after --" in result.output and "-- --epochs 5" in result.output
    assert "[-- SCRIPT_ARGS...]" in CliRunner().invoke(main, ["submit", "-h"]).stdout


def test_arguments_without_dashes_are_still_refused(job_files) -> None:
    result = dry_run(job_files, "--epochs")
    assert result.exit_code == exitcodes.USAGE and "No such option" in result.output


# ---------------------------------------------------------------- exit codes and wait

@pytest.mark.parametrize(("state", "final", "code"), [
    ("FINISHED", "SUCCEEDED", 0), ("FINISHED", "FAILED", 3), ("FAILED", "FAILED", 3),
    ("FINISHED", "UNDEFINED", 3), ("KILLED", "KILLED", 4), ("FINISHED", "KILLED", 4),
    ("RUNNING", "UNDEFINED", 5), ("ACCEPTED", "UNDEFINED", 5), ("NEW", "UNDEFINED", 5),
])
def test_a_jobs_end_is_its_exit_code(state: str, final: str, code: int) -> None:
    assert exitcodes.of_job(state, final) == code


def test_the_codes_are_distinct_and_documented_once() -> None:
    codes = [code for code, _ in exitcodes.TABLE]
    assert len(codes) == len(set(codes))
    readme = (REPO / "docs/reference/cli.md").read_text()
    for code, _ in exitcodes.TABLE:
        assert f"| {code} |" in readme, f"exit code {code} is not in docs/reference/cli.md's table"


@pytest.mark.parametrize(("final", "code"), [("SUCCEEDED", 0), ("FAILED", 3)])
def test_wait_follows_a_job_to_its_exit_code(yarn, final: str, code: int) -> None:
    yarn(FakeYarn([("ACCEPTED", "UNDEFINED"), ("RUNNING", "UNDEFINED"),
                   ("FINISHED", final)]))
    result = CliRunner().invoke(main, ["wait", APP])
    assert result.exit_code == code, result.output
    assert f"Following {APP} (job) in queue default." in result.stdout
    assert f"{APP} RUNNING" in result.stdout  # the progress, as submit --wait shows it
    assert f"{APP} {final}: " in result.stdout.splitlines()[-1]


def test_wait_on_a_killed_job_and_as_json(yarn) -> None:
    yarn(FakeYarn([("KILLED", "KILLED")]))
    result = CliRunner().invoke(main, ["wait", "--json", APP])
    assert result.exit_code == exitcodes.JOB_KILLED, result.output
    assert json.loads(result.stdout) == {"application_id": APP, "state": "KILLED",
                                         "final_status": "KILLED", "diagnostics": "",
                                         "exit_code": 4}


def test_wait_on_what_is_no_tfyarn_job_says_what_to_do(yarn) -> None:
    yarn(FakeYarn(tags=frozenset({"spark"})))
    other = CliRunner().invoke(main, ["wait", APP])
    assert other.exit_code == exitcodes.ERROR
    assert "is not a tfyarn job" in other.output and "yarn application -status" in other.output
    yarn(FakeYarn(known=False))
    missing = CliRunner().invoke(main, ["wait", APP])
    assert missing.exit_code == exitcodes.ERROR
    assert f"YARN knows no application {APP}" in missing.output
    assert "tfyarn list --all" in missing.output
    bad = CliRunner().invoke(main, ["wait", "job-7"])
    assert bad.exit_code == exitcodes.ERROR and "is not a YARN application id" in bad.output


def test_ctrl_c_in_wait_leaves_the_job_running(yarn, monkeypatch) -> None:
    yarn(FakeYarn())

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(jobs, "follow", interrupted)
    result = CliRunner().invoke(main, ["wait", APP])
    assert result.exit_code == exitcodes.INTERRUPTED
    assert f"{APP} keeps running" in result.output and f"tfyarn wait {APP}" in result.output


@pytest.mark.parametrize(("state", "final", "code"), [
    ("RUNNING", "UNDEFINED", 5), ("FINISHED", "SUCCEEDED", 0), ("FINISHED", "FAILED", 3),
    ("KILLED", "KILLED", 4)])
def test_status_exit_code(yarn, state: str, final: str, code: int) -> None:
    yarn(FakeYarn([(state, final)]))
    assert CliRunner().invoke(main, ["status", APP, "--exit-code"]).exit_code == code
    assert CliRunner().invoke(main, ["status", APP]).exit_code == 0  # only when asked


# ---------------------------------------------------------------- times in JSON

def test_times_are_iso_8601_with_their_offset() -> None:
    naive = datetime(2024, 5, 1, 12, 0, 0)  # this machine's local time, as reports give it
    shown = options.iso_time(naive)
    assert datetime.fromisoformat(shown).utcoffset() is not None
    assert datetime.fromisoformat(shown).timestamp() == naive.timestamp()
    aware = datetime(2024, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert datetime.fromisoformat(options.iso_time(aware)) == aware
    assert datetime.fromisoformat(options.iso_time(1714564800.5)).timestamp() == 1714564800.5
    assert options.iso_time(None) is None and options.iso_time(0) is None


def test_status_json_has_iso_times_and_null_for_none(yarn, monkeypatch) -> None:
    yarn(FakeYarn())
    view = JobView(app_id=APP, name="job", state="RUNNING", updated=1_714_564_800_000,
                   tasks=[TaskRow("worker", 0, TaskState.RUNNING,
                                  mirror={"last_sync": 1_714_564_790.0, "interval_s": 10})],
                   progress={"step": 10, "updated": 1_714_564_795.0,
                             "evaluation": {"step": 5, "updated": None}})
    monkeypatch.setattr(monitor, "_view", lambda r: (view, "live"))
    result = CliRunner().invoke(main, ["status", APP, "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    application, job = document["application"], document["job"]
    assert application["finish_time"] is None  # not "None"
    assert datetime.fromisoformat(application["start_time"]).utcoffset() is not None
    for when, seconds in [(job["updated"], 1_714_564_800), (job["progress"]["updated"],
                                                            1_714_564_795),
                          (job["tasks"][0]["mirror"]["last_sync"], 1_714_564_790)]:
        assert datetime.fromisoformat(when).timestamp() == seconds
    assert job["progress"]["evaluation"]["updated"] is None


# ---------------------------------------------------------------- list's filters

def test_list_filters_by_state_queue_and_name(yarn) -> None:
    apps = [report("application_1_0001", "RUNNING", name="mnist-a"),
            report("application_1_0002", "FAILED", "FAILED", name="mnist-b", queue="urgent"),
            report("application_1_0003", "KILLED", "KILLED", name="resnet"),
            report("application_1_0004", "FAILED", "FAILED", name="mnist-c", user="bob"),
            report("application_1_0005", "FAILED", "FAILED", name="sparky",
                   tags=frozenset({"spark"}))]
    fake = yarn(FakeYarn(apps=apps))

    def ids(*argv: str) -> list[str]:
        result = CliRunner().invoke(main, ["list", "--user", "alice", "--json", *argv])
        assert result.exit_code == 0, result.output
        return [app["id"][-1] for app in json.loads(result.stdout)]

    assert ids() == ["1"] and fake.listed_states == monitor.ACTIVE_STATES
    assert ids("--state", "failed", "--state", "KILLED") == ["2", "3"]
    assert fake.listed_states == ["FAILED", "KILLED"]
    assert ids("--all") == ["1", "2", "3"] and ids("--state", "ALL") == ["1", "2", "3"]
    assert ids("--all", "--queue", "urgent") == ["2"]
    assert ids("--all", "--name", "mnist-*") == ["1", "2"]
    assert ids("--all", "--name", "resnet") == ["3"]
    everyone = CliRunner().invoke(main, ["list", "--user", "ALL", "--all", "--json"])
    assert [a["id"][-1] for a in json.loads(everyone.stdout)] == ["1", "2", "3", "4"]
    none = CliRunner().invoke(main, ["list", "--user", "alice", "--state", "NEW"])
    assert none.exit_code == 0 and none.stdout == ""  # `tfyarn list | awk` gets no words
    assert none.stderr == "No NEW tfyarn jobs of alice.\n"


def test_list_shows_the_kerberos_users_jobs_by_default(monkeypatch) -> None:
    monkeypatch.setattr(monitor.hadoopconf, "client_configuration",
                        lambda: {"hadoop.security.authentication": "kerberos"})
    monkeypatch.setattr(monitor.kerberos, "default_principal", lambda: "carol/host.x@EXAMPLE")
    assert monitor.default_user(None) == "carol"
    given = driver_module.DriverSettings(principal="dave@EXAMPLE", keytab="k")
    assert monitor.default_user(given) == "dave"
    monkeypatch.setattr(monitor.kerberos, "default_principal", lambda: None)
    monkeypatch.setenv("HADOOP_USER_NAME", "erin")
    assert monitor.default_user(None) == "erin"  # no ticket: as Hadoop's client
    monkeypatch.setattr(monitor.hadoopconf, "client_configuration", lambda: {})
    monkeypatch.setattr(monitor.kerberos, "default_principal", lambda: "carol@EXAMPLE")
    assert monitor.default_user(None) == "erin"  # a simple cluster knows no principal


# ---------------------------------------------------------------- logs, kill, report

YARN_LOGS = """\
Container: container_1_0007_01_000002 on nm1_8042
LogAggregationType: AGGREGATED
==================================================
LogType:worker-0.stdout
LogLastModifiedTime:Wed May 01 12:00:00 +0000 2024
LogLength:24
LogContents:
light task worker 0
done

End of LogType:worker-0.stdout
******************************************************************************

Container: container_1_0007_01_000005 on nm2_8042
LogAggregationType: AGGREGATED
==================================================
LogType:evaluator-0.stderr
LogLastModifiedTime:Wed May 01 12:00:00 +0000 2024
LogLength:9
LogContents:
evaluated

End of LogType:evaluator-0.stderr
"""


def test_logs_take_the_evaluator_and_show_it_by_default(yarn, monkeypatch) -> None:
    yarn(FakeYarn([("FINISHED", "SUCCEEDED")]))
    asked: list[tuple] = []
    monkeypatch.setattr(monitor.jobview, "yarn_logs",
                        lambda app, *opts: asked.append(opts) or YARN_LOGS)
    result = CliRunner().invoke(main, ["logs", APP, "--role", "evaluator"])
    assert result.exit_code == 0, result.output
    assert asked[-1] == ("-log_files_pattern", r"evaluator-\d+\.(stdout|stderr)")
    result = CliRunner().invoke(main, ["logs", APP, "--json"])
    assert result.exit_code == 0, result.output
    assert "evaluator" in asked[-1][1] and "tensorboard" in asked[-1][1]
    assert json.loads(result.stdout) == [
        {"role": "worker", "index": 0, "container": "container_1_0007_01_000002",
         "node": "nm1_8042", "stream": "stdout", "text": "light task worker 0\ndone"},
        {"role": "evaluator", "index": 0, "container": "container_1_0007_01_000005",
         "node": "nm2_8042", "stream": "stderr", "text": "evaluated"}]


def test_live_logs_json_and_the_evaluators(yarn, monkeypatch) -> None:
    yarn(FakeYarn())
    view = JobView(app_id=APP, name="job", state="RUNNING", tasks=[
        TaskRow("worker", 0, TaskState.RUNNING, yarn_container_id="c2", node="nm1:8042"),
        TaskRow("evaluator", 0, TaskState.RUNNING, yarn_container_id="c5", node="nm2:8042")])
    monkeypatch.setattr(monitor.jobview, "live_view", lambda url: view)
    monkeypatch.setattr(monitor.jobview, "node_log_tail",
                        lambda node, container, name: monitor.jobview.LogChunk(3, f"{name}\n"))
    result = CliRunner().invoke(main, ["logs", APP, "--role", "evaluator", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"role": "evaluator", "index": 0, "container": "c5", "node": "nm2:8042",
         "stream": stream, "text": f"evaluator-0.{stream}\n"} for stream in monitor.STREAMS]
    assert CliRunner().invoke(main, ["logs", APP, "--json", "-f"]).exit_code == exitcodes.USAGE


def test_kill_and_report_say_it_as_json(yarn, monkeypatch, tmp_path: Path) -> None:
    fake = yarn(FakeYarn())
    killed = CliRunner().invoke(main, ["kill", APP, "--json"])
    assert killed.exit_code == 0, killed.output
    assert json.loads(killed.stdout)["killed"] is True and fake.killed == [APP]
    yarn(FakeYarn([("FINISHED", "SUCCEEDED")]))
    ended = json.loads(CliRunner().invoke(main, ["kill", APP, "--json"]).stdout)
    assert ended == {"application_id": APP, "killed": False, "state": "FINISHED",
                     "final_status": "SUCCEEDED"}
    monkeypatch.setattr(monitor.jobreport, "fetch", lambda r: (b"<html></html>", "final"))
    out = tmp_path / "r.html"
    saved = CliRunner().invoke(main, ["report", APP, "-o", str(out), "--json"])
    assert saved.exit_code == 0, saved.output
    assert json.loads(saved.stdout) == {"application_id": APP, "path": str(out.resolve()),
                                        "source": "final"}
    assert out.read_bytes() == b"<html></html>"


def test_cluster_status_json_when_down(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["cluster", "status", "--state-dir", str(tmp_path),
                                       "--json"])
    assert result.exit_code == exitcodes.CLUSTER_DOWN
    assert json.loads(result.stdout) == {"running": False, "state_dir": str(tmp_path)}


# ---------------------------------------------------------------- shell completion

def test_shell_completion_is_one_line_away() -> None:
    script = CliRunner().invoke(main, [], prog_name="tfyarn",
                                env={"_TFYARN_COMPLETE": "bash_source"})
    assert script.exit_code == 0 and "_tfyarn_completion" in script.stdout
    words = CliRunner().invoke(main, [], prog_name="tfyarn", env={
        "_TFYARN_COMPLETE": "bash_complete", "COMP_WORDS": "tfyarn wa", "COMP_CWORD": "1"})
    assert words.stdout.split() == ["plain,wait"]
    roles = CliRunner().invoke(main, [], prog_name="tfyarn", env={
        "_TFYARN_COMPLETE": "bash_complete", "COMP_WORDS": f"tfyarn logs {APP} --role ev",
        "COMP_CWORD": "4"})
    assert roles.stdout.split() == ["plain,evaluator"]
    readme = (REPO / "docs/guide/commands.md").read_text()
    assert "_TFYARN_COMPLETE=bash_source tfyarn" in readme
