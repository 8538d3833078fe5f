"""Each setting's key is written once, in its declaration (appmaster/common/settings.py): a
message, hint, help text or page line that names a key reads it from there (f"{QUEUE.key}"),
so renaming a key renames it everywhere (issue 52, item 2).

This walks every module of tfyarn/ and appmaster/ and fails on each string constant, and each
constant part of an f-string, that spells a declared key, naming its file and line. A key
counts where it stands whole: "site.global.python" inside "site.global.python.layers.dir" is
that other key, and "yarn.memory" in "worker.yarn.memory" counts (it is the key, qualified).

Left out, on purpose:
- appmaster/common/settings.py, the declarations: where the keys are written, the once.
- docstrings (a module's, class's or function's first statement): they speak to the code's
  readers, and a docstring cannot be an f-string. Except a click command's or group's: click
  shows it as the command's --help, so it is a message (write it as help=, an f-string).
Only keys spelled whole in one constant are found: f"site.global.{name}" is not.

ALLOWED names each exception still left, with why; an entry that no longer matches fails too,
so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from appmaster.common.settings import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tfyarn", "appmaster")
SKIPPED = {"appmaster/common/settings.py"}
# (file, key) -> why it is still spelled there
ALLOWED: dict[tuple[str, str], str] = {}
DECLARED = frozenset(s.key for s in SETTINGS)


def key_pattern(keys: frozenset[str]) -> re.Pattern[str]:
    """A declared key standing whole: not inside a longer key or word on either side."""
    alternatives = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-]|\.\w)")


PATTERN = key_pattern(DECLARED)


def _is_click_command(node: ast.AST) -> bool:
    """A function decorated as a click command or group (``@click.command(...)``,
    ``@env_group.command(...)``): click shows its docstring as --help."""
    for decorator in getattr(node, "decorator_list", ()):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("command", "group"):
            return True
    return False


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants nobody sees as a message."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                          | ast.AsyncFunctionDef) or _is_click_command(node):
            continue
        first = node.body[0] if node.body else None
        if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            found.add(id(first.value))
    return found


def spelled_keys(source: str, pattern: re.Pattern[str] = PATTERN) -> list[tuple[int, str]]:
    """(line, key) for each declared key a string constant of ``source`` spells."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # the f-string's line, and each part once
            parts = [v for v in node.values if isinstance(v, ast.Constant)]
            skipped.update(id(v) for v in parts)
            found += [(node.lineno, key) for v in parts for key in pattern.findall(v.value)]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in skipped):
            found += [(node.lineno, key) for key in pattern.findall(node.value)]
    return sorted(found)


def project_sources() -> dict[str, str]:
    return {path.relative_to(ROOT).as_posix(): path.read_text()
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def spelled_in_project() -> list[tuple[str, int, str]]:
    return [(path, line, key) for path, source in project_sources().items()
            if path not in SKIPPED for line, key in spelled_keys(source)]


def test_no_message_spells_a_declared_key() -> None:
    found = [(path, line, key) for path, line, key in spelled_in_project()
             if (path, key) not in ALLOWED]
    assert not found, ("name these keys through their declarations (f\"{QUEUE.key}\", "
                       "appmaster/common/settings.py):\n"
                       + "\n".join(f"  {path}:{line}: {key}" for path, line, key in found))


def test_every_exception_is_still_needed() -> None:
    used = {(path, key) for path, _, key in spelled_in_project()}
    assert set(ALLOWED) <= used, f"no longer spelled, drop from ALLOWED: {set(ALLOWED) - used}"


def test_the_walk_finds_the_declarations_and_the_modules() -> None:
    assert len(DECLARED) > 40 and "site.global.queue" in DECLARED and "yarn.memory" in DECLARED
    assert len(project_sources()) > 100
    assert all(path in project_sources() for path in SKIPPED)


def test_a_key_spelled_in_a_message_is_found() -> None:
    source = '''"""A module's docstring names site.global.queue: left alone."""
import click
from appmaster.common.settings import QUEUE


def fix(role):
    """So does a function's: yarn.memory."""
    hint = f"raise {role}'s yarn.memory, or set {QUEUE.key}"
    return ("move to another queue (site.global.queue)", hint,
            "give site.global.python.layers.dir", f"{QUEUE.key} names it")


@click.command("go")
def go():
    """Shown as --help: names yarn.vcores."""
'''
    assert spelled_keys(source) == [(8, "yarn.memory"), (9, "site.global.queue"),
                                    (10, "site.global.python.layers.dir"), (15, "yarn.vcores")]


def test_a_key_counts_only_standing_whole() -> None:
    assert PATTERN.findall("worker.yarn.memory=4096; yarn.memory.") == ["yarn.memory",
                                                                         "yarn.memory"]
    assert PATTERN.findall("yarn.memory_mb, myyarn.memory, yarn.cluster.max-application-"
                           "priority, site.global.pythonic") == []
