"""skein's AppMaster with tfyarn's patch: the jar tfyarn's package carries, and which
AppMaster a submit uses.

skein 0.8.2's Java AppMaster drops the allocate response's PreemptionMessage and has no way to
steer one request or to blacklist a host. skein-am.patch (beside this file) adds those, over
skein's key-value store, so skein's protocol and its Python client stay as released:

- ``tfyarn.preempt.<container>``: written by the AppMaster when YARN announces it will take the
  container back (value: YARN's container id and the time, in ms);
- ``tfyarn.placement.<service>``: written by the job, read before the service's next request
  (``nodes=h1,h2`` and ``relax=false``, a line each; empty: anywhere; ``antiaffinity=true``,
  or ``TFYARN_ANTI_AFFINITY`` in the service's env for the first requests: YARN's placement
  constraints, no two of the service's containers on one node);
- ``tfyarn.constraints-off.<service>``: written by the AppMaster where the ResourceManager's
  constraints handler is disabled (then the service is asked for as any other);
- ``tfyarn.blacklist``: written by the job, the hosts YARN must not give (one a line).

The patch also makes skein's driver set YARN's log aggregation context of the application
(include and exclude patterns, also for rolling aggregation) from the AppMaster's environment
(tfyarn/submission/appspec.py: TFYARN_LOG_INCLUDE_PATTERN, TFYARN_LOG_EXCLUDE_PATTERN).

The jar is built when tfyarn's package is built (tfyarn/amjarbuild.py, run by setup.py),
compiled against the Hadoop API of the oldest release tfyarn supports (HADOOP_API), so one jar
runs on every supported release; it lies in ``am/`` beside this file, named by everything it
is made of. A submit never builds or downloads it: where the package has none (built with
TFYARN_AM_BUILD=skip), skein's own jar serves, and tfyarn/submission/amneeds.py refuses the
jobs that ask for what only the patched one does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

SKEIN_VERSION = "0.8.2"
# The oldest Hadoop release tfyarn supports: compiled against its API, the jar uses no field
# or method that 3.3 lacks (one built against 3.5.0 dies on 3.3.6 with NoSuchFieldError);
# pre-flight refuses a cluster of an older line (runs_on).
HADOOP_API = "3.3.6"
PATCH = "skein-am.patch"
RECIPE = "amjarbuild.py"  # in the tfyarn package: the build, part of the jar's name
BUNDLED_DIR = Path(__file__).resolve().parent / "am"  # the package's, made by its build
OFF_ENV = "TFYARN_STOCK_SKEIN_AM"  # set: skein's own AppMaster (to compare)
REBUILD_FIX = ("install tfyarn from a wheel built with a JDK and Maven (`pip wheel .` runs "
               "`python -m tfyarn.amjarbuild`, which puts the jar in the package), or, in a "
               "checkout, run `python -m tfyarn.amjarbuild` once")


def release(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a version such as 3.4.3, 3.3.6-SNAPSHOT or a vendor's
    3.1.1.7.1.7.1000-141; a version that names no numbers counts as the newest (a build of
    trunk, say)."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if match is None:
        return (99, 0, 0)
    major, minor, patch = match.groups()
    return (int(major), int(minor), int(patch or 0))


def oldest_line() -> str:
    """The oldest release line tfyarn supports, "3.3": HADOOP_API's."""
    return ".".join(map(str, release(HADOOP_API)[:2]))


def runs_on(version: str) -> bool:
    """Whether the jar runs on a cluster of Hadoop ``version``: HADOOP_API's line or later."""
    return release(version)[:2] >= release(HADOOP_API)[:2]


def skein_jar() -> Path:
    """skein's own jar, found without importing skein (the CLI's help imports neither)."""
    spec = importlib.util.find_spec("skein")
    assert spec is not None and spec.origin is not None, "skein is a dependency"
    return Path(spec.origin).parent / "java" / "skein.jar"


def patch_text() -> str:
    return resources.files("tfyarn.hadoop").joinpath(PATCH).read_text()


def recipe_text() -> str:
    """The build's own source (tfyarn/amjarbuild.py: what it fetches and checks, how it
    patches, compiles and packs), read as text: it is a floor above, never imported here."""
    return resources.files("tfyarn").joinpath(RECIPE).read_text()


def jar_name() -> str:
    """Named by what it is made of: skein's release, the patch and the build's recipe (one
    digest of their texts, the same on every machine), the Hadoop API it was compiled
    against; a jar of other makings is never taken for it."""
    made_of = "\0".join((patch_text(), recipe_text()))
    digest = hashlib.sha256(made_of.encode()).hexdigest()[:12]
    return f"skein-{SKEIN_VERSION}-tfyarn-{digest}-hadoop-{HADOOP_API}.jar"


@dataclass(frozen=True)
class AppMasterJar:
    """The jar skein's driver starts from and uploads as the AppMaster's, and why that one."""

    path: Path
    patched: bool
    why_stock: str = ""  # skein's own: why, and how to have the patched one
    fix: str = ""

    def describe(self) -> str:
        if self.patched:
            return f"tfyarn's patched skein AppMaster ({self.path.name})"
        return f"skein's stock AppMaster ({self.why_stock})"


def chosen() -> AppMasterJar:
    """The package's patched jar, or skein's own and why."""
    if os.environ.get(OFF_ENV):
        return AppMasterJar(skein_jar(), False, f"{OFF_ENV} is set", f"unset {OFF_ENV}")
    bundled = BUNDLED_DIR / jar_name()
    if bundled.is_file():
        return AppMasterJar(bundled, True)
    # A checkout's jar of other makings: its patch or recipe was edited since it was built.
    older = sorted(p.name for p in BUNDLED_DIR.glob(f"skein-{SKEIN_VERSION}-tfyarn-*.jar"))
    why = (f"{BUNDLED_DIR} holds {', '.join(older)}, built from another patch or build "
           f"recipe than this tfyarn's, which names {bundled.name}" if older else
           f"this tfyarn was built without it: no {bundled.name} in {BUNDLED_DIR}")
    return AppMasterJar(skein_jar(), False, why, REBUILD_FIX)


def use_patched_jar() -> Path:
    """Point skein (its driver, hence its AppMaster) at the chosen jar; returns it."""
    import skein.core  # its driver and the AppMaster's upload read this name

    jar = chosen().path
    skein.core._SKEIN_JAR = str(jar)
    return jar


def in_use() -> str:
    """The jar skein's driver starts from (and uploads for the AppMaster)."""
    import skein.core

    return skein.core._SKEIN_JAR
