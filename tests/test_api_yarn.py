"""The Python API: `tfyarn.submit(...)` runs a job on the local YARN as `tfyarn submit` does,
and refuses bad input with the same TfyarnError the CLI shows, nothing submitted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import wait_for_final_state
from jobtools import application_ids, prepare_light_job, unique_name

import tfyarn
from tfyarn.errors import NOTHING_SUBMITTED, TfyarnError
from tfyarn.jobconfig import JobConfigError

pytestmark = pytest.mark.yarn


def test_submit_runs_a_job_to_success(yarn_cluster, skein_client, tmp_path: Path) -> None:
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "1"])
    said: list[str] = []
    app_id = tfyarn.submit(resources, app_config, name="api-job", tags=["from-python"],
                           echo=said.append)  # a skein driver of its own, stopped again
    assert app_id.startswith("application_"), app_id
    report = wait_for_final_state(skein_client, app_id, timeout_s=300)
    assert (str(report.state), str(report.final_status)) == ("FINISHED", "SUCCEEDED"), (
        report.diagnostics)
    assert report.name == "api-job"
    assert {"tfyarn", "from-python"} <= set(report.tags)
    assert any(line.startswith("Pre-flight check against") for line in said), said


def test_bad_files_raise_and_submit_nothing(yarn_cluster, tmp_path: Path) -> None:
    resources, app_config = prepare_light_job(tmp_path, [])
    doc = json.loads(resources.read_text())
    doc["components"]["worker"]["yarn.memroy"] = "256"
    resources.write_text(json.dumps(doc))
    name = unique_name()
    with pytest.raises(JobConfigError) as raised:
        tfyarn.submit(resources, app_config, name=name)
    assert isinstance(raised.value, TfyarnError)
    assert raised.value.describe().startswith(f"{NOTHING_SUBMITTED}:\n{resources}: "
                                              'components.worker."yarn.memroy"')
    assert not application_ids(yarn_cluster, name)


def test_the_jobs_code_goes_to_hdfs_once_and_only_its_owner_reads_it(
        yarn_cluster, skein_client, tmp_path: Path) -> None:
    """Two jobs of the same scripts: the second copies no code (its files are the first's,
    on HDFS by content, outside skein's staging dir), both run to SUCCEEDED, and the cache
    directory is its owner's alone."""
    from appmaster.common.storage import RemoteDir
    from tfyarn.submission import codepack
    from tfyarn.submission.environments import cluster_user

    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "1"])
    cache = RemoteDir(f"{yarn_cluster.layout.default_fs}/user/{cluster_user()}/"
                      f"{codepack.CACHE_DIR}")
    shipped = []
    # the second is submitted while the first runs: its code is on HDFS from the first submit
    specs = {}
    for _ in range(2):
        app_id = tfyarn.submit(resources, app_config, echo=lambda _: None)
        specs[app_id] = skein_client.connect(app_id, wait=True).get_specification()
    for app_id, spec in specs.items():
        report = wait_for_final_state(skein_client, app_id, timeout_s=300)
        assert str(report.final_status) == "SUCCEEDED", report.diagnostics
        code = {name: spec.master.files[name].source for name in ("app", "appmaster")}
        code["tfyarn"] = spec.services["worker"].files["tfyarn"].source  # tfyarn.data
        assert all(url.startswith(cache.url + "/") for url in code.values()), code
        shipped.append(code)
    assert shipped[0] == shipped[1]
    assert cache.client.get_file_info(cache.root).permission == 0o700
    assert {url.rsplit("/", 1)[1] for url in shipped[0].values()} <= set(cache.list_files())
