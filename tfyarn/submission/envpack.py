"""Ship the submitting interpreter's environment to nodes that have neither it nor TensorFlow.

A real cluster's nodes have their own system Python and nothing of the user's: not their
virtualenv, not TensorFlow, not their checkout. So unless the job names an interpreter every
node has (``site.global.python``) or a ready archive (``--python-env``), tfyarn packs the
environment that runs `tfyarn` itself and ships it, as tf-yarn does.

The pack is self-contained, as a conda-pack is: the interpreter itself (and libpython, when
it is linked as a shared library), its standard library, and every site-packages directory
it imports from, laid out as a Python prefix::

    bin/python          a shell wrapper: finds lib/ beside it, then runs bin/python3.X
    bin/python3.X       the interpreter
    lib/libpython3.X.so.1.0
    lib/python3.X/      the standard library (its tests, IDLE and Tk left out)
    lib/python3.X/site-packages/

A node runs ``./pyenv/bin/python``, which finds its standard library beside it (Python's own
search for ``lib/python3.X/os.py`` upwards from the interpreter), whatever the node's Python
is. What it needs from the node is what any CPython build needs: the C library and the
libraries its extension modules link (libssl, libffi, zlib), so nodes run the same OS family
as the submitting machine, as they must for TensorFlow's wheels anyway.

Editable installs (``pip install -e``) are carried by their sources: their import hooks
point at the submitting machine's checkout, which nodes do not have. tfyarn's own
distribution is left out: its AppMaster code and ``tfyarn.data`` go with every job as code
packs (tfyarn/submission/codepack.py), so changing tfyarn does not repack the environment.

The pack is made once per content (``env_key``: the interpreter's version and path, every
distribution's name and version, and the sources of editable and local installs; no
gigabytes hashed), kept in ``~/.cache/tfyarn/envs/`` and uploaded once to
``.tfyarn/envs/env-<key>.tar.gz`` on the cluster.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import site
import sys
import sysconfig
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tfyarn.submission.environments import JobEnvironmentError

PACK_FORMAT = 2  # bump when the layout changes: the key changes with it
PREFIX = "env-"
SUFFIX = ".tar.gz"
COMPRESS_LEVEL = 1  # gzip -1: 3x faster than -6 for 10 % more bytes (docs/benchmarks.md)
OWN_DISTRIBUTIONS = frozenset({"tfyarn"})  # shipped with each job as code packs
# Parts of the standard library no task imports: its test suite (120 MB), IDLE, Tk, the
# static library for embedding, and the base's own site-packages (the env's come instead).
STDLIB_SKIPPED = frozenset({"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
                            "site-packages", "dist-packages"})
# What no task needs at run time, by its path in site-packages: TensorFlow's C++ headers
# (for building custom ops: 11,000 files, 290 MB).
BUILD_ONLY = frozenset({"tensorflow/include"})
_NEVER = ("__pycache__/", ".pyc")  # of editable sources: the nodes compile their own

WRAPPER = """#!/bin/sh
# tfyarn's packed Python environment: its own interpreter and libpython, wherever unpacked.
here=$(cd "$(dirname "$0")" && pwd -P)
LD_LIBRARY_PATH="${{here%/bin}}/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" \\
  exec "$here/{binary}" "$@"
"""

Progress = Callable[[int, int], None]  # bytes done, bytes in all
LAUNCHERS = ("bin/python", "bin/python3")  # the wrapper, and a link to it


def _no_progress(done: int, total: int) -> None:
    pass


def cache_dir() -> Path:
    """Where packs are kept on the submitting machine, shared by every cluster."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tfyarn" / "envs"


