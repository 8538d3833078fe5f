"""skein's AppMaster with tfyarn's patch: built once per machine from skein's released source.

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

The build: skein's sdist from PyPI (checked by its SHA-256), its ApplicationMaster.java and
Driver.java patched, their imports moved to the packages skein's jar shades them into, compiled
against skein's jar and the cluster's Hadoop jars (`yarn classpath`, as skein's driver finds
them), and written over their classes in a copy of skein's jar. The client submits with that
jar (the AppMaster's jar is the driver's); where it cannot be built (no javac, no PyPI),
skein's own jar serves and the notices are off.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)

SKEIN_VERSION = "0.8.2"
SDIST_URL = ("https://files.pythonhosted.org/packages/88/8f/"
             "d67552b164d419f4a56c844b04b3bc24c9f758ddb340fb0d358c703beaf7/skein-0.8.2.tar.gz")
SDIST_SHA256 = "9d74eab09357fcbc008253dc3d99267583df17ebc32cdfa735d65a0c54eb1f31"
PACKAGE_DIR = "java/src/main/java/com/anaconda/skein"
CLASSES = ("ApplicationMaster", "Driver")  # the patched sources, and their classes' names
PATCH = "skein-am.patch"
# skein's pom relocates these packages under com.anaconda.skein.shaded
_SHADED = re.compile(r"^import (static )?(com\.google|io\.grpc|io\.netty)\.", re.M)
OFF_ENV = "TFYARN_STOCK_SKEIN_AM"  # set: skein's own AppMaster (to compare)
RETRY_AFTER_S = 3600.0  # a failed build (no PyPI, no javac) is not tried by every command


class BuildError(RuntimeError):
    pass


def skein_jar() -> Path:
    """skein's own jar, found without importing skein (the CLI's help imports neither)."""
    spec = importlib.util.find_spec("skein")
    assert spec is not None and spec.origin is not None, "skein is a dependency"
    return Path(spec.origin).parent / "java" / "skein.jar"


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tfyarn" / "skein-am"


def patch_text() -> str:
    return resources.files("tfyarn.hadoop").joinpath(PATCH).read_text()


def jar_path() -> Path:
    """Named by the patch and skein's jar: either changed builds anew."""
    digest = hashlib.sha256(patch_text().encode() + skein_jar().read_bytes()).hexdigest()[:12]
    return cache_dir() / f"skein-{SKEIN_VERSION}-tfyarn-{digest}.jar"


def sdist() -> bytes:
    """skein's released source, fetched once and checked."""
    cached = cache_dir() / f"skein-{SKEIN_VERSION}.tar.gz"
    if cached.is_file():
        data = cached.read_bytes()
    else:
        with urllib.request.urlopen(SDIST_URL, timeout=60) as response:
            data = response.read()
    if hashlib.sha256(data).hexdigest() != SDIST_SHA256:
        cached.unlink(missing_ok=True)
        raise BuildError(f"skein's sdist from {SDIST_URL} is not the released one (SHA-256)")
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(data)
    return data


def patched_sources(scratch: Path) -> list[Path]:
    """skein's sources of CLASSES, patched, with their imports shaded, in ``scratch``."""
    tree = scratch / "src"
    (tree / PACKAGE_DIR).mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(sdist())) as tar:
        for name in CLASSES:
            member = tar.extractfile(f"skein-{SKEIN_VERSION}/{PACKAGE_DIR}/{name}.java")
            assert member is not None
            (tree / PACKAGE_DIR / f"{name}.java").write_bytes(member.read())
    applied = subprocess.run(["patch", "-p1", "--no-backup-if-mismatch", "-s"], cwd=tree,
                             input=patch_text(), capture_output=True, text=True)
    if applied.returncode != 0:
        raise BuildError(f"{PATCH} does not apply to skein {SKEIN_VERSION}: "
                         f"{applied.stdout}{applied.stderr}")
    sources = []
    for name in CLASSES:
        source = scratch / f"{name}.java"
        source.write_text(shaded((tree / PACKAGE_DIR / f"{name}.java").read_text()))
        sources.append(source)
    return sources


