"""Experiment 5: HDFS and many hosts. What keeping a task's work dir on HDFS costs.

- mirror: a fake TensorFlow checkpoint of each size (``model.ckpt-N.index``,
  ``.data-00000-of-00001``, ``.meta`` and the ``checkpoint`` state file, in ``checkpoints/``)
  in a fresh local dir; one ``WorkDirMirror.sync()`` (the first upload), then one with nothing
  changed. Wall time, MB/s, this process's CPU seconds (getrusage: hdfs-native's threads are
  in-process) and the NameNode's and DataNode's CPU seconds meanwhile.
- restore: ``WorkDirMirror.restore()`` of that HDFS dir into an empty local dir; and one
  100-byte file put alone (``RemoteDir.write_bytes``): HDFS's cost per file.
- rss: a fresh process that imports only appmaster.agent.mirror and hdfs_native, then saves a new
  10 MB checkpoint and syncs it every second (as a chief saving every second would, the last
  5 kept): its VmRSS/VmHWM after the imports and at the end (/proc/self/status).
- cluster (``--cluster-cost``): `tfyarn cluster up` from an empty state dir (the jars cached),
  where its time went, the RSS of every daemon idle and after the seed job (`tfyarn submit
  --wait`, from the repo root), and the peak RSS of that job's agents (the chief's mirrors)
  and AppMaster. The cluster is stopped at the end (unless ``--keep-cluster``).

Medians of ``--runs``; nothing is asserted. Every HDFS dir it writes is removed.

    python -m bench.hdfs_mirror [--sizes 1,10,100,500] [--runs 3]     # on the running cluster
    TFYARN_CLUSTER_DIR=/tmp/c TFYARN_CLUSTER_PORT_OFFSET=1200 python -m bench.hdfs_mirror \\
        --cluster-cost [--keep-cluster]                               # a throwaway cluster
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only what a mirroring task imports, at the top: the RSS child is this module too.
from appmaster.agent.mirror import STATE_FILE, WorkDirMirror
from appmaster.common.storage import RemoteDir

if TYPE_CHECKING:
    from bench.cluster import Cluster

MB = 2**20
KEEP = 5  # TensorFlow's Saver keeps the last 5 checkpoints by default
RSS_SIZE_MB = 10
CHECKPOINT_DIR = "checkpoints"
BLOCK = os.urandom(MB)  # incompressible, and cheap to write many times


# ---------------------------------------------------------------- a fake checkpoint


def write_checkpoint(work: Path, step: int, size_mb: float) -> int:
    """A TF-shaped checkpoint of about ``size_mb`` MB (data, index, meta), then the state file
    naming it and the KEEP - 1 before it, older ones deleted (TF's order); returns its bytes."""
    directory = work / CHECKPOINT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    prefix = f"model.ckpt-{step}"
    data_bytes = int(size_mb * MB)
    with open(directory / f"{prefix}.data-00000-of-00001", "wb") as f:
        for _ in range(data_bytes // MB):
            f.write(BLOCK)
        f.write(BLOCK[:data_bytes % MB])
    (directory / f"{prefix}.index").write_bytes(BLOCK[:4096])
    (directory / f"{prefix}.meta").write_bytes(BLOCK[:65536])
    steps = sorted(int(p.name.split("-")[-1].split(".")[0])
                   for p in directory.glob("model.ckpt-*.index"))
    kept = steps[-KEEP:]
    for old in steps[:-KEEP]:
        for path in directory.glob(f"model.ckpt-{old}.*"):
            path.unlink()
    state = f'model_checkpoint_path: "model.ckpt-{step}"\n' + "".join(
        f'all_model_checkpoint_paths: "model.ckpt-{s}"\n' for s in kept)
    (directory / STATE_FILE).write_text(state)
    return data_bytes + 4096 + 65536


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def own_memory() -> dict[str, int]:
    """VmRSS, VmHWM of this process, kB (not bench.processes.proc_usage: the RSS child must
    not import the bench's modules and the tfyarn client behind them)."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
                  if ":" in line)
    return {key: int(status[key].split()[0]) for key in ("VmRSS", "VmHWM")}


# ---------------------------------------------------------------- the RSS child


def rss_child(url: str, seconds: float, size_mb: float, work: Path) -> dict[str, Any]:
    """Runs in a fresh process: a new checkpoint and a sync every second."""
    import hdfs_native  # noqa: F401  (RemoteDir imports it on first use: counted from here)

    after_import = own_memory()
    mirror = WorkDirMirror(work, RemoteDir(url))
    t0, c0, step, syncs, sync_s = time.monotonic(), cpu_s(), 0, 0, []
    while time.monotonic() - t0 < seconds:
        started = time.monotonic()
        step += 10
        write_checkpoint(work, step, size_mb)
        s0 = time.monotonic()
        mirror.sync()
        sync_s.append(time.monotonic() - s0)
        syncs += 1
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    return {"after_import_kb": after_import, "end_kb": own_memory(), "syncs": syncs,
            "seconds": round(time.monotonic() - t0, 2), "cpu_s": round(cpu_s() - c0, 3),
            "bytes_up": mirror.status.bytes_up, "sync_s": [round(s, 3) for s in sync_s],
            "last_checkpoint": mirror.status.last_checkpoint}


# ---------------------------------------------------------------- the parent's measurements


def timed(call: Callable[[], Any], cluster: Cluster) -> dict[str, Any]:
    """Wall and CPU seconds of ``call``: this process's and the HDFS daemons'."""
    from bench.processes import proc_usage

    daemons = hdfs_daemon_pids(cluster)

    def daemon_cpu() -> dict[str, float]:
        return {name: (proc_usage(pid) or (0.0, 0, 0))[0] for name, pid in daemons.items()}

    d0, c0, t0 = daemon_cpu(), cpu_s(), time.monotonic()
    value = call()
    wall, cpu, d1 = time.monotonic() - t0, cpu_s() - c0, daemon_cpu()
    return {"wall_s": round(wall, 4), "client_cpu_s": round(cpu, 3), "value": value,
            **{f"{name}_cpu_s": round(d1[name] - d0[name], 3) for name in daemons}}


def hdfs_daemon_pids(cluster: Cluster) -> dict[str, int]:
    from tfyarn.localyarn import daemons

    return {name: pid for name in ("namenode", "datanode")
            if (pid := daemons.running_pid(cluster.layout, name)) is not None}


def remote_url(cluster: Cluster, what: str) -> str:
    return f"{cluster.layout.default_fs}/tmp/tfyarn-bench-mirror/{what}-{uuid.uuid4().hex[:8]}"


def remove_remote(url: str) -> None:
    remote = RemoteDir(url)
    remote.client.delete(remote.root, recursive=True)


def mirror_run(cluster: Cluster, scratch: Path, size_mb: float) -> dict[str, Any]:
    """One checkpoint of ``size_mb`` up (first sync, then an idle one) and down again."""
    work, restored = scratch / "up", scratch / "down"
    for path in (work, restored):
        shutil.rmtree(path, ignore_errors=True)
    total = write_checkpoint(work, 100, size_mb)
    url = remote_url(cluster, f"{size_mb:g}mb")
    try:
        up = WorkDirMirror(work, RemoteDir(url))
        first = timed(up.sync, cluster)
        idle = timed(up.sync, cluster)
        down = WorkDirMirror(restored, RemoteDir(url))
        restore = timed(down.restore, cluster)
        # One small file alone (the state file's way up): HDFS's per-file round trips.
        small = timed(lambda: up.remote.write_bytes("small", b"x" * 100), cluster)
    finally:
        remove_remote(url)
        for path in (work, restored):
            shutil.rmtree(path, ignore_errors=True)
    same = restore["value"] == f"{CHECKPOINT_DIR}/model.ckpt-100"
    record: dict[str, Any] = {"size_mb": size_mb, "bytes": total, "restored_ok": same}
    for name, result in (("sync_first", first), ("sync_idle", idle), ("restore", restore)):
        result.pop("value")
        result["mb_per_s"] = round(total / MB / result["wall_s"], 1)
        record[name] = result
    small.pop("value")
    record["small_file"] = small
    return record


def rss_run(cluster: Cluster, scratch: Path, seconds: float) -> dict[str, Any]:
    """The RSS child, in a fresh interpreter; its JSON answer."""
    from bench.common import REPO

    url = remote_url(cluster, "rss")
    work = scratch / "rss"
    shutil.rmtree(work, ignore_errors=True)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "bench.hdfs_mirror", "--rss-child", url, "--seconds",
             str(seconds), "--work", str(work)],
            capture_output=True, text=True, cwd=REPO, env=cluster.env, timeout=seconds + 300)
    finally:
        remove_remote(url)
        shutil.rmtree(work, ignore_errors=True)
    line = next((x for x in result.stdout.splitlines() if x.startswith("{")), None)
    if result.returncode != 0 or line is None:
        raise RuntimeError(f"the RSS child failed ({result.returncode}): {result.stderr[-2000:]}")
    return json.loads(line)


# ---------------------------------------------------------------- the cluster's cost


def daemon_memory(cluster: Cluster) -> dict[str, dict[str, float]]:
    """VmRSS and VmHWM (MB) and CPU seconds of every daemon of the cluster."""
    from bench.processes import proc_usage
    from tfyarn.localyarn import cluster as localcluster
    from tfyarn.localyarn import daemons

    out = {}
    for daemon in localcluster.daemons_of(cluster.layout):
        pid = daemons.running_pid(cluster.layout, daemon.name)
        usage = proc_usage(pid) if pid else None
        if usage:
            cpu, hwm, rss = usage
            out[daemon.name] = {"rss_mb": round(rss / 1024, 1), "hwm_mb": round(hwm / 1024, 1),
                                "cpu_s": round(cpu, 1), "heap_mb": daemon.heap_mb}
    return out


def cluster_up(layout_dir: Path) -> dict[str, Any]:
    """`tfyarn cluster up` from nothing, timed, and where its time went (pid files' mtimes)."""
    from bench.common import log

    if layout_dir.exists():
        raise SystemExit(f"--cluster-cost starts a cluster from nothing: {layout_dir} exists. "
                         "Point TFYARN_CLUSTER_DIR at an unused dir (and "
                         "TFYARN_CLUSTER_PORT_OFFSET at free ports).")
    log(f"tfyarn cluster up in {layout_dir}")
    t0 = time.time()
    result = subprocess.run([sys.executable, "-m", "tfyarn.cli.main", "cluster", "up"],
                            capture_output=True, text=True, timeout=600)
    t1 = time.time()
    if result.returncode != 0:
        raise RuntimeError(f"tfyarn cluster up failed:\n{result.stdout}\n{result.stderr}")
    said = (result.stdout + result.stderr).splitlines()  # the probe's line is on stderr
    probe = next((float(x.rsplit("(", 1)[1].split(" s)")[0]) for x in said
                  if x.startswith("Probe application")), None)
    run = layout_dir / "run"
    started = {p.stem: p.stat().st_mtime for p in run.glob("*.pid")}
    nms = [t for name, t in started.items() if name.startswith("nm")]
    phases = {
        "format_and_start_hdfs_rm_jvms": started["namenode"] - t0,
        "hdfs_ready_and_rm_started": min(nms) - started["namenode"],
        "nodemanagers_registered": (t1 - (probe or 0)) - min(nms),
        "probe_application": probe,
    }
    return {"wall_s": round(t1 - t0, 2), "said": said,
            "phases_s": {k: None if v is None else round(v, 2) for k, v in phases.items()}}


def container_processes(cluster: Cluster) -> dict[str, tuple[str, int]]:
    """Processes running in the cluster's containers: key -> (kind, pid); an agent's key is
    its skein container id (``chiefworker_0``)."""
    from tfyarn.localyarn.proctable import scan_processes

    state = str(cluster.layout.state_dir) + "/"
    found, agents, scripts = {}, {}, []
    for proc in scan_processes():
        if not proc.cwd.startswith(state) or "/appcache/" not in proc.cwd:
            continue
        if "appmaster.agent.main" in proc.argv:
            try:
                environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            name = next((e.split(b"=", 1)[1].decode() for e in environ
                         if e.startswith(b"SKEIN_CONTAINER_ID=")), str(proc.pid))
            found[f"agent {name}"] = ("agent", proc.pid)
            agents[proc.pid] = name
        elif "appmaster.master.main" in proc.argv:
            found["master.py"] = ("master", proc.pid)
        elif "com.anaconda.skein.ApplicationMaster" in proc.argv:
            found["skein AppMaster (Java)"] = ("java_am", proc.pid)
        elif len(proc.argv) > 1 and proc.argv[1].endswith(".py"):
            scripts.append(proc)
    for proc in scripts:  # the agent is the script's parent (its wrapper exec'd the script)
        owner = agents.get(proc.ppid, str(proc.pid))
        found[f"script {owner} {Path(proc.argv[1]).name}"] = ("script", proc.pid)
    return found


def seed_job(cluster: Cluster) -> dict[str, Any]:
    """The repo's seed job once (`tfyarn submit --wait`), every container process's peak RSS."""
    from bench.common import REPO, log
    from bench.processes import proc_usage

    log("the seed job (tfyarn submit --wait)")
    t0 = time.time()
    process = subprocess.Popen(
        [sys.executable, "-m", "tfyarn.cli.main", "submit", "--resources", "resources.json",
         "--app-config", "appConfig.json", "--wait"],
        cwd=REPO, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last: dict[str, tuple[str, float, int, int]] = {}
    while process.poll() is None:
        for key, (kind, pid) in container_processes(cluster).items():
            usage = proc_usage(pid)
            if usage:
                last[key] = (kind, *usage)
        time.sleep(0.2)
    output = process.stdout.read() if process.stdout else ""
    return {
        "rc": process.returncode, "wall_s": round(time.time() - t0, 2),
        "output_tail": output[-1500:],
        "processes": {key: {"kind": kind, "cpu_s": round(cpu, 2),
                            "hwm_mb": round(hwm / 1024, 1), "rss_mb": round(rss / 1024, 1)}
                      for key, (kind, cpu, hwm, rss) in sorted(last.items())},
    }


# ---------------------------------------------------------------- output


def medians(records: list[dict], part: str, key: str) -> float | None:
    from bench.stats import median

    return median(r[part][key] for r in records)


def tables(data: dict) -> str:
    from bench.stats import fmt, spread

    lines = []
    by_size: dict[float, list[dict]] = {}
    for record in data["mirror"]:
        if "error" not in record:
            by_size.setdefault(record["size_mb"], []).append(record)
    if by_size:
        lines += ["| checkpoint | first sync s (min–max) | MB/s | client CPU s | DataNode CPU s "
                  "| NameNode CPU s | idle sync s | idle client CPU s | restore s (min–max) "
                  "| MB/s | client CPU s | one 100-byte file s |", "|" + "---|" * 12]
        for size, records in sorted(by_size.items()):
            cells = [f"{size:g} MB (n={len(records)})"]
            for part, keys in (("sync_first", ("wall_s", "mb_per_s", "client_cpu_s",
                                               "datanode_cpu_s", "namenode_cpu_s")),
                               ("sync_idle", ("wall_s", "client_cpu_s")),
                               ("restore", ("wall_s", "mb_per_s", "client_cpu_s")),
                               ("small_file", ("wall_s",))):
                for key in keys:
                    value = medians(records, part, key)
                    precise = key.endswith("cpu_s") or part in ("sync_idle", "small_file")
                    cell = fmt(value, 3 if precise else 1 if key == "mb_per_s" else 2)
                    if key == "wall_s" and part in ("sync_first", "restore"):
                        low, high = spread(r[part][key] for r in records) or (0, 0)
                        cell += f" ({low:.2f}–{high:.2f})"
                    cells.append(cell)
            lines.append("| " + " | ".join(cells) + " |")
    if rss := data.get("rss"):
        if "error" in rss:
            lines.append(f"\nRSS child failed: {rss['error']}")
        else:
            syncs = sorted(rss["sync_s"])
            lines.append(
                f"\nMirroring process ({rss['syncs']} syncs of a new {RSS_SIZE_MB} MB checkpoint "
                f"in {rss['seconds']} s, sync median {syncs[len(syncs) // 2]:.3f} s, max "
                f"{syncs[-1]:.3f} s, {rss['cpu_s']} CPU s): VmRSS "
                f"{rss['after_import_kb']['VmRSS'] / 1024:.1f} MB after the imports, "
                f"{rss['end_kb']['VmRSS'] / 1024:.1f} MB at the end, VmHWM "
                f"{rss['end_kb']['VmHWM'] / 1024:.1f} MB")
    if cost := data.get("cluster"):
        up = cost["up"]
        lines.append(f"\n`tfyarn cluster up` from nothing: {up['wall_s']} s ({up['phases_s']})")
        lines += ["", "| daemon | heap (-Xmx) MB | VmRSS idle MB | VmRSS after the seed job MB "
                  "| VmHWM MB |", "|---|---|---|---|---|"]
        idle, after = cost["daemons_idle"], cost.get("daemons_after_job", {})
        for name, values in idle.items():
            later = after.get(name, {})
            lines.append(f"| {name} | {values['heap_mb']} | {values['rss_mb']} | "
                         f"{later.get('rss_mb', '-')} | {later.get('hwm_mb', values['hwm_mb'])} |")
        totals = [sum(v["rss_mb"] for v in d.values()) for d in (idle, after) if d]
        lines.append(f"| all | | {totals[0]:.0f} | "
                     f"{totals[1] if len(totals) > 1 else 0:.0f} | |")
        if job := cost.get("seed_job"):
            lines += ["", f"Seed job (rc {job['rc']}, {job['wall_s']} s): peak RSS per process",
                      "", "| process | VmHWM MB | CPU s |", "|---|---|---|"]
            lines += [f"| {key} | {p['hwm_mb']} | {p['cpu_s']} |"
                      for key, p in job["processes"].items()]
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,100,500", help="checkpoint sizes, MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rss-seconds", type=float, default=15.0)
    parser.add_argument("--cluster-cost", action="store_true",
                        help="first start the cluster of TFYARN_CLUSTER_DIR from nothing and "
                             "measure it; stop it at the end (unless --keep-cluster)")
    parser.add_argument("--keep-cluster", action="store_true",
                        help="leave the cluster --cluster-cost started running")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--rss-child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=15.0, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.rss_child:
        print(json.dumps(rss_child(opts.rss_child, opts.seconds, RSS_SIZE_MB, opts.work)))
        return 0

    # Imported here, not at the top: the RSS child holds only what a mirroring task holds.
    from bench.cluster import Cluster
    from bench.common import RESULTS, SCRATCH, log
    from bench.results import machine_info, save
    from tfyarn.localyarn import cluster as localcluster
    from tfyarn.localyarn.layout import Layout, default_state_dir

    out = (opts.out or RESULTS) / "hdfs_mirror.json"
    scratch = SCRATCH / "hdfs_mirror"
    data: dict[str, Any] = {"experiment": "hdfs_mirror", "machine": machine_info(),
                            "runs_per_size": opts.runs, "mirror": []}
    started_here = False
    try:
        if opts.cluster_cost:
            up = cluster_up(default_state_dir())
            started_here = True
            cluster = Cluster.default()
            data["cluster"] = {"up": up, "nodes": len(cluster.node_managers())}
            time.sleep(5)  # what `up` left running settles (the probe's containers end)
            data["cluster"]["daemons_idle"] = daemon_memory(cluster)
            save(out, data)
        else:
            cluster = Cluster.default()
        data["default_fs"] = cluster.layout.default_fs
        if opts.cluster_cost:
            data["cluster"]["seed_job"] = seed_job(cluster)
            time.sleep(5)
            data["cluster"]["daemons_after_job"] = daemon_memory(cluster)
            save(out, data)
        sizes = [float(s) for s in opts.sizes.split(",") if s]
        for rep in range(opts.runs):
            for size in sizes:
                log(f"mirror {size:g} MB, run {rep + 1}/{opts.runs} (load "
                    f"{os.getloadavg()[0]:.1f})")
                try:
                    record = mirror_run(cluster, scratch, size)
                except Exception as exc:  # one failed run must not lose the others
                    record = {"size_mb": size, "error": str(exc)[:2000]}
                record.update({"rep": rep, "load1": round(os.getloadavg()[0], 2),
                               "at": time.time()})
                log(f"  {json.dumps(record)}")
                data["mirror"].append(record)
                save(out, data)
        if opts.rss_seconds > 0:
            log(f"mirroring process: a new {RSS_SIZE_MB} MB checkpoint synced every second for "
                f"{opts.rss_seconds:g} s")
            try:
                data["rss"] = rss_run(cluster, scratch, opts.rss_seconds)
            except Exception as exc:
                data["rss"] = {"error": str(exc)[:2000]}
        data["machine"]["load_at_end"] = os.getloadavg()
        save(out, data)
        print(tables(data))
    finally:
        if started_here and not opts.keep_cluster:
            log("tfyarn cluster down")
            localcluster.down(Layout(default_state_dir()))
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
