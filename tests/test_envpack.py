"""The environment tfyarn packs from the submitting interpreter (tfyarn/submission/envpack.py):
what goes in and what cannot be packed (its layers and keys: tests/test_envlayers.py). Pure
logic on small made-up environments; the real one is packed and run on every bare node of
the local cluster by the test session (tests/barenodes.py) and by every job."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from tfyarn.submission import envpack
from tfyarn.submission.environments import JobEnvironmentError


def dist(site: Path, name: str, version: str, files: dict[str, str],
         direct_url: dict | None = None) -> None:
    """An installed distribution in ``site``: its files and a dist-info with a RECORD."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for relative, text in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(text)
    record = [*files, f"{info.name}/METADATA", f"{info.name}/RECORD"]
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
        record.append(f"{info.name}/direct_url.json")
    sizes = {relative: len(text.encode()) for relative, text in files.items()}
    (info / "RECORD").write_text("".join(f"{r},,{sizes.get(r, '')}\n" for r in record))


@pytest.fixture
def env(tmp_path: Path) -> envpack.EnvSource:
    return made_up_env(tmp_path)


def made_up_env(tmp_path: Path) -> envpack.EnvSource:
    """An environment: an interpreter, a standard library, and a site dir with a regular
    distribution, TensorFlow's headers, an editable install of the user's own library
    (setuptools' finder), one through a .pth path, and tfyarn's own editable install."""
    base = tmp_path / "base"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "python3.11").write_text("#!interpreter\n")
    stdlib = base / "lib" / "python3.11"
    for name in ("os.py", "json/__init__.py", "lib-dynload/_ssl.so", "test/test_os.py",
                 "tkinter/__init__.py", "config-3.11-x86_64-linux-gnu/libpython3.11.a"):
        (stdlib / name).parent.mkdir(parents=True, exist_ok=True)
        (stdlib / name).write_text(name)
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    dist(site, "numpy", "2.0.0", {"numpy/__init__.py": "numpy"})
    dist(site, "tensorflow", "2.21.0", {"tensorflow/__init__.py": "tf",
                                        "tensorflow/include/eigen.h": "header"})
    source = tmp_path / "checkout" / "mylib"
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("VALUE = 1\n")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.pyc").write_text("compiled")
    finder = "__editable___mylib_1_0_finder.py"
    dist(site, "mylib", "1.0", {
        finder: f"MAPPING = {{'mylib': {str(source)!r}}}\n",
        "__editable__.mylib-1.0.pth": "import __editable___mylib_1_0_finder\n"},
        {"url": f"file://{source.parent}", "dir_info": {"editable": True}})
    src = tmp_path / "other" / "src"
    (src / "otherlib").mkdir(parents=True)
    (src / "otherlib" / "__init__.py").write_text("OTHER = 1\n")
    (src / "helper.py").write_text("HELP = 1\n")
    dist(site, "otherlib", "0.1", {"otherlib.pth": f"{src}\n"},
         {"url": f"file://{src.parent}", "dir_info": {"editable": True}})
    dist(site, "tfyarn", "0.1.0", {"__editable__.tfyarn-0.1.0.pth": "/work/main\n"},
         {"url": "file:///work/main", "dir_info": {"editable": True}})
    editable, dropped = envpack._editable_sources([site])
    return envpack.EnvSource("3.11", base / "bin" / "python3.11", (), stdlib,
                             stdlib / "lib-dynload", (site,), tmp_path / "venv", editable,
                             frozenset(dropped))


def members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_editable_installs_are_carried_by_their_sources(env: envpack.EnvSource) -> None:
    assert env.editable == {"mylib": env.editable["mylib"], "otherlib": env.editable["otherlib"],
                            "helper": env.editable["helper"]}
    assert env.editable["mylib"].name == "mylib" and env.editable["helper"].name == "helper.py"
    site = env.site_dirs[0]
    # the import hooks pointing at the checkout stay behind, and tfyarn whole (code packs)
    assert {p.name for p in env.dropped} >= {
        "__editable___mylib_1_0_finder.py", "__editable__.mylib-1.0.pth", "otherlib.pth",
        "__editable__.tfyarn-0.1.0.pth", "RECORD"}
    assert site / "tfyarn-0.1.0.dist-info" / "METADATA" in env.dropped


