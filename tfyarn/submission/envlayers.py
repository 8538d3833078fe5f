"""The submitting interpreter's environment cut into content-addressed layers (issue 37).

One pack of the whole environment meant that upgrading one package repacked, re-uploaded
and re-localized gigabytes on every node. So the environment goes as layers, each a YARN
archive of its own, keyed by what it holds:

- ``python``: the interpreter, libpython, the standard library, tfyarn's ``bin/python``
  wrapper and a ``.pth`` that joins the other layers; unpacked as ``./pyenv``.
- one layer per large distribution (``LARGE_BYTES`` installed or more: TensorFlow, each CUDA
  wheel, torch, jax...), unpacked as ``./pyenv-site-<name>``;
- ``site``: everything else of site-packages (small distributions, editable sources, what no
  distribution owns), unpacked as ``./pyenv-site-site``.

A site layer holds site-packages' entries as they are (``tensorflow/``,
``tensorflow_cpu-2.21.0.dist-info/``), so on a node it is a site directory of its own. The
wrapper lists the ``pyenv-site-*`` directories beside ``pyenv`` in ``TFYARN_ENV_LAYERS``
and the ``.pth`` adds each with ``site.addsitedir`` (their own ``.pth`` files apply), so a
job sees one environment. Distributions sharing a top-level directory that is a namespace
(``nvidia/``: an empty or no ``__init__.py``) keep separate layers: the empty
``__init__.py`` is left out, so Python joins the directory across layers (PEP 420), and the
wrapper puts each layer's ``nvidia/*/lib`` on LD_LIBRARY_PATH, which the frameworks'
``$ORIGIN/../nvidia`` run paths find in one site-packages. Distributions sharing anything
else (a module file, a package with code in its ``__init__.py``) travel together.

A key costs no walk of gigabytes: a distribution's is its name, version and its RECORD's
sha256 (RECORD lists every installed file with its hash); the interpreter's is its version
and its files' sizes and times; the ``site`` layer's adds the sources of editable installs
and the names of what no distribution owns. A conda env goes as one layer (``conda``): its
extension modules reach its lib/ through run paths relative to site-packages' place.
"""

from __future__ import annotations

import csv
import hashlib
import os
import platform
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tfyarn.submission import envpack
from tfyarn.submission.environments import ENV_DIR
from tfyarn.submission.envpack import EnvSource

LAYER_FORMAT = 1  # bump when a layer's layout changes: every key changes with it
LARGE_BYTES = 5_000_000  # a distribution this large (installed) is a layer of its own
LAYER_PREFIX = "layer-"
SITE_LINK_PREFIX = "pyenv-site-"  # a site layer's directory in a container, beside ./pyenv
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


@dataclass(frozen=True)
class Layer:
    """One piece of the environment: what it holds, its key, where it is unpacked."""

    label: str  # "python", "site", "conda" or a distribution's name
    key: str  # 32 hex digits, from its content's identity
    kind: str  # "python", "site" or "conda"
    # For a site layer: (path, name in the layer) of what it carries, a directory whole
    # (less BUILD_ONLY and the dropped files) or one file.
    entries: tuple[tuple[Path, str], ...] = ()
    editable: tuple[tuple[Path, str], ...] = ()  # editable sources: no __pycache__
    dists: tuple[str, ...] = ()  # the distributions in it, "name==version"

    @property
    def link(self) -> str:
        """Its directory in every container."""
        return ENV_DIR if self.kind in ("python", "conda") else (
            f"{SITE_LINK_PREFIX}{self.label}")

    def archive_name(self, suffix: str) -> str:
        return f"{LAYER_PREFIX}{self.label}-{self.key}{suffix}"


@dataclass
class _Dist:
    name: str
    version: str
    record_sha: str  # "" without a RECORD: its files are not known
    files: list[str] = field(default_factory=list)  # relative to its site dir
    sizes: list[int] = field(default_factory=list)  # of each file, by its RECORD


