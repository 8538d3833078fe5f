"""One error family: every error a user can act on is a TfyarnError, shown once by the CLI."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tfyarn.cli.main import main
from tfyarn.errors import TfyarnError, in_context
from tfyarn.hadoop.driver import SubmitError
from tfyarn.hadoop.rmrest import RestError
from tfyarn.jobconfig import JobConfigError, Problem
from tfyarn.localyarn.provision import ClusterError
from tfyarn.security.kerberos import KerberosError
from tfyarn.security.spnego import SpnegoError
from tfyarn.submission.environments import JobEnvironmentError
from tfyarn.submission.preflight import PreflightRefused
from tfyarn.submission.workdir import WorkDirError


@pytest.mark.parametrize("error", [SubmitError, JobEnvironmentError, RestError, WorkDirError,
                                   ClusterError, JobConfigError, PreflightRefused,
                                   KerberosError, SpnegoError])
def test_every_client_error_is_a_tfyarn_error(error: type) -> None:
    assert issubclass(error, TfyarnError)


def test_message_hint_and_context() -> None:
    error = TfyarnError("no queue q", hint="use one of default, gpu.")
    assert str(error) == "no queue q. Fix: use one of default, gpu."
    assert error.describe() == str(error)
    with pytest.raises(TfyarnError) as raised, in_context("outer"), in_context("inner"):
        raise error
    assert raised.value.describe() == "inner:\nno queue q. Fix: use one of default, gpu."


def test_job_config_error_keeps_its_problems() -> None:
    problem = Problem("resources.json", "components.ps", None, "unknown key", "remove it")
    error = JobConfigError([problem])
    assert error.problems == [problem]
    assert str(error) == "resources.json: components.ps: unknown key. Fix: remove it"


def test_the_cli_turns_a_tfyarn_error_into_one_error_line() -> None:
    result = CliRunner().invoke(main, ["--principal", "someone", "--keytab", "/no/such.keytab",
                                       "list"])
    assert result.exit_code == 1, result.output
    assert result.output == "Error: --keytab /no/such.keytab: no such file.\n", result.output
    assert "Traceback" not in result.output


def test_a_cluster_command_error_too(tmp_path) -> None:
    result = CliRunner().invoke(main, ["cluster", "regain-host", "nm9",
                                       "--state-dir", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: No NodeManager 'nm9'"), result.output
    assert "Traceback" not in result.output

