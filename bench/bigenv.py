"""Issue 37, item 1: what shipping a GPU-size environment costs, phase by phase.

Run it with the interpreter of the environment to measure (a venv with
``tensorflow[and-cuda]`` or PyTorch from PyPI, and tfyarn's dependencies), the code under
test on PYTHONPATH, and a local cluster of its own that it starts fresh and removes::

    TFYARN_CLUSTER_DIR=/work/state-bigenv TFYARN_CLUSTER_PORT_OFFSET=900 \\
    PYTHONPATH=/path/to/tfyarn/checkout \\
      /work/bigenvs/tf-gpu/bin/python bench/bigenv.py --out bench/results/issue37-tf.json

It measures, through the code a submit runs (``PlannedJob.prepare``: pack, upload, or find
the env on the cluster) and a skein application whose containers only localize the job's
env files (``JobEnvironment.files()``) and run its interpreter once:

- first submit: the env part with nothing cached (local pack cache and HDFS empty), its
  lines timed (pack, upload), the packed bytes;
- first localization on 1 node, then on all 3 nodes at once (every node's cache emptied
  first): each node's LOCALIZING -> SCHEDULED from its NodeManager's log, and the
  application's submit -> finished;
- a later submit with nothing changed (median of 3) and its localization (from the cache);
- a one-package change (``--package``, pip-installed into the env, uninstalled at the end):
  the submit's env part, and the localization on 3 nodes that hold the previous env.

Never in CI: it needs GBs of disk (the pack, HDFS's copy, every node's unpacked copy) and
minutes. The state dir must not exist: the cluster is started there and removed at the end,
so every "first" is a first. The pack cache goes to a scratch XDG_CACHE_HOME, removed too.
Only the standard library and tfyarn are imported, so it runs from any checkout's PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

FINAL = ("FINISHED", "FAILED", "KILLED")
TRANSITION = re.compile(r"^(\S+ \S+) .*(container_\S+) transitioned from "
                        r"(NEW to LOCALIZING|LOCALIZING to SCHEDULED)")


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def du_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


class TimedEcho:
    """The submit's progress lines, each with its seconds since the phase began."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.lines: list[tuple[float, str]] = []

    def __call__(self, line: str) -> None:
        self.lines.append((round(time.monotonic() - self.started, 2), line))
        log(f"  | {line}")


# ---------------------------------------------------------------- the cluster


def tfyarn_cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from tfyarn.cli.main import main; sys.exit(main())",
            *args]


def cluster_up(layout) -> None:
    if layout.state_dir.exists():
        sys.exit(f"{layout.state_dir} exists: this bench starts a fresh cluster there and "
                 "removes it at the end; give an unused TFYARN_CLUSTER_DIR")
    log(f"starting a fresh local YARN in {layout.state_dir} (ports +{layout.port_offset})")
    subprocess.run(tfyarn_cli("cluster", "up"), check=True)
    from tfyarn.localyarn import cluster as localcluster

    os.environ.update(localcluster.client_environment(layout))


def cluster_remove(layout) -> None:
    subprocess.run(tfyarn_cli("cluster", "down"), check=False)
    shutil.rmtree(layout.state_dir, ignore_errors=True)
    log(f"cluster down, {layout.state_dir} removed")


def node_caches(layout, nm) -> list[Path]:
    """A node's localized resources: its public and every user's private file cache."""
    local = layout.node_dir(nm) / "local"
    return [*local.glob("filecache/*"), *local.glob("usercache/*/filecache/*")]


def evict(layout, nodes, keep: set[str] = frozenset()) -> None:
    """Empty the nodes' caches, as a host that comes back empty (the NodeManager localizes a
    resource again when its directory is gone); ``keep``: resource names left in place."""
    for nm in nodes:
        for entry in node_caches(layout, nm):
            if not any((entry / name).exists() for name in keep):
                shutil.rmtree(entry, ignore_errors=True)


# ---------------------------------------------------------------- localization