@dataclass(frozen=True)
class EnvSource:
    """What the running interpreter's environment is made of, and where it goes in a pack."""

    version: str  # "3.11"
    interpreter: Path  # the real binary of the base installation
    shared_libraries: tuple[Path, ...]  # libpython, when the interpreter links it
    stdlib: Path
    dynload: Path  # the standard library's extension modules
    site_dirs: tuple[Path, ...]  # in import order
    prefix: Path  # sys.prefix: what `tfyarn submit` says it shipped
    editable: dict[str, Path] = field(default_factory=dict)  # import name -> its sources
    dropped: frozenset[Path] = frozenset()  # files of the site dirs not carried
    # A conda env: its whole prefix goes, as conda-pack's does, since its extension modules
    # link the libraries in its lib/ (OpenSSL, MKL, libstdc++) rather than the node's.
    conda: bool = False

    @property
    def lib(self) -> str:
        return f"lib/python{self.version}"


def current_env() -> EnvSource:
    """The environment of the interpreter running tfyarn; JobEnvironmentError when it cannot
    be carried (the message names what and how to fix it)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    interpreter = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    if not interpreter.is_file():
        raise _cannot_pack(f"the interpreter {interpreter} is not a file")
    stdlib = Path(sysconfig.get_path("stdlib"))
    if not (stdlib / "os.py").is_file():
        raise _cannot_pack(f"no standard library at {stdlib} (no os.py there)")
    # A venv's own platstdlib has no lib-dynload: the base installation's has.
    dynload = Path(sysconfig.get_path("platstdlib", vars={
        "platbase": sys.base_exec_prefix, "base": sys.base_prefix})) / "lib-dynload"
    site_dirs = [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        site_dirs.append(Path(site.getusersitepackages()))
    site_dirs = [p for p in dict.fromkeys(site_dirs) if p.is_dir()]
    editable, dropped = _editable_sources(site_dirs)
    return EnvSource(version, interpreter, _shared_libraries(), stdlib, dynload,
                     tuple(site_dirs), Path(sys.prefix), editable, frozenset(dropped),
                     conda=(Path(sys.prefix) / "conda-meta").is_dir())


def _cannot_pack(reason: str) -> JobEnvironmentError:
    return JobEnvironmentError(
        f"cannot pack this Python environment ({sys.prefix}) for the cluster: {reason}.",
        hint='give an interpreter every node has ("site.global.python": "/usr/bin/python3" '
        "in appConfig.json, with TensorFlow, skein and hdfs-native installed there), or a "
        "packed env (--python-env env.tar.gz, made with venv-pack or conda-pack).")


def _shared_libraries() -> tuple[Path, ...]:
    """libpython, where the interpreter is built with --enable-shared (pyenv's, Debian's
    are static)."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return ()
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
    for directory in (sysconfig.get_config_var("LIBDIR"),
                      Path(sys.base_prefix) / "lib"):
        if directory and (Path(directory) / name).is_file():
            return (Path(os.path.realpath(Path(directory) / name)).with_name(name),)
    raise _cannot_pack(f"the interpreter links {name}, which is not in "
                       f"{sysconfig.get_config_var('LIBDIR')}")


def _distributions(site_dirs: tuple[Path, ...] | list[Path]):
    return importlib.metadata.distributions(path=[str(p) for p in site_dirs])


def _direct_url(dist) -> dict:
    text = dist.read_text("direct_url.json")
    return json.loads(text) if text else {}


def _name(dist) -> str:
    return (dist.metadata["Name"] or "").lower().replace("_", "-")


def _editable_sources(site_dirs: list[Path]) -> tuple[dict[str, Path], set[Path]]:
    """Editable installs: each import name with its source path (a package directory or a
    module file), and the files (import hooks, .pth) the pack leaves out. tfyarn's own
    distribution is left out whole."""
    editable: dict[str, Path] = {}
    dropped: set[Path] = set()
    for dist in _distributions(site_dirs):
        own = _name(dist) in OWN_DISTRIBUTIONS
        if not own and not _direct_url(dist).get("dir_info", {}).get("editable"):
            continue
        files = [Path(dist.locate_file(f)) for f in dist.files or ()]
        if own:
            dropped.update(files)
            continue
        for path in files:
            if path.name.startswith("__editable__") and path.suffix == ".py":
                editable.update(_finder_mapping(dist, path))
                dropped.add(path)
            elif path.suffix == ".pth":
                editable.update(_pth_sources(dist, path))
                dropped.add(path)
    return editable, dropped


