"""The docs site's facts that code could contradict: every environment variable the code
names is in the reference, and the site builds with every link resolved."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VARIABLE = re.compile(r"\bTFYARN_[A-Z0-9_]*[A-Z0-9]\b")


def test_the_command_reference_is_current() -> None:
    from tfyarn.cli.reference import PAGE, render

    assert (ROOT / PAGE).read_text() == render(), (
        f"{PAGE} is stale: run `python -m tfyarn.cli.reference > {PAGE}`")


def test_every_environment_variable_is_documented() -> None:
    named = {v for folder in ("tfyarn", "appmaster") for path in (ROOT / folder).rglob("*.py")
             for v in VARIABLE.findall(path.read_text())}
    page = (ROOT / "docs/reference/environment.md").read_text()
    missing = sorted(v for v in named if v not in page and not v.startswith("TFYARN_SECRET"))
    assert not missing, f"add to docs/reference/environment.md: {missing}"


@pytest.mark.skipif(shutil.which("mkdocs") is None and
                    not (Path(sys.executable).parent / "mkdocs").exists(),
                    reason="mkdocs is not installed (the test extra has it)")
def test_the_site_builds_with_every_link_resolved(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                             str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