def shaded(java: str) -> str:
    """The source's imports of what skein's jar relocates, moved where it put them."""
    return _SHADED.sub(r"import \1com.anaconda.skein.shaded.\2.", java)


def hadoop_classpath() -> str:
    """The cluster's Hadoop jars, as skein's driver finds them."""
    yarn = shutil.which("yarn")
    if yarn is None:
        raise BuildError("`yarn` is not on PATH")
    out = subprocess.run([yarn, "classpath", "--glob"], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise BuildError(f"`yarn classpath --glob` failed: {out.stderr[-500:]}")
    return out.stdout.strip()


def javac() -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "javac") if home else shutil.which("javac")
    if not found or not Path(found).is_file():
        raise BuildError("no javac (JAVA_HOME/bin or PATH): a JDK, not only a JRE, builds it")
    return found


def build(classpath: str | None = None) -> Path:
    """The patched jar, built unless already there."""
    target = jar_path()
    if target.is_file():
        return target
    compiler, classpath = javac(), classpath or hadoop_classpath()  # before any download
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        sources = patched_sources(scratch)
        classes = scratch / "classes"
        compiled = subprocess.run(
            [compiler, "-nowarn", "--release", "8", "-encoding", "UTF-8", "-d", str(classes),
             "-cp", f"{skein_jar()}:{classpath}", *map(str, sources)],
            capture_output=True, text=True, timeout=600)
        if compiled.returncode != 0:
            raise BuildError(f"javac: {compiled.stderr[-3000:]}")
        built = scratch / target.name
        with zipfile.ZipFile(skein_jar()) as stock, zipfile.ZipFile(built, "w") as out:
            for item in stock.infolist():
                if not _patched_class(item.filename):  # skein's own of these go
                    out.writestr(item, stock.read(item))
            for path in sorted((classes / "com/anaconda/skein").glob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(built, target)  # two builds at once: one rename wins, both whole
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _patched_class(name: str) -> bool:
    """``com/anaconda/skein/Driver$1.class`` and the like: a class of a patched source."""
    directory, _, file = name.rpartition("/")
    return (directory == "com/anaconda/skein" and file.endswith(".class")
            and file.removesuffix(".class").split("$")[0] in CLASSES)


def use_patched_jar() -> Path:
    """Point skein (its driver, hence its AppMaster) at the patched jar, built if need be;
    skein's own jar where it cannot be (said once, with why). Returns the jar in use."""
    import skein.core  # its driver and the AppMaster's upload read this name

    if os.environ.get(OFF_ENV):
        return skein_jar()
    failed = jar_path().with_suffix(".failed")  # why the last build failed, and when
    try:
        if failed.is_file() and time.time() - failed.stat().st_mtime < RETRY_AFTER_S:
            raise BuildError(failed.read_text().strip())
        jar = build()
    except (BuildError, OSError, subprocess.SubprocessError) as exc:
        log.warning("skein's own AppMaster: tfyarn's patch could not be built (%s); YARN's "
                    "preemption notices and steered placement are off", exc)
        with contextlib.suppress(OSError):
            failed.parent.mkdir(parents=True, exist_ok=True)
            if not failed.is_file() or time.time() - failed.stat().st_mtime >= RETRY_AFTER_S:
                failed.write_text(f"{exc}\n")
        return skein_jar()
    skein.core._SKEIN_JAR = str(jar)
    return jar


def in_use() -> str:
    """The jar skein's driver starts from (and uploads for the AppMaster)."""
    import skein.core

    return skein.core._SKEIN_JAR


if __name__ == "__main__":  # build ahead: python -m tfyarn.hadoop.amjar
    try:
        print(build())
    except BuildError as exc:
        sys.exit(f"tfyarn: {exc}")
