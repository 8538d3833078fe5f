"""The secure HA cluster (`tfyarn cluster up --ha --secure`): Kerberos on both
ResourceManagers, both NameNodes and the JournalNode. A job submitted with a keytab trains
through a ResourceManager and a NameNode failover as on the plain HA cluster, on delegation
tokens that name the pairs (the RMs' addresses, ha-hdfs:nameservice1), not one daemon.

On demand (TFYARN_LONG=1): the cluster's start and the job take 3-4 minutes on 2
cores, more than CI's budget for one test. Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from barenodes import client_environ, venv_without
from conftest import LocalCluster
from test_ha_yarn import train_through_failovers

from tfyarn.localyarn import cluster, secure
from tfyarn.localyarn.layout import Layout

pytestmark = [pytest.mark.yarn, pytest.mark.xdist_group("offset-2700"), pytest.mark.skipif(
    not os.environ.get("TFYARN_LONG"),
    reason="a cluster of its own and two failovers, 3-4 min: TFYARN_LONG=1 to run it")]
# Beside the session's cluster (0), the HA tests' and secure tests' (2700), the gpu tests'
# (2100-3300) and the helpers' (offsets of 300).
SECURE_HA_PORT_OFFSET = int(os.environ.get("TFYARN_SECURE_HA_PORT_OFFSET", "3600"))


@pytest.fixture(scope="module")
def secure_ha_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A secure HA cluster of its own (2 NodeManagers), down again after. Its nodes run the
    jobs with a Python installed on every node, as test_secure_yarn's do (a shipped env's
    first localization outlasts the tokens' unrenewed minute)."""
    layout = Layout(tmp_path_factory.mktemp("secure-ha-cluster"),
                    port_offset=SECURE_HA_PORT_OFFSET, nodes=2, ha=True)
    try:
        started = time.monotonic()
        cluster.up(layout, kerberos=True, probe=False)  # its test's job follows at once
        print(f"\nsecure HA cluster up in {time.monotonic() - started:.1f} s")
        defaults = layout.state_dir / "tests-defaults.yaml"
        defaults.write_text(f"site.global.python: {venv_without(layout, 'python-tf', ())}\n")
        env = {**cluster.client_environment(layout), "TFYARN_CONFIG": str(defaults),
               "TFYARN_CLUSTER_DIR": str(layout.state_dir),
               "TFYARN_CLUSTER_PORT_OFFSET": str(SECURE_HA_PORT_OFFSET)}
        with client_environ(env):
            yield LocalCluster(layout, env)
    finally:
        cluster.down(layout)


def test_a_keytab_job_trains_through_both_failovers_with_kerberos(
        secure_ha_cluster: LocalCluster, tmp_path: Path) -> None:
    layout, user = secure_ha_cluster.layout, secure.cluster_user()
    started = time.monotonic()
    train_through_failovers(
        secure_ha_cluster, tmp_path, "--principal", secure.principal(user), "--keytab",
        str(secure.keytab(layout, user)),
        get_page=lambda url, **options: secure.web_get(layout, url, **options))
    print(f"the job through both failovers: {time.monotonic() - started:.1f} s")
