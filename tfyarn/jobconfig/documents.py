"""Reading one job file (JSON or YAML) and recording its problems, each with a fix."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from tfyarn.jobconfig.model import Problem

_TOP_LEVEL_KEYS = ("schema", "metadata", "global", "components")
# The "file" of a problem with a command-line option (`tfyarn submit --queue`, --data, ...).
COMMAND_LINE = "command line"
Found = tuple[Any, str] | None  # a value and where it was written; None: absent
_PLAIN_KEY_PART = re.compile(r"[A-Za-z0-9_-]+")

# Marks "no value to show" in a problem, or a file that could not be read, since None (JSON
# null, an empty YAML file) can itself be the value.
NO_VALUE: Any = object()


class Checker:
    """Records the problems of one file into a list shared by both files."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        self.file = file
        self.problems = problems

    def add(self, key: str | None, message: str, fix: str, value: Any = NO_VALUE) -> None:
        shown = None if value is NO_VALUE else _show(value)
        problem = Problem(self.file, key, shown, message, fix)
        # A bad "global" value is seen by every component; report it once.
        if problem not in self.problems:
            self.problems.append(problem)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def key_path(*parts: str) -> str:
    """A readable path into the document, quoting parts that contain dots."""
    return ".".join(p if _PLAIN_KEY_PART.fullmatch(p) else json.dumps(p) for p in parts)


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


LISTS_THE_KEYS = "`tfyarn config --all` lists every key"


def report_unknown(c: Checker, where: str, name: str, allowed: Sequence[str], what: str) -> None:
    match = difflib.get_close_matches(name, allowed, n=1)
    if match:
        fix = f'did you mean "{match[0]}"?'
    else:
        fix = "remove it; allowed: " + ", ".join(allowed) + "."
    if what == "key":
        fix += f" ({LISTS_THE_KEYS})"
    c.add(where, f"unknown {what}", fix)


def read_document(c: Checker, path: Path) -> dict[str, Any] | None:
    doc = read_file(c, path, as_yaml=path.suffix.lower() in (".yaml", ".yml"))
    if doc is NO_VALUE:
        return None
    if not isinstance(doc, dict):
        c.add(
            None,
            f"the document must be an object, not {kind_of(doc)}",
            'write it as {"schema": ..., "global": {...}, "components": {...}}.',
        )
        return None
    return {str(k): v for k, v in doc.items()}


DEFAULT_NAMES = {"resources.json": "--resources", "appConfig.json": "--app-config"}


def missing_file_fix(path: Path) -> str:
    """A job file's default name looked for here: no path was typed, so none to check."""
    option = DEFAULT_NAMES.get(str(path))
    if option is None:
        return "check the path given on the command line."
    return (f"run tfyarn in the directory that holds the job's files, or name this one with "
            f"{option} PATH (the repository's README has a first job to copy).")


def read_file(c: Checker, path: Path, *, as_yaml: bool) -> Any:
    """The file's JSON or YAML, each key in it written once; NO_VALUE when it cannot be read
    (YAML's empty document is None)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        c.add(None, f"no such file ({path.absolute()})", missing_file_fix(path))
        return NO_VALUE
    except UnicodeDecodeError:
        c.add(None, "not UTF-8 text", "save the file as UTF-8.")
        return NO_VALUE
    except OSError as e:
        c.add(None, f"cannot read the file: {e.strerror}", "check the path and its permissions.")
        return NO_VALUE
    if as_yaml:
        try:
            report_duplicate_keys(c, yaml.compose(text, Loader=yaml.SafeLoader))
            doc = yaml.safe_load(text)
        except yaml.MarkedYAMLError as e:
            where = ""
            if e.problem_mark is not None:  # marks are 0-based; editors count from 1
                where = f" at line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1}"
            c.add(None, f"not valid YAML: {e.problem}{where}", f"correct the syntax{where}.")
            return NO_VALUE
        except yaml.YAMLError as e:
            c.add(None, f"not valid YAML: {e}", "correct the syntax.")
            return NO_VALUE
    else:
        repeated: list[str] = []
        try:
            doc = json.loads(text, object_pairs_hook=lambda pairs: _object(pairs, repeated))
        except json.JSONDecodeError as e:
            where = f"line {e.lineno}, column {e.colno}"
            c.add(None, f"not valid JSON: {e.msg} at {where}", f"correct the syntax at {where}.")
            return NO_VALUE
        if repeated:
            _report_json_duplicates(c, text, repeated)
    return doc


def _object(pairs: list[tuple[str, Any]], repeated: list[str]) -> dict[str, Any]:
    """A JSON object; keys it holds twice go to ``repeated`` (JSON would keep the last)."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            repeated.append(key)
        result[key] = value
    return result


def _report_json_duplicates(c: Checker, text: str, repeated: list[str]) -> None:
    """Where each repeated key is: JSON is YAML, whose parser keeps every key's place."""
    try:
        report_duplicate_keys(c, yaml.compose(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:  # JSON that YAML does not read (tabs, say): name the keys only
        for key in dict.fromkeys(repeated):
            c.add(None, f'the key "{key}" is written twice in one object; only the last '
                  "would count", "keep one of them (merge what they hold).")


def _duplicates(node: yaml.Node | None,
                path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], yaml.Mark,
                                                              yaml.Mark]]:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, yaml.Mark] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            if key is None:
                continue
            if key in seen:
                yield (*path, key), seen[key], key_node.start_mark
            else:
                seen[key] = key_node.start_mark
            yield from _duplicates(value_node, (*path, key))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicates(item, (*path, str(index)))


def report_duplicate_keys(c: Checker, root: yaml.Node | None) -> None:
    """A key written twice in one object or mapping, naming both places."""
    for where, first, again in _duplicates(root):
        c.add(key_path(*where), f"written twice, at line {first.line + 1}, column "
              f"{first.column + 1} and at line {again.line + 1}, column {again.column + 1}; "
              "only the last would count", "keep one of them (merge what they hold).")


def mapping(c: Checker, value: Any, where: str) -> dict[str, Any] | None:
    """An object's contents; None (an empty YAML entry) counts as empty."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        c.add(where, f"must be an object, not {kind_of(value)}", "write it as {...}.", value=value)
        return None
    return {str(k): v for k, v in value.items()}


def top_level(
    c: Checker, doc: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Checks the top-level keys; returns the "global" and "components" sections."""
    for key in doc:
        if key not in _TOP_LEVEL_KEYS:
            report_unknown(c, key_path(key), key, _TOP_LEVEL_KEYS, "top-level key")
    return (
        mapping(c, doc.get("global"), "global"),
        mapping(c, doc.get("components"), "components"),
    )



def as_seconds(value: Any) -> float | None:
    """A number, or a numeric string, as seconds; None for anything else (True is none)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9.eE+-]+\s*", value):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def as_int(value: Any) -> int | None:
    # bool is an int subclass in Python, but "true" is no number of containers.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
        return int(value)
    return None

