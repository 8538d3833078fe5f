"""HDFS goes away in the middle of a job: the chief keeps saving on its own disk, tfyarn
says the mirror is failing, retries, and catches up once the NameNode is back. No state
file on HDFS ever names a missing file.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from jobtools import JobFiles, prepare_job, run_tfyarn, wait_for, wait_for_hdfs

from tfyarn.localyarn import daemons, hdfs
from tfyarn.localyarn.provision import find_java_home

pytestmark = pytest.mark.yarn
WAIT_S = 150
DOWN_S = 10

# The chief saves a TF-shaped checkpoint (index, data, state file last) every 0.3 s into its
# local work dir until the test puts "release" in the job's key-value store.
SAVER = '''\
import argparse, os, time
parser = argparse.ArgumentParser()
for flag in ("--ps_hosts", "--worker_hosts", "--job_name", "--work_dir"):
    parser.add_argument(flag, default="")
parser.add_argument("--task_index", type=int, default=0)
args, _ = parser.parse_known_args()
if os.environ["TFYARN_ROLE"] != "chiefworker":
    while True:
        time.sleep(1)
import skein
kv = skein.ApplicationClient.from_current().kv
directory = os.path.join(args.work_dir, "checkpoints")
os.makedirs(directory, exist_ok=True)
step = 0
while not kv.get("release"):
    step += 1
    for suffix in (".index", ".data-00000-of-00001"):
        with open(os.path.join(directory, ".partial"), "wb") as f:
            f.write(os.urandom(10000))
        os.replace(os.path.join(directory, ".partial"),
                   os.path.join(directory, f"ckpt-{step}{suffix}"))
    with open(os.path.join(directory, "state.partial"), "w") as f:
        f.write(f'model_checkpoint_path: "ckpt-{step}"\\n'
                f'all_model_checkpoint_paths: "ckpt-{step}"\\n')
    os.replace(os.path.join(directory, "state.partial"), os.path.join(directory, "checkpoint"))
    for suffix in (".index", ".data-00000-of-00001"):
        if step > 1:
            os.remove(os.path.join(directory, f"ckpt-{step - 1}{suffix}"))
    print(f"saved ckpt-{step}", flush=True)
    time.sleep(0.3)
'''


def hdfs_step(files: JobFiles) -> int:
    """The newest checkpoint's step on HDFS; every file its state file names is there."""
    try:
        state = files.remote_text("checkpoints/checkpoint")
    except Exception:  # noqa: BLE001 (HDFS is down on purpose in this test)
        return -1
    if not state:
        return 0
    step = int(re.search(r'model_checkpoint_path: "ckpt-(\d+)"', state).group(1))
    names = files.remote_names()
    assert {f"checkpoints/ckpt-{step}.index",
            f"checkpoints/ckpt-{step}.data-00000-of-00001"} <= names, (state, names)
    return step


def chief_mirror(yarn_cluster, app_id: str) -> dict:
    out = run_tfyarn(yarn_cluster, "status", app_id, "--json")
    assert out.returncode == 0, out.stderr
    job = json.loads(out.stdout)["job"] or {"tasks": []}
    chief = [t for t in job["tasks"] if t["role"] == "chiefworker"]
    return (chief[0].get("mirror") or {}) if chief else {}


