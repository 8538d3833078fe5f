"""tfyarn on each Hadoop release it supports besides the default (3.5.0, which the rest of the
suite runs): a cluster of the release of its own (its state dir and port window,
tfyarn/localyarn/releases.py), and on it one light job from this checkout's client, with the
package's AppMaster jar (one jar for every release: compiled against the oldest release's
API, tfyarn/amjarbuild.py). The smallest set that catches a jar that does not fit the
release (the AppMaster dies at once: NoSuchFieldError) or a release that schedules
differently: the cluster up, the job SUCCEEDED, a killed worker replaced, a STRICT ps back on
its host, asked for by the patched AppMaster.

In CI: 3.3.6 (the oldest) and 3.4.3 (the newest 3.4), each about 3 minutes with its cluster's
start. TFYARN_RELEASES=3.3.6,3.4.0,... names others on demand. Each release's cluster
starts here and stops at the end of its tests (unless it was running), one at a time in one
lane, beside the other lanes' tests on the shared cluster (its job is light: an interpreter
every node has, nothing localized).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from barenodes import client_environ, node_python
from conftest import LocalCluster
from jobtools import ReleaseFile, prepare_light_job
from test_faults_yarn import assert_succeeded, submitting, wait_until
from test_placement_yarn import am_log, kill_script, running

from tfyarn.hadoop import amjar
from tfyarn.localyarn import cluster, releases
from tfyarn.localyarn.layout import Layout

pytestmark = [pytest.mark.yarn, pytest.mark.xdist_group("releases")]  # one cluster at a time

RELEASES = tuple(os.environ.get("TFYARN_RELEASES", "3.3.6,3.4.3").split(","))
RECOVERY_S = 120


def state_dir(version: str) -> Path:
    """The release's default state dir (beside the default cluster's)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tfyarn" / releases.state_dir_name(version)


@pytest.fixture(scope="module", params=RELEASES)
def release_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """The release's cluster, for this module's tests."""
    version = request.param
    layout = Layout(state_dir(version), hadoop_version=version,
                    port_offset=releases.port_window(version))
    started_here = not cluster.is_running(layout)
    if started_here:
        cluster.up(layout, probe=False)  # its test's job follows at once
    try:
        env = cluster.client_environment(layout)
        with client_environ(env):
            yield LocalCluster(layout, env)
    finally:
        if started_here:
            cluster.down(layout)


def test_a_job_with_a_strict_ps_and_a_killed_worker_succeeds(
        release_cluster: LocalCluster, tmp_path: Path) -> None:
    import skein

    layout = release_cluster.layout
    components = {role: {"yarn.container.failure.threshold": "5"}
                  for role in ("ps", "chiefworker", "worker")}
    components["ps"]["yarn.component.placement.policy"] = "1"  # STRICT
    release = ReleaseFile.fresh(layout)
    # An interpreter every node has (no env to pack and localize: the test stays light).
    resources, app_config = prepare_light_job(
        tmp_path, ["--sleep", "600", "--release_file", release.url],
        settings={"python": str(node_python(layout))}, components=components)
    with skein.Client() as client, submitting(release_cluster, client) as submit:
        job = submit(resources, app_config)
        first = wait_until("every task running", lambda: running(release_cluster, job),
                           RECOVERY_S, poll_s=1, fail_fast=job.ended_early)

        kill_script(job, "worker", 2)  # TensorFlow's worker 2: the role's worker 1
        wait_until("worker 1 running again", lambda: (
            (now := running(release_cluster, job)) and now[("worker", 1)][0] !=
            first[("worker", 1)][0]), RECOVERY_S, poll_s=1, fail_fast=job.ended_early)
        kill_script(job, "ps", 0)  # STRICT: asked for on its host only
        again = wait_until("the ps running again", lambda: (
            (now := running(release_cluster, job)) and now[("ps", 0)][0] !=
            first[("ps", 0)][0] and now), RECOVERY_S, poll_s=1, fail_fast=job.ended_early)
        ps_host = first[("ps", 0)][1]
        assert again[("ps", 0)][1] == ps_host, (first, again)
        # asked for there by the package's patched AppMaster, not placed there by chance
        assert re.search(rf"PLACEMENT for ps: nodes \[{re.escape(ps_host)}[^\]]*\], relax "
                         "false", am_log(release_cluster, job)), am_log(release_cluster, job)

        release.touch()
        assert_succeeded(job, job.final())
    print(f"[{job.app_id}] Hadoop {layout.hadoop_version}: SUCCEEDED with {amjar.jar_name()}, "
          f"worker 1 replaced, the STRICT ps back on {ps_host}")
