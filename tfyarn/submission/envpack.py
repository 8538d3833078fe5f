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

It goes in layers, each keyed by its content (tfyarn/submission/envlayers.py), packed once
into ``~/.cache/tfyarn/envs/`` and uploaded once to ``.tfyarn/envs/`` on the cluster
(tfyarn/submission/layership.py). This module knows what an environment is made of and
writes an archive.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import site
import sys
import sysconfig
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from appmaster.common.settings import PYTHON
from tfyarn.submission.environments import JobEnvironmentError

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

# The interpreter's layer's bin/python. Its site-packages are the pyenv-site-* layers YARN
# unpacked beside ./pyenv (envlayers.py): listed once in TFYARN_ENV_LAYERS, which a .pth
# reads and child processes inherit; their CUDA wheels' nvidia/*/lib on LD_LIBRARY_PATH,
# where the frameworks' run paths ($ORIGIN/../nvidia) would find them in one site-packages.
WRAPPER = """#!/bin/sh
# tfyarn's packed Python environment: its own interpreter and libpython, wherever unpacked.
here=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${{TFYARN_ENV_LAYERS+set}}" ]; then
  TFYARN_ENV_LAYERS=
  for layer in "$(cd "$(dirname "$0")/../.." && pwd)"/pyenv-site-*; do
    [ -d "$layer" ] && TFYARN_ENV_LAYERS="${{TFYARN_ENV_LAYERS:+$TFYARN_ENV_LAYERS:}}$layer"
  done
  export TFYARN_ENV_LAYERS
fi
libs="${{here%/bin}}/lib"
IFS=:
for layer in $TFYARN_ENV_LAYERS; do
  for lib in "$layer"/nvidia/*/lib; do [ -d "$lib" ] && libs="$libs:$lib"; done
done
unset IFS
LD_LIBRARY_PATH="$libs${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec "$here/{binary}" "$@"
"""

LAYERS_PTH = "_tfyarn_layers.pth"  # in the interpreter's layer's site-packages
# One line: site runs a .pth's lines that start with "import".
LAYERS_PTH_TEXT = ("import os, site; list(map(site.addsitedir, filter(None, os.environ.get("
                   "'TFYARN_ENV_LAYERS', '').split(os.pathsep))))\n")

Progress = Callable[[int, int], None]  # bytes done, bytes in all


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
        raise cannot_pack(f"the interpreter {interpreter} is not a file")
    stdlib = Path(sysconfig.get_path("stdlib"))
    if not (stdlib / "os.py").is_file():
        raise cannot_pack(f"no standard library at {stdlib} (no os.py there)")
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