def localization_s(layout, nm, app_id: str) -> dict[str, float]:
    """Each task container of the application on this node: LOCALIZING -> SCHEDULED."""
    stamps: dict[str, dict[str, datetime]] = {}
    prefix = f"container_{app_id.removeprefix('application_')}_"
    for line in layout.daemon_log(nm.name).read_text(errors="replace").splitlines():
        if (match := TRANSITION.match(line)) and match.group(2).startswith(prefix):
            when = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f")
            stamps.setdefault(match.group(2), {})[match.group(3)] = when
    return {c: round((s["LOCALIZING to SCHEDULED"] - s["NEW to LOCALIZING"]).total_seconds(), 2)
            for c, s in stamps.items() if len(s) == 2 and not c.endswith("_000001")}


def localize(layout, environment, nodes, timeout_s: float) -> dict[str, object]:
    """A skein application with one container per node that localizes the env and runs its
    interpreter once; each node's localization seconds and the application's wall time."""
    import skein

    from tfyarn.hadoop.driver import skein_client
    from tfyarn.hadoop.jvm import QUICK_JVM_OPTIONS

    python = environment.master_python or "./pyenv/bin/python"
    services = {nm.name: skein.Service(
        resources=skein.Resources(memory=512, vcores=1), files=environment.files(),
        env=environment.task_env(), script=f"{python} -c 'import sys; print(sys.version)'",
        nodes=[nm.host], relax_locality=False, node_label=nm.partition or "",
        max_restarts=0) for nm in nodes}
    spec = skein.ApplicationSpec(
        name="tfyarn-bench-bigenv", queue="default", max_attempts=1, services=services,
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                            env={"JAVA_TOOL_OPTIONS": QUICK_JVM_OPTIONS}))
    started = time.monotonic()
    with skein_client() as client:
        app_id = client.submit(spec)
        while str((report := client.application_report(app_id)).state) not in FINAL:
            if time.monotonic() - started > timeout_s:
                client.kill_application(app_id)
                break
            time.sleep(1)
    wall = time.monotonic() - started
    per_node = {}
    for nm in nodes:
        seconds = list(localization_s(layout, nm, app_id).values())
        per_node[nm.name] = max(seconds) if seconds else None
    result = {"app": app_id, "final_status": str(report.final_status),
              "wall_s": round(wall, 2), "per_node_s": per_node,
              "max_s": max((s for s in per_node.values() if s is not None), default=None)}
    log(f"  localized on {', '.join(nm.name for nm in nodes)}: {result}")
    return result


# ---------------------------------------------------------------- submit's env part


def write_job(directory: Path) -> tuple[Path, Path]:
    """The smallest job: one worker; only its plan is made, it is never submitted."""
    (directory / "scripts").mkdir(parents=True)
    (directory / "scripts" / "task.py").write_text("print('never run')\n")
    resources = {"schema": "http://example.org/specification/v2.0.0", "metadata": {},
                 "global": {}, "components": {
                     "slider-appmaster": {"yarn.memory": "256", "yarn.vcores": "1"},
                     "worker": {"yarn.role.priority": "1", "yarn.component.instances": "1",
                                "yarn.memory": "512", "yarn.vcores": "1"}}}
    app_config = {"schema": "http://example.org/specification/v2.0.0", "metadata": {},
                  "global": {"site.global.user.scripts.dir": str(directory / "scripts"),
                             "site.global.user.scripts.entry": "task.py",
                             "site.global.app.name": "tfyarn-bench-bigenv"}}
    paths = directory / "resources.json", directory / "appConfig.json"
    for path, document in zip(paths, (resources, app_config), strict=True):
        path.write_text(json.dumps(document))
    return paths


def submit_part(job_files: tuple[Path, Path]) -> tuple[float, object, TimedEcho]:
    """What `tfyarn submit` does for the env: its seconds, the JobEnvironment, its lines."""
    from tfyarn.submission.api import plan_job

    planned = plan_job(*job_files)
    echo = TimedEcho()
    started = time.monotonic()
    environment = planned.prepare(echo)
    return round(time.monotonic() - started, 2), environment, echo


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "-q", *args], check=True)


def resource_names(environment) -> set[str]:
    return {str(f.source).rsplit("/", 1)[-1] for f in environment.files().values()}


# ---------------------------------------------------------------- the phases


def drop_local_packs() -> None:
    """The local pack cache emptied: neither the one-archive code nor the layers read it
    once the cluster has the pack, and each copy is GBs."""
    from tfyarn.submission import envpack

    shutil.rmtree(envpack.cache_dir(), ignore_errors=True)