def _identity(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()


def _stat_identity(path: Path) -> str:
    stat = path.stat()
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def _name_version(dist) -> tuple[str, str | None]:
    """A distribution's name (normalized) and version from its METADATA's headers, without
    the email parser importlib.metadata uses (ten times slower, for 80 distributions)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    fields = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version"):
            fields.setdefault(key, value.strip())
    return fields.get("Name", "").lower().replace("_", "-"), fields.get("Version")


def _read_dist(dist) -> _Dist | None:
    name, version = _name_version(dist)
    if not name or version is None:
        raise envpack.cannot_pack(f"a distribution in {dist.locate_file('')} has no name or "
                                  "version in its METADATA (a broken install: reinstall it)")
    if name in envpack.OWN_DISTRIBUTIONS:
        return None
    record = dist.read_text("RECORD")
    found = _Dist(name, version, hashlib.sha256(record.encode()).hexdigest() if record else "")
    for line in (record or "").splitlines():
        # path,hash,size; a path with a comma comes quoted (csv), rarely
        row = next(csv.reader([line])) if line.startswith('"') else line.rsplit(",", 2)
        if not row or not row[0] or row[0].startswith(("..", "/")):  # bin/ scripts: no import's
            continue
        found.files.append(row[0])
        found.sizes.append(int(row[2]) if len(row) > 2 and row[2].isdigit() else 0)
    return found


def _carried_size(dist: _Dist, dropped: set[str]) -> int:
    """What a distribution brings to the pack: an editable one's import hooks are dropped
    (its sources go with the site layer), and tfyarn's own files."""
    return sum(size for file, size in zip(dist.files, dist.sizes, strict=True)
               if file not in dropped)


def _top(relative: str) -> str:
    return relative.split("/", 1)[0]


def _is_namespace(directory: Path) -> bool:
    """A directory several distributions share that Python can join across layers: no
    __init__.py, or an empty one (the CUDA wheels' nvidia/)."""
    init = directory / "__init__.py"
    return directory.is_dir() and (not init.exists() or init.stat().st_size == 0)


def _namespace_skipped(top: str, relative: str) -> bool:
    """The empty __init__.py of a shared namespace (and its compiled copy): left out."""
    rest = relative[len(top) + 1:]
    return rest == "__init__.py" or (rest.startswith("__pycache__/__init__."))


class _Groups:
    """Distributions that must travel together (union-find by name)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def join(self, names: list[str]) -> None:
        for other in names[1:]:
            self.parent[self.find(other)] = self.find(names[0])


def python_layer(source: EnvSource) -> Layer:
    """The interpreter, libpython and the standard library: keyed by their files' sizes and
    times (a reinstall of the same version changes them), never read."""
    parts = [LAYER_FORMAT, sys.version, platform.machine(), source.version,
             _stat_identity(source.interpreter), _stat_identity(source.stdlib / "os.py"),
             _stat_identity(source.stdlib), _stat_identity(source.dynload),
             *map(_stat_identity, source.shared_libraries), sorted(envpack.STDLIB_SKIPPED)]
    return Layer("python", _identity(*parts)[:32], "python")


def split(source: EnvSource, large_bytes: int = LARGE_BYTES) -> list[Layer]:
    """The environment's layers, the interpreter's first: quick (RECORDs and directory
    listings read, no file hashed but editable sources)."""
    python = python_layer(source)
    dists: dict[str, _Dist] = {}
    sizes: dict[str, int] = {}
    owners: dict[str, list[str]] = {}  # a top-level entry -> the distributions owning it
    tops: dict[str, Path] = {}  # a top-level entry -> where it is (the first site dir wins)
    for directory in source.site_dirs:
        dropped = {os.path.relpath(p, directory) for p in source.dropped
                   if p.is_relative_to(directory)}
        for dist in envpack.distributions([directory]):
            read = _read_dist(dist)
            if read is None or read.name in dists:
                continue
            dists[read.name] = read
            sizes[read.name] = _carried_size(read, dropped)
            for top in dict.fromkeys(_top(f) for f in read.files):
                if top not in tops:
                    owners.setdefault(top, []).append(read.name)
        for entry in sorted(os.listdir(directory)):
            path = directory / entry
            if entry not in tops and path not in source.dropped:
                tops[entry] = path
    groups = _Groups()
    for name in dists:
        groups.find(name)
    namespaces = set()
    for top, names in owners.items():
        if len(names) > 1 and top in tops and _is_namespace(tops[top]):
            namespaces.add(top)
        elif len(names) > 1:
            groups.join(names)
    members: dict[str, list[str]] = {}
    for name in sorted(dists):
        members.setdefault(groups.find(name), []).append(name)
    large = {root: names for root, names in members.items()
             if sum(sizes[n] for n in names) >= large_bytes
             and all(dists[n].record_sha for n in names)}
    layers = [python]
    for names in sorted(large.values()):
        entries = _entries(names, dists, owners, namespaces, tops, source)
        label = _UNSAFE.sub("-", names[0]) + (f"-and-{len(names) - 1}" if len(names) > 1 else "")
        key = _identity(LAYER_FORMAT, sorted(envpack.BUILD_ONLY),
                        *[(n, dists[n].version, dists[n].record_sha) for n in names])
        layers.append(Layer(label, key[:32], "site", tuple(entries),
                            dists=tuple(f"{n}=={dists[n].version}" for n in names)))
    small = [n for names in members.values() if names not in large.values() for n in names]
    layers.append(_site_layer(sorted(small), dists, owners, namespaces, tops, source))
    if source.conda:
        whole = _identity(LAYER_FORMAT, "conda", *(layer.key for layer in layers),
                          *sorted(p.name for p in (source.prefix / "conda-meta").glob("*.json")))
        return [Layer("conda", whole[:32], "conda",
                      dists=tuple(d for layer in layers for d in layer.dists))]
    return layers


def _entries(names: list[str], dists: dict[str, _Dist], owners: dict[str, list[str]],
             namespaces: set[str], tops: dict[str, Path],
             source: EnvSource) -> list[tuple[Path, str]]:
    """What a layer of these distributions carries: the top-level entries they alone own,
    whole, and their own files in shared namespace directories."""
    entries: list[tuple[Path, str]] = []
    for top, owned_by in owners.items():
        if top not in tops:
            continue
        if top in namespaces:
            base = tops[top].parent
            entries.extend((base / f, f) for n in names if n in owned_by
                           for f in dists[n].files
                           if _top(f) == top and not _namespace_skipped(top, f))
        elif set(owned_by) <= set(names) and tops[top] not in source.dropped:
            entries.append((tops[top], top))
    return sorted(entries, key=lambda e: e[1])


def _site_layer(small: list[str], dists: dict[str, _Dist], owners: dict[str, list[str]],
                namespaces: set[str], tops: dict[str, Path], source: EnvSource) -> Layer:
    """Everything of site-packages no large layer carries: the small distributions, what
    no distribution owns (``__pycache__`` of single modules among it), editable sources."""
    entries = _entries(small, dists, owners, namespaces, tops, source)
    unowned = [(path, top) for top, path in tops.items() if top not in owners]
    entries = sorted(entries + unowned, key=lambda e: e[1])
    editable = tuple((path, path.name) for _, path in sorted(source.editable.items()))
    digest = hashlib.sha256()
    for part in (LAYER_FORMAT, *[(n, dists[n].version, dists[n].record_sha) for n in small]):
        digest.update(f"{part}\n".encode())
    for path, name in unowned:  # nobody's: its name, size and time
        digest.update(f"unowned {name} {_stat_identity(path)}\n".encode())
    for path, name in editable:
        for file, arcname in envpack.walk(path, name):
            digest.update(f"{arcname} {envpack.sha256_bytes(file)}\n".encode())
    return Layer("site", digest.hexdigest()[:32], "site", tuple(entries), editable,
                 tuple(f"{n}=={dists[n].version}" for n in small))


def members(layer: Layer, source: EnvSource) -> Iterator[tuple[Path, str]]:
    """(file, name in the layer's archive) of everything it carries."""
    if layer.kind == "conda":
        yield from envpack.pack_members(source)
        return
    if layer.kind == "python":
        yield from envpack.python_members(source)
        return
    for path, arcname in layer.entries:
        build_only = frozenset(b.split("/", 1)[1] for b in envpack.BUILD_ONLY
                               if b.split("/", 1)[0] == arcname)
        yield from envpack.walk(path, arcname, dropped=source.dropped, editable=False,
                                build_only=build_only)
    for path, arcname in layer.editable:
        yield from envpack.walk(path, arcname)
