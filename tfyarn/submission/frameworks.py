"""Whether the Python env tfyarn would ship can import the job's framework.

A thin client (tfyarn installed without TensorFlow) packs and ships its own interpreter's env
when the job names none: a TensorFlow script would then fail in every container, minutes
later. The script's imports say which framework it needs (read, not run: `ast`), and the
env's installed distributions (their ``*.dist-info``, not an import) say whether it has it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from appmaster.common import frameworks
from appmaster.common.settings import FRAMEWORK, PYTHON
from tfyarn.submission.environments import JobEnvironmentError

# What scripts import besides the frameworks' own packages (frameworks.KNOWN: torch, jax),
# and what differs from a package's defaults (its own distribution, "pip install <it>"):
# the distributions that install it (normalized, PEP 503), its name, how it is installed.
TENSORFLOWS = frozenset({
    "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos",
    "tensorflow-rocm", "tensorflow-aarch64", "tensorflow-cpu-aws", "intel-tensorflow",
    "tf-nightly", "tf-nightly-cpu", "tf-nightly-gpu"})
PROVIDERS = {"tensorflow": TENSORFLOWS, "keras": TENSORFLOWS | {"keras", "tf-keras"}}
NAMES = {"tensorflow": "TensorFlow", "keras": "Keras"}
INSTALL = {"tensorflow": "install tfyarn's [tf] extra in this env "
                         "(pip install \"<tfyarn's wheel>[tf]\")",
           "keras": "pip install keras in this env",
           "jax": "pip install \"jax[cpu]\" (or jax[cuda12] on GPU nodes) in this env"}
MAX_MODULES = 200  # local modules followed from the entry script: a bound, not a limit met


def packages() -> set[str]:
    """The import names whose absence is checked: TensorFlow's, Keras's, each framework's."""
    return set(PROVIDERS) | {t.package for t in frameworks.KNOWN.values() if t.package}


def providers(package: str) -> frozenset[str]:
    return PROVIDERS.get(package, frozenset({normalized(package)}))


def title(package: str) -> str:
    return NAMES.get(package) or next(
        (t.title for t in frameworks.KNOWN.values() if t.package == package), package)


def install_hint(package: str) -> str:
    return INSTALL.get(package, f"pip install {package} in this env")


def named_package(framework: str) -> str | None:
    """The import name a job's tasks need because site.global.framework names it, whatever
    the script imports (None: TensorFlow's scripts say so by importing it)."""
    return frameworks.of(framework).package


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_names(source: str) -> set[str]:
    """The top-level names of the modules a Python source imports (absolute imports)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()  # not ours to judge here: the task reports it
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def frameworks_needed(entry: Path, scripts_dir: Path) -> dict[str, Path]:
    """Each framework the entry script imports, itself or through the modules of its scripts
    dir, with the first file seen importing it."""
    needed: dict[str, Path] = {}
    seen: set[Path] = set()
    todo, watched = [entry], packages()
    while todo and len(seen) < MAX_MODULES:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            names = imported_names(path.read_text(errors="replace"))
        except OSError:
            continue
        for name in sorted(names):
            if name in watched:
                needed.setdefault(name, path)
            for local in (scripts_dir / f"{name}.py", scripts_dir / name / "__init__.py"):
                if local.is_file():
                    todo.append(local)
    return needed


def installed(site_dirs: Iterable[Path]) -> set[str]:
    """The normalized names of the distributions installed in these site dirs."""
    paths = [str(d) for d in site_dirs]
    return {normalized(dist.metadata["Name"] or "") for dist in metadata.distributions(path=paths)
            if dist.metadata is not None}


@dataclass(frozen=True)
class Missing:
    package: str  # the framework's import name
    script: Path  # the file that imports it


def missing(entry: Path, scripts_dir: Path, site_dirs: Iterable[Path],
            framework: str = "tensorflow") -> list[Missing]:
    """The frameworks the script imports, and the one the job names (site.global.framework,
    other than TensorFlow, whose scripts say so by importing it), that no distribution in
    ``site_dirs`` provides."""
    needed = frameworks_needed(entry, scripts_dir)
    if package := named_package(framework):
        needed.setdefault(package, entry)
    if not needed:
        return []
    have = installed(site_dirs)
    return [Missing(name, path) for name, path in needed.items() if not have & providers(name)]


def check_shipped_env(entry: Path, scripts_dir: Path, site_dirs: Iterable[Path],
                      prefix: Path, framework: str = "tensorflow") -> None:
    """Refuse a job whose script imports a framework, or whose site.global.framework names
    one, that the env to be shipped (this interpreter's, at ``prefix``) lacks, with the three
    ways out."""
    gaps = missing(entry, scripts_dir, site_dirs, framework)
    if not gaps:
        return
    what = " and ".join(title(gap.package) for gap in gaps)
    files = ", ".join(sorted({
        f'{FRAMEWORK.key} is "{framework}"' if gap.package == named_package(framework)
        else f"{gap.script} imports {gap.package}"
        for gap in gaps}))
    install = "; ".join(dict.fromkeys(install_hint(gap.package) for gap in gaps))
    raise JobEnvironmentError(
        f"the job's script needs {what} ({files}), but the Python env tfyarn would ship to "
        f"the containers, this interpreter's ({prefix}), has no {what} installed.",
        hint=f"one of: {install}; give a packed env that has {what} "
        "(--python-env env.tar.gz, made with venv-pack or conda-pack); or name an "
        f"interpreter every node has, with {what} ('\"{PYTHON.key}\": "
        f"\"{PYTHON.example}\"' in appConfig.json).")
