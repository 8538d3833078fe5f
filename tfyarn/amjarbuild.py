"""Build tfyarn's patched skein AppMaster into the package: run by setup.py when tfyarn's wheel
(or an editable install) is built, or by a packager, once: `python -m tfyarn.amjarbuild`.

Needs a JDK 17 (javac) and Maven where it runs, never where tfyarn is used:
- skein's released source (sdist) and its wheel (for skein's shaded jar), fetched with
  `pip download`, so through pip's own configuration (the user's index, proxy,
  certificates), each checked by its SHA-256;
- skein's ApplicationMaster.java and Driver.java patched (tfyarn/hadoop/skein-am.patch),
  their imports moved to the packages skein's jar shades them into;
- compiled (Java 8 bytecode) against the Hadoop jars of the oldest supported release
  (tfyarn/hadoop/amjar.py's HADOOP_API), fetched by Maven as the local cluster fetches its
  own (tfyarn/localyarn/provision.py: the same directory, shared with a cluster of that
  release), and written over skein's classes in a copy of skein's jar.
The jar is kept in ~/.cache/tfyarn/amjar/ under its name (amjar.jar_name(): skein's release,
a digest of the patch and of this module's source, the Hadoop API), so a second build only
copies it, and a changed recipe builds anew.

TFYARN_AM_BUILD=skip builds none (a unit-test-only env without a JDK): such a tfyarn submits
with skein's stock AppMaster and refuses jobs that need the patched one.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from tfyarn.hadoop import amjar
from tfyarn.localyarn import provision
from tfyarn.localyarn.layout import cache_root

SDIST_SHA256 = "9d74eab09357fcbc008253dc3d99267583df17ebc32cdfa735d65a0c54eb1f31"
WHEEL_SHA256 = "c76287ead9e81bbb2882d8eb26f51ac72d0f08403cabfce77ae23debda0138aa"
PACKAGE_DIR = "java/src/main/java/com/anaconda/skein"
CLASSES = ("ApplicationMaster", "Driver")  # the patched sources, and their classes' names
# skein's pom relocates these packages under com.anaconda.skein.shaded
_SHADED = re.compile(r"^import (static )?(com\.google|io\.grpc|io\.netty)\.", re.M)
# skein 0.8.2's setup.py imports pkg_resources, which setuptools 81 dropped: pip download
# prepares the sdist's metadata in a build env of its own, which this pins.
_SDIST_BUILD_CONSTRAINT = "setuptools<81\n"
SKIP_ENV = "TFYARN_AM_BUILD"


class BuildError(RuntimeError):
    pass


def cached_jar() -> Path:
    return cache_root() / "amjar" / amjar.jar_name()


def ensure(into: Path = amjar.BUNDLED_DIR) -> Path | None:
    """The patched jar in ``into`` (built, or copied from the cache); other builds' jars
    there are removed. None: skipped (TFYARN_AM_BUILD=skip)."""
    if os.environ.get(SKIP_ENV) == "skip":
        print(f"tfyarn: {SKIP_ENV}=skip: no patched AppMaster in the package", file=sys.stderr)
        return None
    target = into / amjar.jar_name()
    into.mkdir(parents=True, exist_ok=True)
    for other in into.glob("skein-*.jar"):
        if other != target:
            other.unlink()
    if not target.is_file():
        cached = cached_jar()
        if not cached.is_file():
            build(cached)
        shutil.copyfile(cached, target)
    return target


def build(target: Path) -> None:
    """Download, patch, compile and write the jar to ``target`` (atomically)."""
    java_home = provision.find_java_home()
    compiler = java_home / "bin" / "javac"
    if not compiler.is_file():
        raise BuildError(f"no javac in {java_home}: a JDK, not only a JRE, builds the AppMaster")
    lib = provision.ensure_jars(cache_root() / f"hadoop-{amjar.HADOOP_API}", provision.ARTIFACTS,
                                amjar.HADOOP_API, f"Apache Hadoop {amjar.HADOOP_API}",
                                echo=lambda line: print(line, file=sys.stderr))
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        sdist = pip_download(scratch / "sdist", "--no-binary", SDIST_SHA256)
        wheel = pip_download(scratch / "wheel", "--only-binary", WHEEL_SHA256)
        stock = scratch / "skein.jar"
        with zipfile.ZipFile(wheel) as archive:
            stock.write_bytes(archive.read("skein/java/skein.jar"))
        sources = patched_sources(sdist.read_bytes(), scratch)
        classes = scratch / "classes"
        compiled = subprocess.run(
            [str(compiler), "-nowarn", "--release", "8", "-encoding", "UTF-8", "-d",
             str(classes), "-cp", f"{stock}:{lib}/*", *map(str, sources)],
            capture_output=True, text=True, timeout=600)
        if compiled.returncode != 0:
            raise BuildError(f"javac: {compiled.stderr[-3000:]}")
        built = scratch / target.name
        with zipfile.ZipFile(stock) as original, zipfile.ZipFile(built, "w") as out:
            for item in original.infolist():
                if not _patched_class(item.filename):  # skein's own of these go
                    out.writestr(item, original.read(item))
            for path in sorted((classes / "com/anaconda/skein").glob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(built, target)  # two builds at once: one rename wins, both whole
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def pip_download(directory: Path, kind: str, sha256: str) -> Path:
    """skein's sdist (``--no-binary``) or wheel (``--only-binary``), by pip with the user's
    configuration, checked against ``sha256``. Only skein's: the sdist's metadata is prepared
    with setuptools' wheel, not built from its source too."""
    directory.mkdir(parents=True)
    constraint = directory / "build-constraint.txt"
    constraint.write_text(_SDIST_BUILD_CONSTRAINT)
    env = dict(os.environ, PIP_CONSTRAINT=str(constraint), PIP_BUILD_CONSTRAINT=str(constraint))
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", f"skein=={amjar.SKEIN_VERSION}", "--no-deps",
         kind, "skein", "--disable-pip-version-check", "-q", "-d", str(directory)],
        capture_output=True, text=True, env=env, timeout=600)
    if fetched.returncode != 0:
        raise BuildError(f"pip download skein=={amjar.SKEIN_VERSION} {kind} skein failed "
                         f"(pip's index and proxy settings apply):\n{fetched.stderr[-2000:]}")
    found = [p for p in directory.iterdir() if p.name.startswith("skein-")]
    if len(found) != 1 or hashlib.sha256(found[0].read_bytes()).hexdigest() != sha256:
        raise BuildError(f"pip's skein {amjar.SKEIN_VERSION} ({[p.name for p in found]}) is "
                         f"not the released one: SHA-256 {sha256} expected")
    return found[0]


