"""Directories shipped to the job as one tar each, which YARN unpacks under the same name.

skein's driver copies a directory to HDFS file by file, one after the other, and each file
written waits for HDFS to complete its block (~0.4 s at worst, docs/benchmarks.md): the
AppMaster's code, the user's scripts and tfyarn.data were ~30 files before the job could be
accepted (issue 14). A tar is one file. YARN unpacks a `.tar` with the node's own `tar`,
which keeps modes, into a directory of the resource's name: the containers see the same
`app/`, `appmaster/` and `tfyarn/` as before. Links are stored as what they point to, as
skein's copy did: a link out of the directory still brings its file.

The tars go to HDFS once per content (`upload`), as packed envs do: a job whose code was
shipped before is submitted without copying it again (skein's driver uses a file already on
HDFS in place), and each node keeps the unpacked code for the user's later jobs. The cache
directory is the user's alone (0700), as skein's staging directory is: scripts are code
other users need not read.
"""

from __future__ import annotations

import tarfile
from collections.abc import Mapping
from pathlib import Path

from tfyarn.submission.environments import ensure_uploaded

SKIPPED = ("__pycache__", ".pyc")  # compiled files are the nodes' own business
CACHE_DIR = ".tfyarn/code"  # under the user's home directory on the default filesystem


def _keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if any(part == SKIPPED[0] for part in Path(info.name).parts) or info.name.endswith(
            SKIPPED[1]):
        return None
    info.uid = info.gid = 0  # the files are the job's user's once unpacked, whoever packed
    info.uname = info.gname = ""
    return info


def tar_directory(source: Path, into: Path, name: str) -> Path:
    """``source``'s contents (not the directory itself) as ``into/<name>.tar``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / f"{name}.tar"
    with tarfile.open(archive, "w", dereference=True) as tar:
        for child in sorted(source.iterdir()):
            tar.add(child, arcname=child.name, filter=_keep)
    return archive


def upload(packs: Mapping[str, Path]) -> dict[str, str]:
    """Each pack's URL on the default filesystem, copied there unless its content is."""
    return {name: ensure_uploaded(path, cache_dir=CACHE_DIR, private=True,
                                  what=f"the job's {name}/ code").url
            for name, path in packs.items()}