def _finder_mapping(dist, finder: Path) -> dict[str, Path]:
    """setuptools' editable finder module: its MAPPING of import names to source paths."""
    spec = importlib.util.spec_from_file_location(f"_tfyarn_probe_{finder.stem}", finder)
    if spec is None or spec.loader is None:
        raise _cannot_pack(f"{dist.metadata['Name']} is installed editable through "
                           f"{finder}, which cannot be read")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mapping = {name: Path(path) for name, path in getattr(module, "MAPPING", {}).items()}
    return {name: _existing(dist, path) for name, path in mapping.items()}


def _pth_sources(dist, pth: Path) -> dict[str, Path]:
    """A .pth's directories (pip's and setuptools' older editable installs): their
    top-level packages and modules."""
    sources: dict[str, Path] = {}
    for line in pth.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "import ", "import\t")):
            continue
        directory = _existing(dist, pth.parent / line)
        for child in sorted(directory.iterdir()):
            if child.name.startswith((".", "_")) or (child / "pyvenv.cfg").exists():
                continue
            if (child / "__init__.py").is_file() or child.suffix == ".py":
                sources.setdefault(child.stem if child.is_file() else child.name, child)
    return sources


def _existing(dist, path: Path) -> Path:
    if not path.exists():
        raise _cannot_pack(f"{dist.metadata['Name']} is installed editable from {path}, "
                           "which no longer exists (reinstall it, or uninstall it)")
    return path


# ---------------------------------------------------------------- the key


def env_key(source: EnvSource) -> str:
    """The pack's identity, in well under a second: the interpreter, every distribution's
    name and version, the RECORD of local installs (their version need not change with
    their content), the sources of editable ones, and the site dirs' top-level names."""
    digest = hashlib.sha256()

    def add(*parts: object) -> None:
        digest.update(("\0".join(map(str, parts)) + "\n").encode())

    add("format", PACK_FORMAT, sys.version, platform.machine(), source.interpreter,
        source.conda)
    for dist in sorted(_distributions(source.site_dirs), key=_name):
        name = _name(dist)
        if name in OWN_DISTRIBUTIONS:
            continue
        version = dist.metadata["Version"]
        if not name or version is None:
            raise _cannot_pack(f"a distribution in {dist.locate_file('')} has no name or "
                               "version in its METADATA (a broken install: reinstall it)")
        add("dist", name, version)
        direct_url = _direct_url(dist)
        if direct_url and not direct_url.get("dir_info", {}).get("editable"):
            add("record", hashlib.sha256((dist.read_text("RECORD") or "").encode()).hexdigest())
    for name, path in sorted(source.editable.items()):
        add("editable", name)
        for file, arcname in _walk(path, name):
            add(arcname, hashlib.sha256(file.read_bytes()).hexdigest())
    for directory in source.site_dirs:
        add("site", *sorted(p.name for p in directory.iterdir()
                            if p not in source.dropped and p.name != "__pycache__"))
    return digest.hexdigest()[:32]


# ---------------------------------------------------------------- the pack


def _walk(path: Path, arcname: str, skip: frozenset[str] = frozenset(),
          dropped: frozenset[Path] = frozenset(), editable: bool = True,
          build_only: frozenset[str] = frozenset()) -> Iterator[tuple[Path, str]]:
    """Every file below ``path`` with its name in the pack, sorted; ``skip``: directory
    names left out anywhere, ``build_only``: directories left out by their relative path."""
    if path.is_file():
        yield path, arcname
        return
    for root, dirs, files in os.walk(path, followlinks=True):  # links carried as their files
        relative = os.path.relpath(root, path)
        dirs[:] = sorted(d for d in dirs if d not in skip and not (
            editable and d == "__pycache__") and os.path.normpath(
                f"{relative}/{d}") not in build_only)
        for name in sorted(files):
            file = Path(root) / name
            if file in dropped or (editable and name.endswith(_NEVER[1])):
                continue
            yield file, os.path.normpath(f"{arcname}/{relative}/{name}")


