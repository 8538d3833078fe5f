"""Directories shipped as one tar (tfyarn/submission/codepack.py): what the container unpacks."""

from __future__ import annotations

import tarfile
from pathlib import Path

from tfyarn.submission.codepack import tar_directory


def test_contents_at_the_root_modes_kept_links_followed_caches_skipped(tmp_path: Path) -> None:
    source = tmp_path / "scripts"
    (source / "pkg" / "__pycache__").mkdir(parents=True)
    (source / "train.py").write_text("print('hi')\n")
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o755)
    (source / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (source / "pkg" / "stale.pyc").write_bytes(b"\0")
    outside = tmp_path / "shared.txt"
    outside.write_text("data\n")
    (source / "shared.txt").symlink_to(outside)

    archive = tar_directory(source, tmp_path / "packs", "app")
    assert archive.name == "app.tar"
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="tar")
    files = sorted(str(p.relative_to(unpacked)) for p in unpacked.rglob("*") if p.is_file())
    assert files == ["run.sh", "shared.txt", "train.py"]
    assert (unpacked / "run.sh").stat().st_mode & 0o777 == 0o755
    assert not (unpacked / "shared.txt").is_symlink()
    assert (unpacked / "shared.txt").read_text() == "data\n"
