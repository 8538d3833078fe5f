"""Issue 26: what shipping the submitting interpreter's environment costs, on the local YARN.

For the environment running this script (the project's .venv with TensorFlow):

- the key (what every submit computes): seconds, median of 5;
- a first submit's part: pack seconds and bytes (into a temporary file, not the cache),
  upload seconds (to a name of its own in the env cache, removed at the end);
- a later submit's part: key plus the check that the cluster has it (`ship_this_env` with
  the env cached), median of 5: what a job adds over one with `site.global.python`;
- localization on one node: a skein application with one container on the first
  NodeManager, localizing that upload, twice: the node's first copy, then from its cache
  (the NodeManager's LOCALIZING -> SCHEDULED, from its log);
- venv-pack by hand on the same env (`--python-prefix /usr`), if installed: seconds, bytes.

    python -m bench.shipped_env [--out bench/results/issue26.json] [--no-venv-pack]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench.common import REPO, log
from tfyarn.localyarn.layout import Layout, default_state_dir
from tfyarn.submission import environments, envpack, jobenv


def timed(call) -> tuple[float, object]:
    started = time.monotonic()
    result = call()
    return time.monotonic() - started, result


def localization_s(layout: Layout, nm_name: str, app_id: str) -> float:
    """LOCALIZING -> SCHEDULED of the application's one task container, from the NM's log."""
    log_file = layout.daemon_log(nm_name)
    stamps = {}
    container = f"container_{app_id.removeprefix('application_')}_01_000002"
    pattern = re.compile(rf"^(\S+ \S+) .*{container} transitioned from "
                         r"(NEW to LOCALIZING|LOCALIZING to SCHEDULED)")
    for line in log_file.read_text(errors="replace").splitlines():
        if match := pattern.match(line):
            stamps[match.group(2)] = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f")
    return (stamps["LOCALIZING to SCHEDULED"] - stamps["NEW to LOCALIZING"]).total_seconds()


def localize_once(layout: Layout, url: str) -> float:
    import skein

    from tfyarn.hadoop.driver import skein_client
    from tfyarn.hadoop.jvm import QUICK_JVM_OPTIONS

    nm = next(n for n in layout.node_managers if not n.partition)
    spec = skein.ApplicationSpec(
        name="tfyarn-bench-localize", queue="default", max_attempts=1,
        services={"one": skein.Service(
            resources=skein.Resources(memory=256, vcores=1), script="./pyenv/bin/python -V",
            files={environments.ENV_DIR: environments.env_file(url)}, nodes=[nm.host],
            relax_locality=False, max_restarts=0)},
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                            env={"JAVA_TOOL_OPTIONS": QUICK_JVM_OPTIONS}))
    with skein_client() as client:
        app_id = client.submit(spec)
        while str(client.application_report(app_id).state) not in ("FINISHED", "FAILED",
                                                                     "KILLED"):
            time.sleep(1)
    return localization_s(layout, nm.name, app_id)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/issue26.json")
    parser.add_argument("--no-venv-pack", action="store_true")
    args = parser.parse_args()
    layout = Layout(default_state_dir())
    source = envpack.current_env()
    keys = [timed(lambda: envpack.env_key(envpack.current_env()))[0] for _ in range(5)]
    results: dict[str, object] = {"env": str(source.prefix), "key_s": statistics.median(keys)}
    jobenv.ship_this_env(echo=log)  # the cache's own copy, for the later-submit figure
    later = [timed(lambda: jobenv.ship_this_env(echo=lambda _: None))[0] for _ in range(5)]
    results["later_submit_s"] = statistics.median(later)
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "env.tar.gz"
        results["pack_s"], results["pack_bytes"] = timed(lambda: envpack.pack(source, archive))
        results["pack_members"] = sum(1 for _ in envpack.pack_members(source))
        url = environments.cache_url(f"env-bench-{int(time.time())}.tar.gz")
        results["upload_s"], _ = timed(lambda: environments.upload_once(archive, url))
        try:
            results["localize_first_s"] = localize_once(layout, url)
            results["localize_later_s"] = localize_once(layout, url)
        finally:
            from appmaster.storage import RemoteDir

            directory, name = url.rsplit("/", 1)
            RemoteDir(directory).delete(name)
        venv_pack = shutil.which("venv-pack", path=str(Path(sys.executable).parent))
        if venv_pack and not args.no_venv_pack:
            by_hand = Path(scratch) / "venv-pack.tar.gz"
            results["venv_pack_s"], _ = timed(lambda: subprocess.run(
                [venv_pack, "-p", sys.prefix, "-o", str(by_hand), "--python-prefix", "/usr",
                 "-q"], check=True))
            results["venv_pack_bytes"] = by_hand.stat().st_size
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    for name, value in results.items():
        print(f"{name:20} {value:.3f}" if isinstance(value, float) else f"{name:20} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