def submit_saver(yarn_cluster, tmp_path: Path, interval_s: int) -> tuple[str, JobFiles]:
    """The saver job, its chief's work dir mirrored every ``interval_s``."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "saver.py").write_text(SAVER)
    resources, app_config = prepare_job(
        tmp_path, scripts_dir=scripts, entry="saver.py",
        components={r: {"yarn.memory": "256"} for r in ("ps", "chiefworker", "worker")},
        settings={"checkpoint.mirror.interval": str(interval_s)})
    out = run_tfyarn(yarn_cluster, "submit", "--resources", str(resources), "--app-config",
                     str(app_config), "--detach", "--json")
    assert out.returncode == 0, out.stderr
    app_id = json.loads(out.stdout.splitlines()[-1])["application_id"]
    return app_id, JobFiles(yarn_cluster.layout, app_id)


@dataclass
class Outage:
    before: int = 0  # the chief's step on HDFS when the NameNode stopped
    ready: float = 0.0  # when HDFS was back, out of safe mode


@contextmanager
def namenode_stopped(layout, files: JobFiles) -> Iterator[Outage]:
    """The NameNode stopped once HDFS holds a checkpoint, and started again on leaving
    (whatever happened inside), HDFS waited for until it is out of safe mode."""
    namenode, outage = hdfs.daemons_of(layout)[0], Outage()
    try:
        outage.before = wait_for("a checkpoint on HDFS", lambda: hdfs_step(files) >= 3 and
                                 hdfs_step(files), WAIT_S)
        assert daemons.stop(layout, namenode.name)
        yield outage
    finally:
        if daemons.running_pid(layout, namenode.name) is None:
            daemons.start(layout, find_java_home(), namenode)
        outage.ready = wait_for_hdfs(layout)


def test_mirror_survives_an_hdfs_outage(yarn_cluster, skein_client, tmp_path: Path) -> None:
    app_id, files = submit_saver(yarn_cluster, tmp_path, 1)
    with namenode_stopped(yarn_cluster.layout, files) as outage:
        before = outage.before
        down = wait_for("the status to say mirroring fails",
                        lambda: (m := chief_mirror(yarn_cluster, app_id)).get("error") and m,
                        WAIT_S)
        print(f"\n[{app_id}] NameNode stopped at HDFS step {before}; status: {down['error']}")
        assert down["failing_since"] and down["last_checkpoint"], down
    caught_up = wait_for("the mirror to catch up", lambda: (
        (m := chief_mirror(yarn_cluster, app_id)).get("error") is None
        and hdfs_step(files) > before and m), WAIT_S)
    after = hdfs_step(files)
    print(f"[{app_id}] NameNode back: HDFS at step {after}, mirror {caught_up}")
    # The chief kept saving on its own disk while HDFS was away: HDFS jumped past the gap.
    assert after > before + 3, (before, after)

    skein_client.connect(app_id).kv.put("release", b"1")
    final = wait_for("the job's end", lambda: (
        (r := skein_client.application_report(app_id)) and
        str(r.state) in ("FINISHED", "FAILED", "KILLED") and r), WAIT_S)
    assert str(final.final_status) == "SUCCEEDED", final.diagnostics
    assert hdfs_step(files) >= after


def test_mirror_resumes_within_an_interval_of_a_namenode_restart(
        yarn_cluster, skein_client, tmp_path: Path) -> None:
    """The NameNode goes away while the chief trains and comes back: the chief's next copy
    reaches HDFS within one mirror interval (plus 5 s) of the NameNode leaving safe mode."""
    interval_s = 2
    app_id, files = submit_saver(yarn_cluster, tmp_path, interval_s)
    with namenode_stopped(yarn_cluster.layout, files) as outage:
        time.sleep(DOWN_S)
    before, ready = outage.before, outage.ready
    try:
        synced = wait_for("the chief's next copy", lambda: (
            (last := _last_sync(yarn_cluster, app_id)) > ready and last), WAIT_S)
        print(f"\n[{app_id}] NameNode out of safe mode; the chief's next copy "
              f"{synced - ready:.1f} s later (interval {interval_s} s)")
        assert hdfs_step(files) > before
        assert synced - ready <= interval_s + 5
    finally:
        skein_client.connect(app_id).kv.put("release", b"1")


def _last_sync(yarn_cluster, app_id: str) -> float:
    """When the chief's mirror last copied, by its own clock (0: never)."""
    last = chief_mirror(yarn_cluster, app_id).get("last_sync")
    return datetime.fromisoformat(last).timestamp() if last else 0.0
