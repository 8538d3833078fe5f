"""tfyarn's wheel, built from this checkout as a user's `pip wheel .` would, and fresh venvs
to install it in: the packaging tests (tests/test_packaging.py) and the edge-node install on
the local cluster (tests/test_wheel_install_yarn.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# What the build reads: the packages, and the files pyproject.toml names.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "tfyarn", "appmaster")
PACKAGES = ("tfyarn", "appmaster")
# *.jar: the patched AppMaster a build of the checkout left in it; the wheel's build makes its own.
_BUILD_LEFTOVERS = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                          "*.jar")


def package_files(root: Path = REPO) -> set[str]:
    """Every file of the packages in the checkout, as the wheel names them (tfyarn/x.py)."""
    return {path.relative_to(root).as_posix()
            for package in PACKAGES for path in (root / package).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def build_wheel(workdir: Path) -> Path:
    """The wheel of a copy of the checkout's sources (so that no build/ or egg-info is left in
    the checkout, and parallel runs never share one), with pip's isolated build: the
    build-system's setuptools, as any user's `pip install .` gets, not this venv's."""
    source, out = workdir / "src", workdir / "dist"
    source.mkdir(parents=True)
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=_BUILD_LEFTOVERS)
        else:
            shutil.copy2(path, source / name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out),
         str(source)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"pip wheel failed:\n{result.stdout}{result.stderr}"
    wheels = sorted(out.glob("tfyarn-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def fresh_venv(path: Path, python: str = sys.executable) -> Path:
    """A new venv from ``python``'s base interpreter (not this venv: nothing of it carries
    over); returns its bin directory."""
    base = subprocess.run([python, "-c", "import sys; print(sys._base_executable)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([base, "-m", "venv", str(path)], check=True, timeout=120)
    return path / "bin"


def pip_install(bin_dir: Path, *args: str, timeout_s: float = 600) -> None:
    """pip install into that venv (pip's cache and this machine's index settings apply)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", *args],
                            capture_output=True, text=True, timeout=timeout_s, env=env)
    assert result.returncode == 0, f"pip install {' '.join(args)}:\n{result.stdout}{result.stderr}"


def without_a_compiler(env: dict[str, str], shadow: Path) -> dict[str, str]:
    """``env`` as on an edge node with only a JRE: every PATH directory holding javac, and
    JAVA_HOME, replaced by a copy of links to all their files but javac (a JDK's bin and a
    JRE's differ by the compiler, for what tfyarn could use of it)."""
    def shadowed(directory: Path) -> Path:
        copy = shadow / str(len(list(shadow.iterdir())) if shadow.is_dir() else 0)
        copy.mkdir(parents=True)
        for entry in directory.iterdir():
            if entry.name != "javac":
                (copy / entry.name).symlink_to(entry)
        return copy

    shadow.mkdir(parents=True, exist_ok=True)
    changed = dict(env)
    changed["PATH"] = ":".join(str(shadowed(Path(d))) if (Path(d) / "javac").exists() else d
                               for d in env.get("PATH", "").split(":") if d)
    if env.get("JAVA_HOME"):
        home = shadowed(Path(env["JAVA_HOME"]))
        (home / "bin").unlink()
        (home / "bin").symlink_to(shadowed(Path(env["JAVA_HOME"]) / "bin"))
        changed["JAVA_HOME"] = str(home)
    return changed
