"""One meaning per class name: no two modules of tfyarn/ and appmaster/ define a class of the same
name (a reader who meets ``Placement`` or ``Request`` must not have to ask which one)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tfyarn", "appmaster")


def class_names(source: str) -> set[str]:
    """Every class a module defines, nested ones (a handler inside a function) included."""
    return {node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)}


def defined_twice(modules: dict[str, str]) -> dict[str, list[str]]:
    """Class name -> the modules defining it, for names that more than one module defines."""
    where: dict[str, list[str]] = defaultdict(list)
    for module, source in sorted(modules.items()):
        for name in class_names(source):
            where[name].append(module)
    return {name: found for name, found in sorted(where.items()) if len(found) > 1}


def project_modules() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): path.read_text()
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def test_no_two_modules_define_a_class_of_the_same_name() -> None:
    modules = project_modules()
    assert len(modules) > 50  # the walk found the packages
    assert defined_twice(modules) == {}, "give each class a name that says what it is"


def test_a_name_defined_in_two_modules_is_found() -> None:
    modules = {"a.py": "class Verdict:\n    pass\n",
               "b.py": "def serve():\n    class Verdict:\n        pass\n",
               "c.py": "class Other:\n    pass\n"}
    assert defined_twice(modules) == {"Verdict": ["a.py", "b.py"]}
