"""Packaging without a cluster: the wheel built from this checkout holds everything the
thin client, the local cluster and the containers need, with its licence and metadata
(the version written once: tfyarn.__version__), and skein imports on a Python without the
standard library's distutils (3.12 and later) through setuptools' own, which tfyarn
requires there. The install on an edge node, from that wheel into a fresh venv, runs
against the local cluster: tests/test_wheel_install_yarn.py."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest
from wheeltools import REPO, build_wheel, package_files

import tfyarn
from tfyarn.hadoop import amjar


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))  # about 4 s


def _dist_info(names: list[str]) -> str:
    return next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))


def test_the_wheel_ships_every_file_of_the_packages_and_the_licence(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        dist_info = _dist_info(names)
        licence = whl.read(f"{dist_info}/licenses/LICENSE")
    # Every module and data file of tfyarn/ and appmaster/: the AppMaster's code, tfyarn.data
    # (both shipped with every job), the local cluster's launcher, Java source and nvidia-smi
    # captures, skein's driver log4j settings.
    missing = package_files() - set(names)
    assert not missing, f"not in {wheel.name}: {sorted(missing)}"
    for needed in ("appmaster/master/main.py", "appmaster/agent/main.py", "tfyarn/data/dataset.py",
                   "tfyarn/localyarn/launcher.sh", "tfyarn/localyarn/NioLocalFs.java",
                   "tfyarn/localyarn/nvidia_smi_h100/nvidia-smi-q-x.xml",
                   "tfyarn/hadoop/driver-log4j.properties"):
        assert needed in names
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]
    assert licence == (REPO / "LICENSE").read_bytes()
    assert b"Apache License" in licence and b"Version 2.0, January 2004" in licence


def test_the_wheel_carries_the_patched_appmaster(wheel: Path) -> None:
    """Built with the package (setup.py runs tfyarn/amjarbuild.py), named by what it is made
    of, and skein's jar with the patched classes in it: a submit only uses it."""
    with zipfile.ZipFile(wheel) as whl:
        jars = [n for n in whl.namelist() if n.endswith(".jar")]
        assert jars == [f"tfyarn/hadoop/am/{amjar.jar_name()}"], jars
        inner = zipfile.ZipFile(io.BytesIO(whl.read(jars[0])))
    with zipfile.ZipFile(amjar.skein_jar()) as stock:
        assert set(inner.namelist()) >= set(stock.namelist()) - {"META-INF/INDEX.LIST"}
        master = "com/anaconda/skein/ApplicationMaster.class"
        assert b"tfyarn.placement." in inner.read(master)
        assert b"tfyarn.placement." not in stock.read(master)
    assert inner.read(master)[6:8] == b"\x00\x34"  # class file major 52: Java 8's bytecode


def test_the_wheel_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        text = whl.read(f"{_dist_info(whl.namelist())}/METADATA").decode()
    meta = HeaderParser().parsestr(text)
    assert meta["Name"] == "tfyarn"
    assert meta["Version"] == tfyarn.__version__  # written once, in tfyarn/__init__.py
    assert wheel.name.startswith(f"tfyarn-{tfyarn.__version__}-py3-none-any")
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License-File"] == "LICENSE"
    assert set(meta["Requires-Python"].split(",")) == {">=3.10", "<3.14"}
    classifiers = meta.get_all("Classifier")
    # One classifier per supported minor version, exactly the ones Requires-Python admits.
    assert [c.rsplit(" ", 1)[1] for c in classifiers
            if c.startswith("Programming Language :: Python :: 3.")] == [
        "3.10", "3.11", "3.12", "3.13"]
    assert "Operating System :: POSIX :: Linux" in classifiers
    requires = meta.get_all("Requires-Dist")
    assert 'setuptools>=70; python_version >= "3.12"' in requires
    assert "skein==0.8.2" in requires
    # The thin client: TensorFlow only with [tf], and nothing of the tests in the core.
    core = [r.split(";")[0] for r in requires if "extra ==" not in r]
    assert not [r for r in core if r.startswith(("tensorflow", "pytest", "selenium"))], core
    assert {r.split(";")[0] for r in requires if 'extra == "tf"' in r} == {
        "tensorflow-cpu==2.21.0", "tensorboard==2.21.0"}


def test_the_wheel_version_is_read_without_importing_tfyarn() -> None:
    """setuptools' attr: reads `__version__ = "..."` statically; a version built any other way
    would make it import tfyarn (and its dependencies) at build time."""
    source = (REPO / "tfyarn" / "__init__.py").read_text()
    assert f'\n__version__ = "{tfyarn.__version__}"\n' in source
    assert 'version = {attr = "tfyarn.__version__"}' in (REPO / "pyproject.toml").read_text()


# Python 3.12 without the standard library's distutils, here on any Python: a finder in
# front of the path finder answers `distutils` with nothing, as 3.12's standard library
# does; setuptools' finder (distutils-precedence.pth puts it first in sys.meta_path) still
# answers, unless `hide_setuptools` hides setuptools too.
_NO_STDLIB_DISTUTILS = textwrap.dedent("""
    import importlib.machinery, sys
    HIDDEN = {hidden!r}

    class Hide:
        def find_spec(self, name, path=None, target=None):
            if path is None and name in HIDDEN:  # top-level: distutils.version is its own
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    at = sys.meta_path.index(importlib.machinery.PathFinder)
    sys.meta_path.insert(at, Hide())
    {code}
""")


def _without_stdlib_distutils(code: str, hide_setuptools: bool = False):
    hidden = ["distutils"] + (["setuptools", "_distutils_hack"] if hide_setuptools else [])
    program = _NO_STDLIB_DISTUTILS.format(hidden=hidden, code=code)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=REPO, timeout=60)


def test_skein_imports_without_the_standard_librarys_distutils() -> None:
    """skein 0.8.2's utils.py does `from distutils.version import LooseVersion`; Python 3.12
    removed distutils. tfyarn requires setuptools there, whose distutils takes its place: the
    modules that import skein (the submit's spec, the AppMaster) import."""
    if sys.version_info < (3, 12):
        pytest.importorskip("setuptools", reason="on Python < 3.12 tfyarn does not require it")
    result = _without_stdlib_distutils(
        "import tfyarn.submission.appspec, appmaster.master.main, skein\n"
        "print(sys.modules['distutils'].__file__)")
    assert result.returncode == 0, result.stderr
    assert "setuptools" in result.stdout  # setuptools' distutils, not the standard library's


def test_without_setuptools_skein_would_not_import() -> None:
    """The simulation above is real: hiding setuptools too, skein's import fails as it
    does on a bare Python 3.12."""
    result = _without_stdlib_distutils("import tfyarn.submission.appspec", hide_setuptools=True)
    assert result.returncode != 0
    assert "No module named 'distutils'" in result.stderr, result.stderr
