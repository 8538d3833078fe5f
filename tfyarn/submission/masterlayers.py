"""Which of the shipped env's layers the AppMaster's container needs.

The AppMaster runs tfyarn's master (appmaster/master/) on skein and hdfs-native, never the
training frameworks. Given every layer, YARN localizes TensorFlow's, torch's and the CUDA
wheels' on the AppMaster's node too: 5.7 GB with torch, before the job can ask for its first
container on a node that has not held the env. So the AppMaster gets the interpreter, the
``site`` layer (the small distributions and tfyarn's own code) and the layers of what its
imports need, read from the installed distributions' requirements. A layer it is not given
is simply absent from its container: the env's wrapper joins only the layers present
(envpack.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from importlib import metadata

from tfyarn.submission.envlayers import Layer

# What appmaster/master/ and the modules below it import beyond the standard library.
MASTER_IMPORTS = ("skein", "hdfs-native")
ALWAYS = ("python", "conda", "site")  # the layers every container needs
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(requirements: Iterable[str]) -> list[str]:
    """The distributions these requirement lines name, less those only an extra asks for."""
    names = []
    for line in requirements:
        spec, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        if found := _NAME.match(spec.strip()):
            names.append(normalized(found.group()))
    return names


def needed_by_master(roots: Iterable[str] = MASTER_IMPORTS,
                     requires: Callable[[str], list[str] | None] = metadata.requires,
                     ) -> frozenset[str]:
    """The distributions the master's imports need, transitively (normalized names)."""
    needed: set[str] = set()
    pending = [normalized(root) for root in roots]
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        try:
            pending += requirement_names(requires(name) or ())
        except metadata.PackageNotFoundError:
            continue  # an optional one not installed: nothing of it to ship
    return frozenset(needed)


def for_master(layer: Layer, needed: frozenset[str]) -> bool:
    """Whether the AppMaster's container gets this layer."""
    return layer.label in ALWAYS or any(
        normalized(dist.partition("==")[0]) in needed for dist in layer.dists)
