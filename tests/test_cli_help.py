"""The CLI's help is complete and cheap: no TensorFlow (or skein) import on its path."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from tfyarn.cli.main import COMMANDS, main

HELP_CASES = [[], ["submit"], ["wait"], ["status"], ["list"], ["logs"], ["kill"], ["report"],
            ["flex"], ["config"], ["tensorboard"], ["env"], ["cluster"], ["cluster", "up"],
            ["cluster", "down"], ["cluster", "status"], ["cluster", "env"]]


@pytest.mark.parametrize("command", HELP_CASES, ids=lambda c: " ".join(c) or "tfyarn")
def test_every_command_has_help(command: list[str]) -> None:
    # In this process: a Python started per command cost 0.3 s each (one test below does).
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: ")
    group = main
    for name in command:
        group = group.get_command(click.Context(group), name)
    doc = (group.help or "").strip()
    # The command says what it does (help text is re-wrapped to the terminal's width).
    assert doc and " ".join(doc.splitlines()[0].split()) in " ".join(result.stdout.split())
    for param in group.params:  # and every option explains itself
        if isinstance(param, click.Option):
            assert param.help, f"{' '.join(command)} {param.opts[0]} has no help text"


def test_each_command_in_the_table_is_named_as_its_key() -> None:
    """The lazy group's table (name -> module, attribute) finds the command of that name:
    `tfyarn --help` lists the keys, and a command answers to its own name."""
    group = main
    for name in COMMANDS:
        command = group.get_command(click.Context(group), name)
        assert command is not None and command.name == name, (name, command)
    assert {c[0] for c in HELP_CASES if c} == set(COMMANDS), "a command without a help test"


def test_the_module_runs_as_the_command() -> None:
    result = subprocess.run([sys.executable, "-m", "tfyarn.cli.main", "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: ") and "submit" in result.stdout


def test_help_imports_neither_tensorflow_nor_skein() -> None:
    code = ("import sys; from click.testing import CliRunner; from tfyarn.cli.main import main; "
            "r = CliRunner().invoke(main, ['submit', '--help']); assert r.exit_code == 0; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'skein', 'grpc', 'keras')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
