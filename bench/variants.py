"""The code a benchmark runs: this checkout, or tfyarn before its fixes, each snapshotted
once per session. (Results recorded earlier also hold a "next" variant: the checkout with a
patch proposed during that run, which is not in the repository; it cannot be run again.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from bench.common import REPO, SCRATCH

# The code before the start-up and recovery fixes (skein asks for the first role at AM start,
# the master acts on the agent's exit at once, replacements take their old port, quick JVMs).
BEFORE_REV = os.environ.get("TFYARN_BENCH_BEFORE_REV", "5f049b7^")
VARIANTS = {
    "current": "tfyarn as it is in this checkout (working tree)",
    "before": f"tfyarn at {BEFORE_REV}, before the start-up and recovery fixes",
    "head": "tfyarn as committed (git HEAD), without the checkout's uncommitted changes",
}


@dataclass(frozen=True)
class Variant:
    """A snapshot of tfyarn/ and appmaster/ that `tfyarn submit` runs (first on PYTHONPATH).

    Every submit imports tfyarn from the snapshot, and ships its appmaster/ to the containers,
    so a variant stays the same code for a whole session even while the checkout changes.
    """

    name: str
    pythonpath: str | None = None
    info: dict = field(default_factory=dict)  # the commit, whether it was dirty

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath + (
                f":{base['PYTHONPATH']}" if base.get("PYTHONPATH") else "")
        return env


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def make_variant(name: str) -> Variant:
    """current | before | head, snapshotted once per session under SCRATCH/variants.

    With TFYARN_BENCH_REUSE_VARIANTS set (bench/run_all.sh sets it), an existing snapshot is
    reused, so that every experiment of one session runs the same code.
    """
    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r}: " + ", ".join(VARIANTS))
    root = SCRATCH / "variants" / name
    marker = root / ".variant.json"
    if os.environ.get("TFYARN_BENCH_REUSE_VARIANTS") and marker.is_file():
        return Variant(name, str(root), json.loads(marker.read_text()))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    if name in ("before", "head"):
        commit = _git("rev-parse", BEFORE_REV if name == "before" else "HEAD")
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "tfyarn",
                                  "appmaster"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
        info = {"commit": commit, "dirty": False}
    else:
        for package in ("tfyarn", "appmaster"):
            shutil.copytree(REPO / package, root / package,
                            ignore=shutil.ignore_patterns("__pycache__"))
        dirty = bool(_git("status", "--porcelain", "--", "tfyarn", "appmaster"))
        info = {"commit": _git("rev-parse", "HEAD"), "dirty": dirty}
    info["description"] = VARIANTS[name]
    marker.write_text(json.dumps(info))
    return Variant(name, str(root), info)