def nodes_that_fit(nodes: list, need_each: int, margin: int = 15 * 10**9) -> list:
    """As many of ``nodes`` (one at least) as the disk holds a copy of the env for, with a
    margin: the local cluster's nodes share this machine's disk, a real cluster's do not."""
    free = shutil.disk_usage(Path.home()).free
    fit = max(1, min(len(nodes), (free - margin) // max(need_each, 1)))
    if fit < len(nodes):
        log(f"  only {fit} of {len(nodes)} nodes: {free / 1e9:.1f} GB free, "
            f"{need_each / 1e9:.1f} GB each")
    return nodes[:fit]


def measure(layout, job_files, package: str, timeout_s: float,
            step: Callable[[str], None]) -> dict[str, object]:
    results: dict[str, object] = {}
    nodes = list(layout.node_managers)
    from tfyarn.submission import envpack

    step("first submit (nothing cached)")
    seconds, environment, echo = submit_part(job_files)
    packs = [f.stat().st_size for f in envpack.cache_dir().rglob("*") if f.is_file()]
    results["first_submit"] = {"s": seconds, "lines": echo.lines,
                               "packed_bytes": sum(packs), "largest_pack_bytes": max(packs),
                               "resources": sorted(resource_names(environment))}
    drop_local_packs()
    # A node's copy: the unpacked env, and the largest archive as it comes in (Hadoop 3
    # unpacks from the stream; the headroom covers a copy of it).
    need_each = env_bytes() + max(packs)
    step("first localization, 1 node")
    results["localize_1_node"] = localize(layout, environment, nodes[:1], timeout_s)
    results.update(later_phases(layout, job_files, environment, need_each, package,
                                timeout_s, step))
    return results


def later_phases(layout, job_files, environment, need_each: int, package: str,
                 timeout_s: float, step: Callable[[str], None]) -> dict[str, object]:
    """From the env on the cluster on: its first localization on 3 nodes, a later submit,
    a one-package change."""
    from tfyarn.submission import envpack

    results: dict[str, object] = {}
    nodes = list(layout.node_managers)
    step("first localization, 3 nodes at once (every node's cache emptied)")
    evict(layout, nodes)
    spread = nodes_that_fit(nodes, need_each)  # these nodes for every later phase
    results["localize_3_nodes"] = localize(layout, environment, spread, timeout_s)
    step("later submit, nothing changed (3 times)")
    later = [submit_part(job_files) for _ in range(3)]
    results["later_submit"] = {"s": [s for s, _, _ in later],
                               "median_s": statistics.median(s for s, _, _ in later),
                               "lines": later[-1][2].lines}
    results["later_submit_parts"] = later_submit_parts()
    step("later localization, 3 nodes (from their caches)")
    results["later_localize_3_nodes"] = localize(layout, later[-1][1], spread, timeout_s)
    step(f"one-package change: pip install {package}")
    pip("install", "--no-deps", package)
    before = du_bytes(envpack.cache_dir())
    seconds, changed, echo = submit_part(job_files)
    results["one_package_submit"] = {"s": seconds, "lines": echo.lines,
                                     "packed_bytes_added": du_bytes(envpack.cache_dir()) - before,
                                     "resources": sorted(resource_names(changed))}
    drop_local_packs()
    # What the new job does not name goes (no timing depends on it): disk for the next copy.
    evict(layout, nodes, keep=resource_names(changed))
    step("one-package change: localization on 3 nodes holding the previous env")
    # What the nodes lack is what was packed now (all of it, or one piece): its download
    # and its unpacked copy, about twice as large (3.6 GB packed, 6.6 GB unpacked here).
    need_change = 3 * results["one_package_submit"]["packed_bytes_added"]
    results["one_package_localize_3_nodes"] = localize(
        layout, changed, nodes_that_fit(spread, need_change), timeout_s)
    return results


def later_submit_parts(rounds: int = 3) -> dict[str, object]:
    """Where a later submit's env part goes, each part alone (medians of ``rounds``): the
    layers' keys (RECORDs read), and the HDFS round trips ship() makes (a new client and
    the directory made, then on an open client: made, listed, its parents' modes read).
    {} for the one-archive code, which has no layers."""
    try:
        from appmaster.common.storage import RemoteDir
        from tfyarn.submission import envlayers, envpack, layership
        from tfyarn.submission.environments import cache_url
    except ImportError:
        return {}

    def timed(call: Callable[[], object]) -> float:
        started = time.monotonic()
        call()
        return time.monotonic() - started

    url = cache_url("").rstrip("/")
    remote = RemoteDir(url)
    parts = {"keys (split)": lambda: envlayers.split(envpack.current_env()),
             "hdfs client": lambda: RemoteDir(url).make(),
             "hdfs make": remote.make, "hdfs list": remote.list_files,
             "hdfs parents' modes": lambda: layership.searchable_by_all(remote)}
    found = {name: round(statistics.median(timed(call) for _ in range(rounds)), 3)
             for name, call in parts.items()}
    log(f"  later submit's parts (medians of {rounds}): {found}")
    return found


def summary(results: dict[str, object]) -> list[str]:
    """One line a phase: its seconds; a submit's lines with the second each came at."""
    lines = []
    for phase, value in results.items():
        if not isinstance(value, dict) or phase == "env":
            continue
        if phase == "later_submit_parts":
            lines.append(f"{phase:30} {value}")
            continue
        if "per_node_s" in value:
            lines.append(f"{phase:30} {value['max_s']} s (per node {value['per_node_s']}, "
                         f"app {value['wall_s']} s, {value['final_status']})")
            continue
        seconds = value.get("median_s", value.get("s"))
        size = value.get("packed_bytes", value.get("packed_bytes_added"))
        lines.append(f"{phase:30} {seconds} s" + (f", {size / 1e6:.0f} MB packed" if size
                                                   else ""))
        lines += [f"{'':32}at {at:7.2f} s: {line[:100]}" for at, line in value["lines"]]
    return lines


def site_packages_files() -> list[Path]:
    site_packages = Path(next(p for p in sys.path if p.endswith("site-packages")))
    return [f for f in site_packages.rglob("*") if f.is_file()]


def env_bytes() -> int:
    return sum(f.stat().st_size for f in site_packages_files())


def describe_env() -> dict[str, object]:
    files = site_packages_files()
    import tfyarn

    code = Path(tfyarn.__file__).resolve().parents[1]
    revision = subprocess.run(["git", "-C", str(code), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True).stdout.strip()
    return {"python": sys.executable, "prefix": sys.prefix,
            "site_packages_bytes": sum(f.stat().st_size for f in files),
            "site_packages_files": len(files), "code": str(code), "revision": revision,
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "load_1min": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--package", default="tabulate==0.9.0",
                        help="the one package installed for the change (uninstalled after)")
    parser.add_argument("--timeout", type=float, default=2400,
                        help="seconds one localization may take")
    parser.add_argument("--resume", action="store_true",
                        help="the cluster is up with the env on it (a run cut short): from "
                        "the first localization on 3 nodes on")
    args = parser.parse_args()
    from tfyarn.localyarn.layout import Layout, default_state_dir

    layout = Layout(default_state_dir())
    results: dict[str, object] = {"env": describe_env()}
    log(f"env {sys.prefix}: {results['env']}")
    if args.resume:
        from tfyarn.localyarn import cluster as localcluster

        os.environ.update(localcluster.client_environment(layout))
    else:
        cluster_up(layout)
    scratch = Path(tempfile.mkdtemp(prefix="tfyarn-bigenv-",
                                dir=os.environ.get("TFYARN_BENCH_SCRATCH")))
    os.environ["XDG_CACHE_HOME"] = str(scratch / "cache")  # after `up`: it finds Hadoop there
    started = time.monotonic()

    def step(what: str) -> None:
        log(f"[{time.monotonic() - started:6.0f} s] {what}")

    try:
        job_files = write_job(scratch / "job")
        if args.resume:
            _, environment, _ = submit_part(job_files)
            results.update(later_phases(layout, job_files, environment, 2 * env_bytes(),
                                        args.package, args.timeout, step))
        else:
            results.update(measure(layout, job_files, args.package, args.timeout, step))
    finally:
        results["disk_free_gb_at_end"] = round(shutil.disk_usage(scratch).free / 1e9, 1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1, default=str))
        log(f"results in {args.out}")
        name = re.split(r"[=<>!~ ]", args.package)[0]
        subprocess.run([sys.executable, "-m", "pip", "-q", "uninstall", "-y", name], check=False)
        cluster_remove(layout)
        shutil.rmtree(scratch, ignore_errors=True)
    print("\n".join(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