def cannot_pack(reason: str) -> JobEnvironmentError:
    return JobEnvironmentError(
        f"cannot pack this Python environment ({sys.prefix}) for the cluster: {reason}.",
        hint=f'give an interpreter every node has ("{PYTHON.key}": "{PYTHON.example}" '
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
    raise cannot_pack(f"the interpreter links {name}, which is not in "
                       f"{sysconfig.get_config_var('LIBDIR')}")


def distributions(site_dirs: tuple[Path, ...] | list[Path]):
    return importlib.metadata.distributions(path=[str(p) for p in site_dirs])


def _direct_url(dist) -> dict:
    text = dist.read_text("direct_url.json")
    return json.loads(text) if text else {}


def dist_name(dist) -> str:
    return (dist.metadata["Name"] or "").lower().replace("_", "-")


def _editable_sources(site_dirs: list[Path]) -> tuple[dict[str, Path], set[Path]]:
    """Editable installs: each import name with its source path (a package directory or a
    module file), and the files (import hooks, .pth) the pack leaves out. tfyarn's own
    distribution is left out whole."""
    editable: dict[str, Path] = {}
    dropped: set[Path] = set()
    for dist in distributions(site_dirs):
        own = dist_name(dist) in OWN_DISTRIBUTIONS
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
        raise cannot_pack(f"{dist.metadata['Name']} is installed editable through "
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
        raise cannot_pack(f"{dist.metadata['Name']} is installed editable from {path}, "
                           "which no longer exists (reinstall it, or uninstall it)")
    return path


def sha256_bytes(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


# ---------------------------------------------------------------- the pack


def walk(path: Path, arcname: str, skip: frozenset[str] = frozenset(),
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
            if file in dropped or (editable and name.endswith(_NEVER[1])) or \
                    _compiled_copy_of(file, dropped):
                continue
            yield file, os.path.normpath(f"{arcname}/{relative}/{name}")


def _compiled_copy_of(file: Path, dropped: frozenset[Path]) -> bool:
    """A left-out module's compiled copy (an editable finder's
    ``__pycache__/__editable___x_finder.cpython-312.pyc``), which Python writes beside it on
    its first import: it goes where its module goes."""
    # Cheapest tests first: walk() asks this of every file of the environment.
    return (bool(dropped) and file.name.endswith(".pyc") and file.parent.name == "__pycache__"
            and file.parent.parent / f"{file.name.split('.', 1)[0]}.py" in dropped)


def python_members(source: EnvSource) -> Iterator[tuple[Path, str]]:
    """The interpreter, libpython and the standard library, as a Python prefix."""
    yield source.interpreter, f"bin/python{source.version}"
    for library in source.shared_libraries:
        yield library, f"lib/{library.name}"
    skip = STDLIB_SKIPPED | {d.name for d in source.stdlib.glob("config-*")}
    yield from walk(source.stdlib, source.lib, skip, editable=False)
    if not source.dynload.is_relative_to(source.stdlib):
        yield from walk(source.dynload, f"{source.lib}/lib-dynload", editable=False)


def pack_members(source: EnvSource) -> Iterator[tuple[Path, str]]:
    """(file, name in the pack) for the whole environment in one prefix; the first of a
    name wins. A conda env's layer (envlayers.py), and what tests compare layers with."""
    site_packages = f"{source.lib}/site-packages"
    for path in source.editable.values():
        yield from walk(path, f"{site_packages}/{path.name}")
    if source.conda:  # its packages' cache is no part of the env
        yield from walk(source.prefix, ".", dropped=source.dropped, editable=False,
                        build_only=frozenset({"pkgs", *(f"{site_packages}/{d}"
                                                        for d in BUILD_ONLY)}))
        return
    yield from python_members(source)
    for directory in source.site_dirs:
        yield from walk(directory, site_packages, dropped=source.dropped, editable=False,
                        build_only=BUILD_ONLY)


def launchers(version: str, lib: str) -> list[tuple[str, bytes | None, int]]:
    """What the interpreter's layer adds: (name, content or None for the link bin/python3,
    mode): tfyarn's wrapper and the .pth that joins the site layers."""
    return [("bin/python", WRAPPER.format(binary=f"python{version}").encode(), 0o755),
            ("bin/python3", None, 0o777),
            (f"{lib}/site-packages/{LAYERS_PTH}", LAYERS_PTH_TEXT.encode(), 0o644)]


def pack(members: Iterable[tuple[Path, str]], archive: Path,
         added: list[tuple[str, bytes | None, int]] = (),
         progress: Progress = _no_progress) -> int:
    """Write ``members`` and the ``added`` files to ``archive`` (its suffix says the format:
    .tar.gz, .tar or .zip; all or nothing: a partial file has another name); returns its
    size in bytes."""
    taken, chosen = {name for name, _, _ in added}, []
    for file, arcname in members:  # the first of a name wins; a dangling link is nothing
        if arcname not in taken and file.is_file():
            taken.add(arcname)
            chosen.append((file, arcname))
    total = sum(f.stat().st_size for f, _ in chosen)
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    try:
        writer = _zip_writer if archive.name.endswith(".zip") else _tar_writer
        writer(partial, chosen, added, total, progress, archive.name.endswith(".tar"))
        os.replace(partial, archive)
    finally:
        partial.unlink(missing_ok=True)
    return archive.stat().st_size


def _tar_writer(path: Path, members: list[tuple[Path, str]],
                added: Iterable[tuple[str, bytes | None, int]], total: int,
                progress: Progress, plain: bool) -> None:
    done = 0
    mode, options = ("w", {}) if plain else ("w:gz", {"compresslevel": COMPRESS_LEVEL})
    with tarfile.open(path, mode, dereference=True, **options) as tar:
        for file, arcname in members:
            info = tar.gettarinfo(str(file), arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(file, "rb") as f:
                tar.addfile(info, f)
            done += info.size
            progress(done, total)
        for name, data, file_mode in added:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime = file_mode, 0
            if data is None:  # bin/python3: a link to the wrapper
                info.type, info.linkname = tarfile.SYMTYPE, "python"
                tar.addfile(info)
                continue
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _zip_writer(path: Path, members: list[tuple[Path, str]],
                added: Iterable[tuple[str, bytes | None, int]], total: int,
                progress: Progress, plain: bool) -> None:
    """A .zip, for the measure (docs/benchmarks.md, issue 37): deflate -1, modes kept, the
    link as a copy of the wrapper (Hadoop's unzip makes no links)."""
    done = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL) as z:
        for file, arcname in members:
            z.write(file, arcname)
            done += file.stat().st_size
            progress(done, total)
        wrapper = next((data for name, data, _ in added if name == "bin/python"), b"")
        for name, data, file_mode in added:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o755 if data is None else file_mode) << 16
            z.writestr(info, wrapper if data is None else data)


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