def test_the_pack_is_a_python_prefix(env: envpack.EnvSource, tmp_path: Path) -> None:
    archive = tmp_path / "out" / "env.tar.gz"
    size = envpack.pack(envpack.pack_members(env), archive,
                        envpack.launchers(env.version, env.lib))
    assert size == archive.stat().st_size
    found = members(archive)
    lib = "lib/python3.11"
    assert {"bin/python", "bin/python3", "bin/python3.11", f"{lib}/os.py",
            f"{lib}/json/__init__.py", f"{lib}/lib-dynload/_ssl.so",
            f"{lib}/site-packages/numpy/__init__.py",
            f"{lib}/site-packages/tensorflow/__init__.py",
            f"{lib}/site-packages/mylib/__init__.py",
            f"{lib}/site-packages/otherlib/__init__.py",
            f"{lib}/site-packages/helper.py"} <= set(found)
    assert found["bin/python3"].issym() and found["bin/python3"].linkname == "python"
    assert found["bin/python"].mode == 0o755
    left_out = [n for n in found if any(part in n for part in (
        "/test/", "tkinter", "config-3.11", "tensorflow/include", "__pycache__", "tfyarn",
        "__editable__", "otherlib.pth")) and not n.endswith("/_tfyarn_layers.pth")]
    assert left_out == []
    assert all(m.uid == 0 and m.uname == "" for m in found.values())
    with tarfile.open(archive) as tar:
        wrapper = tar.extractfile("bin/python").read().decode()
    assert 'exec "$here/python3.11" "$@"' in wrapper and "LD_LIBRARY_PATH" in wrapper
    assert not list(archive.parent.glob(".*partial"))


def test_an_editable_install_whose_source_is_gone(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    gone = tmp_path / "deleted-checkout" / "gonelib"
    dist(site, "gonelib", "1.0", {
        "__editable___gonelib_1_0_finder.py": f"MAPPING = {{'gonelib': {str(gone)!r}}}\n"},
        {"url": f"file://{gone.parent}", "dir_info": {"editable": True}})
    with pytest.raises(JobEnvironmentError) as caught:
        envpack._editable_sources([site])
    text = caught.value.describe()
    assert f"gonelib is installed editable from {gone}, which no longer exists" in text
    assert "site.global.python" in text and "--python-env" in text


class Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_progress_shows_on_a_terminal_only() -> None:
    shown = Terminal(tty=True)
    progress = envpack.TerminalProgress("packing", shown, every_s=0)
    progress(250_000_000, 1_000_000_000)
    progress(1_000_000_000, 1_000_000_000)
    assert "packing: 250 MB of 1.0 GB" in shown.getvalue() and "s left" in shown.getvalue()
    assert shown.getvalue().endswith("packing: 1.0 GB of 1.0 GB\x1b[K\n")
    logged = Terminal(tty=False)
    envpack.TerminalProgress("packing", logged, every_s=0)(1, 2)
    assert logged.getvalue() == ""


def test_a_conda_env_goes_whole(tmp_path: Path) -> None:
    """A conda env's extension modules link its own lib/ (OpenSSL, MKL): its whole prefix
    goes, as conda-pack's does, but its package cache; bin/python is tfyarn's wrapper."""
    prefix = tmp_path / "conda" / "envs" / "tf"
    for name in ("bin/python3.11", "bin/python", "lib/libssl.so.3", "lib/libpython3.11.so.1.0",
                 "lib/python3.11/os.py", "lib/python3.11/site-packages/numpy/__init__.py",
                 "lib/python3.11/site-packages/tensorflow/include/eigen.h",
                 "conda-meta/numpy-2.0.0.json", "pkgs/numpy-2.0.0.tar.bz2"):
        (prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (prefix / name).write_text(name)
    site = prefix / "lib" / "python3.11" / "site-packages"
    source = envpack.EnvSource("3.11", prefix / "bin" / "python3.11", (),
                               prefix / "lib" / "python3.11",
                               prefix / "lib" / "python3.11" / "lib-dynload", (site,), prefix,
                               conda=True)
    archive = tmp_path / "conda.tar.gz"
    envpack.pack(envpack.pack_members(source), archive, envpack.launchers("3.11", source.lib))
    found = members(archive)
    assert {"bin/python3.11", "lib/libssl.so.3", "lib/python3.11/os.py",
            "lib/python3.11/site-packages/numpy/__init__.py",
            "conda-meta/numpy-2.0.0.json"} <= set(found)
    assert not [n for n in found if n.startswith("pkgs") or "tensorflow/include" in n]
    with tarfile.open(archive) as tar:
        assert b"tfyarn's packed Python" in tar.extractfile("bin/python").read()
        assert tar.getnames().count("bin/python") == 1  # the env's own is left out
