"""The Python API without a cluster: `tfyarn.submit` is the function whatever was imported
before, `import tfyarn` stays light, and planning works as `tfyarn submit --dry-run` does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tfyarn.cli.main import main
from tfyarn.errors import NOTHING_SUBMITTED
from tfyarn.jobconfig import JobConfigError
from tfyarn.submission.api import SubmitOptions, plan_job

REPO = Path(__file__).resolve().parent.parent


def run_python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("first", ["import tfyarn", "import tfyarn.cli.main",
                                   "from tfyarn.hadoop.driver import SubmitError",
                                   "import tfyarn.submission.api"])
def test_tfyarn_submit_is_the_api_function(first: str) -> None:
    out = run_python(f"{first}\nimport tfyarn, tfyarn.submission.api\n"
                     "print(tfyarn.submit is tfyarn.submission.api.submit)")
    assert out.strip() == "True"


def test_import_tfyarn_loads_no_pipeline() -> None:
    heavy = ("tfyarn.submission.api", "tfyarn.jobconfig", "tfyarn.submission.plan", "appmaster",
             "yaml", "requests", "skein")
    out = run_python(f"import sys, tfyarn\n"
                     f"print([m for m in sys.modules if m.startswith({heavy})])")
    assert out.strip() == "[]"


@pytest.fixture
def no_cluster(monkeypatch) -> None:
    """No Hadoop configuration: with --skip-preflight, the work dir is local."""
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_plan_job_is_the_dry_run(no_cluster) -> None:
    resources, app_config = REPO / "resources.json", REPO / "appConfig.json"
    planned = plan_job(resources, app_config, SubmitOptions(name="planned", am_memory=640,
                                                            skip_preflight=True))
    planned.check_runnable()  # skipped: nothing to refuse
    assert not planned.preflight.checked
    cli = CliRunner().invoke(main, ["submit", "--resources", str(resources), "--app-config",
                                    str(app_config), "--name", "planned", "--am-memory", "640",
                                    "--dry-run", "--skip-preflight", "--json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.output) == json.loads(json.dumps(planned.document(), default=str))


def test_bad_files_say_nothing_was_submitted(no_cluster, tmp_path: Path) -> None:
    (tmp_path / "resources.json").write_text('{"components": {"worker": {"yarn.memroy": 1}}}')
    with pytest.raises(JobConfigError) as raised:
        plan_job(tmp_path / "resources.json", REPO / "appConfig.json")
    assert raised.value.context == NOTHING_SUBMITTED
    assert 'components.worker."yarn.memroy": unknown key' in raised.value.describe()
