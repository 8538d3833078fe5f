"""Imports go down the floors docs/architecture.md lists, without cycles, and never reach for
another module's private name: a floor can then be read, changed and shipped (appmaster/'s to
YARN) knowing only what is below it. Lazy and type-only imports count like any other."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tfyarn", "appmaster")
ARCHITECTURE = Path("docs") / "architecture.md"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for package in PACKAGES for p in (root / package).rglob("*.py")}


def floors(root: Path) -> list[list[str]]:
    """The floors table's rows, top first, each its floors: a package as a prefix of modules
    (`tfyarn/cli/` -> "tfyarn.cli.*"), a file as one module (`tfyarn/errors.py` -> "tfyarn.errors",
    `tfyarn/__init__.py` -> "tfyarn": the package's own module, not the modules in it)."""
    text = (root / ARCHITECTURE).read_text()
    table = text[text.index("## Floors"):].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        rows.append([re.sub(r"(/__init__)?\.py$", "", re.sub(r"/$", "/*", path)).replace("/", ".")
                     for path in re.findall(r"`([^`]+)`", cell)])
    return rows


def on_floor(module: str, floor: str) -> bool:
    if floor.endswith(".*"):
        return module == floor[:-2] or module.startswith(floor[:-1])
    return module == floor


def floor_of(module: str, rows: list[list[str]]) -> tuple[int, str] | None:
    """(row, floor) of a module: the longest floor that is the module or a package above it;
    None for a module the table does not list."""
    found = [(len(f), row, f.removesuffix(".*")) for row, names in enumerate(rows) for f in names
             if on_floor(module, f)]
    if not found:
        return None
    _, row, name = max(found)
    return row, name


def imports(path: Path, known: set[str]) -> list[tuple[str, str | None, int]]:
    """(module, name imported from it or None, line) for each project import in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names if a.name in known]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:  # `from appmaster.common import settings` names a module
                candidate = f"{node.module}.{alias.name}"
                found.append((candidate, None, node.lineno) if candidate in known
                             else (node.module, alias.name, node.lineno))
    return found


def private_uses(path: Path, known: set[str]) -> list[str]:
    """`module._name` where `module` is a project module imported under that name."""
    tree = ast.parse(path.read_text())
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            aliases |= {a.asname or a.name for a in node.names
                        if f"{node.module}.{a.name}" in known}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.asname and a.name in known}
    return [f"{node.value.id}.{node.attr} (line {node.lineno})" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in aliases and is_private(node.attr)]


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def violations(root: Path) -> list[str]:
    """Every module on no floor, every floor naming no file, every import that goes up or
    sideways a floor, and every private name reached for."""
    rows, found = floors(root), []
    files = modules(root)
    found += [f"{ARCHITECTURE}'s floor {floor} names no module: correct the table"
              for names in rows for floor in names
              if not any(on_floor(module, floor) for module in files)]
    for name, path in sorted(files.items()):
        where = path.relative_to(root)
        if (placed := floor_of(name, rows)) is None:
            found.append(f"{where} is on no floor of {ARCHITECTURE}: add it to the table")
            continue
        row, floor = placed
        for target, imported, line in imports(path, set(files)):
            target_row, target_floor = floor_of(target, rows) or (row, floor)
            if target_floor != floor and target_row <= row:
                way = "up" if target_row < row else "sideways"
                found.append(f"{where}:{line} imports {target} ({way}: {floor} -> {target_floor})")
            if imported and is_private(imported) and target != name:
                found.append(f"{where}:{line} imports {target}'s private {imported}")
        found += [f"{where}: uses {use}, another module's private name"
                  for use in private_uses(path, set(files))]
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    files = modules(root)
    return {name: {t for t, _, _ in imports(path, set(files))} - {name}
            for name, path in files.items()}


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


def test_imports_only_go_down_the_floors() -> None:
    found = violations(ROOT)
    assert not found, "imports against docs/architecture.md's floors:\n" + "\n".join(found)


def test_the_floors_table_is_read() -> None:
    rows = floors(ROOT)
    assert rows[0] == ["tfyarn"] and ["tfyarn.cli.*"] in rows
    assert ["appmaster.master.*", "appmaster.agent.*"] in rows
    assert rows[-2] == ["appmaster.common.*"] and rows[-1] == ["appmaster"]
    assert floor_of("appmaster.agent.mirror", rows) == (rows.index(
        ["appmaster.master.*", "appmaster.agent.*"]), "appmaster.agent")
    assert floor_of("tfyarn", rows) == (0, "tfyarn")
    assert floor_of("tfyarn.unlisted", rows) is None  # not on tfyarn/__init__.py's floor


def copy_of_the_code(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package)
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / ARCHITECTURE, tmp_path / ARCHITECTURE)
    return tmp_path


def add_line(path: Path, line: str) -> None:
    path.write_text(path.read_text() + f"\n{line}\n")


def test_an_upward_import_fails_the_check(tmp_path: Path) -> None:
    """The check can fail: an upward, a sideways and a private import made on purpose in a
    copy of the code are each found."""
    root = copy_of_the_code(tmp_path)
    assert violations(root) == []
    add_line(root / "appmaster" / "common" / "storage.py", "from appmaster.model import job")
    add_line(root / "tfyarn" / "jobconfig" / "documents.py", "import tfyarn.submission.api")
    add_line(root / "appmaster" / "agent" / "mirror.py", "from appmaster.master import rendezvous")
    add_line(root / "tfyarn" / "cli" / "config.py", "from tfyarn.jobconfig.model import _x")
    found = "\n".join(violations(root))
    assert "common/storage.py" in found and "up: appmaster.common -> appmaster.model" in found
    assert "jobconfig/documents.py" in found
    assert "up: tfyarn.jobconfig -> tfyarn.submission" in found
    assert "sideways: appmaster.agent -> appmaster.master" in found
    assert "tfyarn.jobconfig.model's private _x" in found


def test_a_module_on_no_floor_fails_the_check(tmp_path: Path) -> None:
    """A new module the table does not list is refused, not put on the top floor; so is a
    floor of the table that names no module."""
    root = copy_of_the_code(tmp_path)
    (root / "tfyarn" / "unlisted.py").write_text("from tfyarn.cli import main\n")
    (root / "appmaster" / "page" / "view.py").rename(root / "appmaster" / "page" / "look.py")
    (root / "tfyarn" / "errors.py").rename(root / "tfyarn" / "problems.py")
    found = "\n".join(violations(root))
    assert f"tfyarn/unlisted.py is on no floor of {ARCHITECTURE}" in found
    assert f"tfyarn/problems.py is on no floor of {ARCHITECTURE}" in found
    assert f"{ARCHITECTURE}'s floor tfyarn.errors names no module" in found
    assert "appmaster/page/look.py" not in found  # its package is a floor


def test_no_import_cycles() -> None:
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
    long = [f"{path.relative_to(ROOT)}: {n}" for folder in PACKAGES
            for path in (ROOT / folder).rglob("*.py")
            if (n := len(path.read_text().splitlines())) > 500]
    assert not long, long
