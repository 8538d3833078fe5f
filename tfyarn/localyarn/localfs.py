"""The NodeManagers' local file system class (NioLocalFs.java), compiled once per source.

Hadoop sets a localized file's mode with libhadoop.so's chmod(2) where it has the library,
as every real cluster's nodes do, and forks a `chmod` per file where it has not. Maven
publishes no libhadoop.so, so a node of the local cluster took about 110 s to localize a
packed Python env (20,000 files) and every test run paid it once per node, and again for a
host that came back empty. NioLocalFs sets the same modes through java.nio: the same files,
the same permissions, at a real node's speed. Only the NodeManagers use it (their
core-site.xml); containers and clients keep Hadoop's own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.provision import ClusterError

CLASS_NAME = "tfyarn.localyarn.NioLocalFs"
SOURCE = "NioLocalFs.java"


def core_site() -> dict[str, str]:
    """What a NodeManager's core-site.xml adds: FileContext's file: is NioLocalFs."""
    return {"fs.AbstractFileSystem.file.impl": CLASS_NAME}


def source_text() -> str:
    return resources.files("tfyarn.localyarn").joinpath(SOURCE).read_text()


def class_dir(layout: Layout) -> Path:
    """Where this source's classes are (named by its hash: an edited source compiles anew)."""
    digest = hashlib.sha256(source_text().encode()).hexdigest()[:12]
    return layout.hadoop_home / f"tfyarn-localfs-{digest}"


def ensure_compiled(layout: Layout, java_home: Path) -> Path:
    """Compile NioLocalFs.java against the Hadoop jars once; later calls return at once."""
    target = class_dir(layout)
    if target.is_dir():
        return target
    javac = java_home / "bin" / "javac"
    if not javac.is_file():
        raise ClusterError(f"{java_home} has no javac: the local cluster compiles one small "
                           "class for its NodeManagers. Fix: install a JDK, not only a JRE "
                           "(Debian: apt-get install openjdk-17-jdk-headless).")
    # Built beside the target and renamed into place: two clusters starting at once each
    # build their own and one rename wins.
    scratch = Path(tempfile.mkdtemp(prefix=".localfs-", dir=layout.hadoop_home))
    try:
        source = scratch / SOURCE
        source.write_text(source_text())
        built = subprocess.run(
            [str(javac), "-nowarn", "-cp", f"{layout.lib_dir}/*", "-d", str(scratch / "classes"),
             str(source)], capture_output=True, text=True, timeout=300)
        if built.returncode != 0:
            raise ClusterError(f"javac could not compile {SOURCE}:\n{built.stderr[-2000:]}")
        try:
            os.rename(scratch / "classes", target)
        except OSError:
            if not target.is_dir():  # not another's rename that won
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target
