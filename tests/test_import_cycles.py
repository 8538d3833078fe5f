"""The client's modules import each other without cycles, lazy and type-only imports counted:
a cycle means two modules that can only be understood (and changed) together."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "tfyarn"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The tfyarn modules a file imports anywhere in it (functions, TYPE_CHECKING included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # `from tfyarn import environments` names a module
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in modules else node.module)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}
    return {name: imports(path, set(files)) - {name} for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that is on one (depth-first search)."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            found.append([*path[path.index(node):], node])
            return
        if node in done:
            return
        for neighbour in sorted(graph.get(node, ())):
            visit(neighbour, [*path, node])
        done.add(node)

    for start in sorted(graph):
        visit(start, [])
    return found


def test_the_graph_sees_imports() -> None:
    graph = import_graph()
    assert "tfyarn.submission.environments" in graph["tfyarn.submission.jobenv"]
    assert "tfyarn.submission.appspec" in graph["tfyarn.hadoop.driver"]  # lazy, in a function


def test_no_import_cycles_in_the_client() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_a_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


JOB_MODEL = [*sorted((ROOT / "appmaster" / "model").glob("*.py")),
             ROOT / "appmaster" / "common" / "vocabulary.py",
             ROOT / "appmaster" / "common" / "settings.py"]
NO_IO = {"os", "time", "socket", "threading", "subprocess", "requests", "urllib", "http",
         "shutil", "pathlib", "asyncio", "select", "signal", "skein", "hdfs_native"}


def test_the_job_model_does_no_io_and_reads_no_clock() -> None:
    """appmaster/model/ decides from events alone: no I/O, clock or network module."""
    for path in JOB_MODEL:
        tree = ast.parse(path.read_text())
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
        assert not imported & NO_IO, f"{path.relative_to(ROOT)} imports {imported & NO_IO}"


def test_no_file_is_over_500_lines() -> None:
    long = [f"{path.relative_to(ROOT)}: {n}" for folder in (PACKAGE, "appmaster")
            for path in (ROOT / folder).rglob("*.py")
            if (n := len(path.read_text().splitlines())) > 500]
    assert not long, long