def pack_members(source: EnvSource) -> Iterator[tuple[Path, str]]:
    """(file, name in the pack) for everything the pack carries; the first of a name wins."""
    site_packages = f"{source.lib}/site-packages"
    for path in source.editable.values():
        yield from _walk(path, f"{site_packages}/{path.name}")
    if source.conda:  # its packages' cache is no part of the env
        yield from _walk(source.prefix, ".", dropped=source.dropped, editable=False,
                         build_only=frozenset({"pkgs", *(f"{site_packages}/{d}"
                                                         for d in BUILD_ONLY)}))
        return
    binary = f"python{source.version}"
    yield source.interpreter, f"bin/{binary}"
    for library in source.shared_libraries:
        yield library, f"lib/{library.name}"
    skip = STDLIB_SKIPPED | {d.name for d in source.stdlib.glob("config-*")}
    yield from _walk(source.stdlib, source.lib, skip, editable=False)
    if not source.dynload.is_relative_to(source.stdlib):
        yield from _walk(source.dynload, f"{source.lib}/lib-dynload", editable=False)
    for directory in source.site_dirs:
        yield from _walk(directory, site_packages, dropped=source.dropped, editable=False,
                         build_only=BUILD_ONLY)


def pack(source: EnvSource, archive: Path, progress: Progress = _no_progress) -> int:
    """Write the pack to ``archive`` (all or nothing: a partial file has another name);
    returns its size in bytes."""
    members, seen = [], set(LAUNCHERS)  # bin/python is tfyarn's wrapper, whatever the env's
    for file, arcname in pack_members(source):
        if arcname not in seen and file.is_file():  # a dangling link is nothing to carry
            seen.add(arcname)
            members.append((file, arcname))
    total = sum(f.stat().st_size for f, _ in members)
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    done = 0
    try:
        with tarfile.open(partial, "w:gz", compresslevel=COMPRESS_LEVEL,
                          dereference=True) as tar:
            for file, arcname in members:
                info = tar.gettarinfo(str(file), arcname)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with open(file, "rb") as f:
                    tar.addfile(info, f)
                done += info.size
                progress(done, total)
            wrapper = WRAPPER.format(binary=f"python{source.version}").encode()
            for name, data, mode in (("bin/python", wrapper, 0o755),):
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), mode, 0
                tar.addfile(info, io.BytesIO(data))
            link = tarfile.TarInfo("bin/python3")
            link.type, link.linkname, link.mode = tarfile.SYMTYPE, "python", 0o777
            tar.addfile(link)
        os.replace(partial, archive)
    finally:
        partial.unlink(missing_ok=True)
    return archive.stat().st_size


def remote_name(key: str) -> str:
    return f"{PREFIX}{key}{SUFFIX}"


def prune_cache(keep: Path, newest: int = 2) -> None:
    """Keep the ``newest`` packs of the local cache (``keep`` among them): each is hundreds
    of MB, and the cluster keeps its own copy."""
    packs = sorted(cache_dir().glob(f"{PREFIX}*{SUFFIX}"), key=lambda p: p.stat().st_mtime,
                   reverse=True)
    for old in [p for p in packs if p != keep][newest - 1:]:
        old.unlink(missing_ok=True)


class TerminalProgress:
    """`Packing …: 812 MB of 1.5 GB, 18 s left` on one line of a terminal; on anything else
    nothing, since a log is no place for a counter."""

    def __init__(self, what: str, stream=None, every_s: float = 0.5) -> None:
        self.what, self.stream, self.every_s = what, stream or sys.stderr, every_s
        self.started = self.shown = time.monotonic()
        self.active = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.active or (now - self.shown < self.every_s and done < total):
            return
        self.shown = now
        rate = done / max(now - self.started, 1e-6)
        left = f", {(total - done) / rate:.0f} s left" if 0 < done < total else ""
        self.stream.write(f"\r{self.what}: {format_size(done)} of {format_size(total)}{left}\033[K")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def format_size(n: float) -> str:
    for unit in ("B", "kB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
