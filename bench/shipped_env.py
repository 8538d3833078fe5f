"""Issues 26 and 37: what shipping the submitting interpreter's environment costs, on the
local YARN, as one pack (before issue 37) and in layers (after), in each archive format
YARN unpacks.

For the environment running this script (the project's .venv with TensorFlow):

- the layers' keys (what every submit computes) and a later submit's part (keys, one
  listing of the cluster's cache; the layers there already): seconds, medians of 5;
- for the whole env in one .tar.gz (before), and its layers as .tar.gz (gzip -1), .tar and
  .zip (deflate -1): pack seconds and bytes (into a scratch dir, not the cache), upload
  seconds (to a directory of their own on HDFS, removed at the end), and a node's first
  localization (a one-container skein application on the first NodeManager: its
  LOCALIZING -> SCHEDULED, from the NodeManager's log);
- a one-package change (a tiny distribution pip installs beside the env): what is packed
  and uploaded, in how long, and the node's localization with the other layers cached.

    python -m bench.shipped_env [--out bench/results/issue37.json] [--formats .tar.gz,.tar]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from bench.common import REPO, log
from tfyarn.localyarn.layout import Layout, default_state_dir
from tfyarn.submission import envlayers, envpack, layership
from tfyarn.submission.environments import ENV_DIR, cache_url, upload_once

FORMATS = (".tar.gz", ".tar", ".zip")


def timed(call) -> tuple[float, object]:
    started = time.monotonic()
    result = call()
    return time.monotonic() - started, result


def localization_s(layout: Layout, nm_name: str, app_id: str) -> float:
    """LOCALIZING -> SCHEDULED of the application's one task container, from the NM's log."""
    stamps = {}
    container = f"container_{app_id.removeprefix('application_')}_01_000002"
    pattern = re.compile(rf"^(\S+ \S+) .*{container} transitioned from "
                         r"(NEW to LOCALIZING|LOCALIZING to SCHEDULED)")
    for line in layout.daemon_log(nm_name).read_text(errors="replace").splitlines():
        if match := pattern.match(line):
            stamps[match.group(2)] = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f")
    return (stamps["LOCALIZING to SCHEDULED"] - stamps["NEW to LOCALIZING"]).total_seconds()


def localize_once(layout: Layout, files: dict) -> float:
    """A container on the first NodeManager with these files, running the env's python."""
    import skein

    from tfyarn.hadoop.driver import skein_client
    from tfyarn.hadoop.jvm import QUICK_JVM_OPTIONS

    nm = next(n for n in layout.node_managers if not n.partition)
    spec = skein.ApplicationSpec(
        name="tfyarn-bench-localize", queue="default", max_attempts=1,
        services={"one": skein.Service(
            resources=skein.Resources(memory=512, vcores=1),
            script=f"./{ENV_DIR}/bin/python -c 'import numpy, skein'", files=files,
            nodes=[nm.host], relax_locality=False, max_restarts=0)},
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                            env={"JAVA_TOOL_OPTIONS": QUICK_JVM_OPTIONS}))
    with skein_client() as client:
        app_id = client.submit(spec)
        while str((report := client.application_report(app_id)).state) not in (
                "FINISHED", "FAILED", "KILLED"):
            time.sleep(1)
    if str(report.final_status) != "SUCCEEDED":
        raise RuntimeError(f"{app_id}: {report.final_status}: {report.diagnostics}")
    return localization_s(layout, nm.name, app_id)


def archive_file(url: str):
    import skein

    return skein.File(url, type="archive", visibility="private")


def measure_format(layout: Layout, source: envpack.EnvSource, suffix: str,
                   scratch: Path, layered: bool) -> dict:
    """Pack, upload and a first localization of the env in one archive or in layers."""
    from appmaster.common.storage import RemoteDir

    directory = cache_url(f"bench-{uuid.uuid4().hex[:8]}")
    added = envpack.launchers(source.version, source.lib)
    if layered:
        pieces = [(layer.link, layer.archive_name(suffix), envlayers.members(layer, source),
                   added if layer.kind != "site" else []) for layer in envlayers.split(source)]
    else:
        pieces = [(ENV_DIR, f"env{suffix}", envpack.pack_members(source), added)]
    result: dict[str, object] = {"pieces": len(pieces), "pack_s": 0.0, "bytes": 0,
                                 "upload_s": 0.0}
    files = {}
    try:
        for link, name, members, extra in pieces:
            archive, url = scratch / name, f"{directory}/{name}"
            started = time.monotonic()
            result["bytes"] += envpack.pack(members, archive, extra)
            packed = time.monotonic()
            upload_once(archive, url)
            result["pack_s"] += packed - started
            result["upload_s"] += time.monotonic() - packed
            archive.unlink()
            files[link] = archive_file(url)
        log(f"{'layers' if layered else 'one pack'} {suffix}: packed {result['bytes']} bytes "
            f"in {result['pack_s']:.1f} s, uploaded in {result['upload_s']:.1f} s")
        result["localize_first_s"] = localize_once(layout, files)
        log(f"  first localization on a node: {result['localize_first_s']:.1f} s")
    finally:
        remote = RemoteDir(directory)
        for name in remote.list_files():
            remote.delete(name)
    return result


def one_package_change(layout: Layout, source: envpack.EnvSource, scratch: Path) -> dict:
    """A tiny distribution beside the env: what a submit then packs, uploads and a node
    localizes (the other layers in its cache since the env was shipped)."""
    sys.path.insert(0, str(REPO / "tests"))
    from test_env_layers_yarn import tiny_distribution

    layership.ship(source, echo=log)  # every layer there, and on the node after this:
    localize_once(layout, layership.ship(source, echo=lambda _: None).files())
    changed = replace(source, site_dirs=(*source.site_dirs, tiny_distribution(
        scratch, uuid.uuid4().hex)))
    seconds, shipped = timed(lambda: layership.ship(changed, echo=log))
    result = {"packed": list(shipped.packed), "uploaded": list(shipped.uploaded),
              "submit_s": seconds, "localize_s": localize_once(layout, shipped.files())}
    from appmaster.common.storage import RemoteDir

    for _, url, _ in shipped.layers:
        if url.rsplit("/", 1)[1].startswith("layer-site-"):
            directory, name = url.rsplit("/", 1)
            for old in (name, name + layership.RECORD_SUFFIX):
                RemoteDir(directory).delete(old)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/issue37.json")
    parser.add_argument("--formats", default=",".join(FORMATS))
    args = parser.parse_args()
    layout = Layout(default_state_dir())
    source = envpack.current_env()
    results: dict[str, object] = {"env": str(source.prefix)}
    splits = [timed(lambda: envlayers.split(envpack.current_env()))[0] for _ in range(5)]
    results["keys_s"] = statistics.median(splits)
    layership.ship(source, echo=log)  # the cluster's own copy, for the later-submit figure
    later = [timed(lambda: layership.ship(envpack.current_env(), echo=lambda _: None))[0]
             for _ in range(5)]
    results["later_submit_s"] = statistics.median(later)
    log(f"keys {results['keys_s']:.2f} s, a later submit {results['later_submit_s']:.2f} s")
    with tempfile.TemporaryDirectory() as scratch:
        results["one_pack_tar.gz"] = measure_format(layout, source, ".tar.gz", Path(scratch),
                                                    layered=False)
        for suffix in args.formats.split(","):
            results[f"layers_{suffix.lstrip('.')}"] = measure_format(
                layout, source, suffix, Path(scratch), layered=True)
        results["one_package_change"] = one_package_change(layout, source, Path(scratch))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