def patched_sources(sdist: bytes, scratch: Path) -> list[Path]:
    """skein's sources of CLASSES, patched, with their imports shaded, in ``scratch``."""
    tree = scratch / "src"
    (tree / PACKAGE_DIR).mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(sdist)) as tar:
        for name in CLASSES:
            member = tar.extractfile(f"skein-{amjar.SKEIN_VERSION}/{PACKAGE_DIR}/{name}.java")
            assert member is not None
            (tree / PACKAGE_DIR / f"{name}.java").write_bytes(member.read())
    applied = subprocess.run(["patch", "-p1", "--no-backup-if-mismatch", "-s"], cwd=tree,
                             input=amjar.patch_text(), capture_output=True, text=True)
    if applied.returncode != 0:
        raise BuildError(f"{amjar.PATCH} does not apply to skein {amjar.SKEIN_VERSION}: "
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


def _patched_class(name: str) -> bool:
    """``com/anaconda/skein/Driver$1.class`` and the like: a class of a patched source."""
    directory, _, file = name.rpartition("/")
    return (directory == "com/anaconda/skein" and file.endswith(".class")
            and file.removesuffix(".class").split("$")[0] in CLASSES)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tfyarn.amjarbuild", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--into", type=Path, default=amjar.BUNDLED_DIR,
                        help="the directory the jar goes to (default: the package's)")
    args = parser.parse_args(argv)
    try:
        made = ensure(args.into)
    except (BuildError, provision.ClusterError, OSError, subprocess.SubprocessError) as exc:
        sys.exit(f"tfyarn: the patched AppMaster could not be built: {exc}")
    if made is not None:
        print(made)


if __name__ == "__main__":
    main()
