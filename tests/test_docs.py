"""The docs site's facts that code could contradict: every environment variable the code
names is in the reference, and the site builds with every link resolved and every code
block (the architecture's whole picture: one) rendered as a code block."""

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
    site = tmp_path / "site"
    found = [problem for page in sorted(site.rglob("*.html"))
             for problem in code_block_problems(str(page.relative_to(site)), page.read_text())]
    found += picture_problems((site / "architecture.html").read_text())
    found += [f"{page.relative_to(site)}: a link to {href}, a folder opened from disk"
              for page in sorted(site.rglob("*.html"))
              for href in re.findall(r'href="([^"#:]*/)(?:#[^"]*)?"', page.read_text())]
    assert not found, "\n".join(found)


EMPTY_CODE = re.compile(r"<pre[^>]*>\s*<code[^>]*>\s*</code>\s*</pre>")
PICTURE = "The whole picture</h2>"  # docs/architecture.md's diagram of the whole


def code_block_problems(page: str, html: str) -> list[str]:
    """A fenced block that renders empty: a fence closed at once (what follows is paragraphs)."""
    return [f"{page}: an empty code block (a stray ``` fence?)" for _ in EMPTY_CODE.findall(html)]


def picture_problems(html: str) -> list[str]:
    """The whole picture is one code block, none of it a paragraph."""
    section = re.split(r"<h2|<footer", html[html.index(PICTURE):], maxsplit=1)[0]
    blocks, paragraphs = section.count("<pre"), section.count("<p>")
    if blocks == 1 and paragraphs == 0:
        return []
    return [f"architecture.md's whole picture renders as {blocks} code blocks and "
            f"{paragraphs} paragraphs: one code block, fenced once"]


def test_a_split_diagram_is_found() -> None:
    """The checks can fail: the picture as it once was (an empty fence pair before and after
    it, the diagram between as paragraphs) and as it is rendered by Python-Markdown."""
    markdown = pytest.importorskip("markdown")
    broken = "## The whole picture\n\n```\n```\ntfyarn submit\n  ──► plan\n```\n```\n"
    html = markdown.markdown(broken, extensions=["fenced_code"])
    assert code_block_problems("architecture", html) == [
        "architecture: an empty code block (a stray ``` fence?)"] * 2
    assert "2 code blocks and 1 paragraphs" in picture_problems(html)[0]
    fixed = markdown.markdown(broken.replace("```\n```\n", "```\n"), extensions=["fenced_code"])
    assert code_block_problems("architecture", fixed) == picture_problems(fixed) == []


INSIDE = "Inside tfyarn"  # mkdocs.yml's section for those who work on tfyarn itself
# What users cannot act on: the tracker's issue numbers, the test suite's files.
INTERNAL = re.compile(r"\bissues? #?\d+|\btests/|\btest_\w+\.py\b", re.IGNORECASE)


def user_pages(nav: list, inside: bool = False) -> list[tuple[str, str, bool]]:
    """(nav title, page, whether under INSIDE) for every page of the site's nav."""
    pages = []
    for entry in nav:
        for title, target in (entry.items() if isinstance(entry, dict) else [("", entry)]):
            if isinstance(target, list):
                pages += user_pages(target, inside or title == INSIDE)
            else:
                pages.append((title, target, inside))
    return pages


def test_user_pages_speak_of_users_things() -> None:
    """No issue numbers or test files on a page outside the Inside section, nor in its nav
    title; the site starts with the first job on one's own cluster."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    pages = user_pages(nav)
    assert any(inside for *_, inside in pages), f"no {INSIDE!r} section in mkdocs.yml's nav"
    found = []
    for title, page, inside in pages:
        if inside:
            continue
        found += [f"nav title {title!r}: {m}" for m in INTERNAL.findall(title)]
        for number, line in enumerate((ROOT / "docs" / page).read_text().splitlines(), 1):
            found += [f"docs/{page}:{number}: {m}" for m in INTERNAL.findall(line)]
    assert not found, "user pages mention internals:\n" + "\n".join(found)
    assert pages[1][1] == "start.md", "the first page after Home: a first job on your cluster"
