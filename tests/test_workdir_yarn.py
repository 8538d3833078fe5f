"""The job's work dir on HDFS: every unusable one is refused before anything is submitted.

Each case runs `tfyarn submit` against the local cluster and checks the error names the
key and the fix, the exit code is non-zero and the ResourceManager's application list is
unchanged.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import jobtools
import pytest
from jobtools import prepare_light_job, run_tfyarn

from tfyarn.submission.workdir import default_work_dir, fixed_part

pytestmark = pytest.mark.yarn

KEY = "site.global.user.work.dir"


def refused(yarn_cluster, tmp_path: Path, work_dir: str, env: dict | None = None) -> str:
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "1"],
                                              settings={"user.work.dir": work_dir})
    return jobtools.refused(yarn_cluster, resources, app_config, KEY, env=env)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_file_system_the_tasks_cannot_reach(yarn_cluster, tmp_path: Path) -> None:
    message = refused(yarn_cluster, tmp_path, "s3a://bucket/jobs/${APP_ID}")
    assert "not s3a://" in message and yarn_cluster.layout.default_fs in message, message


def test_a_malformed_url(yarn_cluster, tmp_path: Path) -> None:
    message = refused(yarn_cluster, tmp_path, "hdfs:/user/me/jobs/${APP_ID}")
    assert "is not a URL of the form hdfs://namenode:port/path" in message, message


def test_a_name_service_the_cluster_lacks(yarn_cluster, tmp_path: Path) -> None:
    """Slider's files say hdfs://default/...: this cluster has no such name service."""
    message = refused(yarn_cluster, tmp_path, "hdfs://default/user/me/jobs/${APP_ID}")
    assert "hdfs://default, which this cluster does not have" in message, message
    assert yarn_cluster.layout.default_fs in message, message


def test_an_unreachable_namenode(yarn_cluster, tmp_path: Path) -> None:
    message = refused(yarn_cluster, tmp_path, f"hdfs://127.0.0.1:{free_port()}/jobs/${{APP_ID}}")
    assert "did not answer within" in message and "NameNode" in message, message


def test_a_directory_the_user_may_not_write(yarn_cluster, tmp_path: Path) -> None:
    """/user/<cluster user> belongs to that user: another user may not write there."""
    env = {**yarn_cluster.env, "HADOOP_USER_NAME": "tfyarn-test-intruder"}
    owner_dir = default_work_dir(yarn_cluster.env)
    message = refused(yarn_cluster, tmp_path, owner_dir, env=env)
    assert "Permission denied: user=tfyarn-test-intruder" in message, message
    assert fixed_part(owner_dir) in message, message


def test_the_default_work_dir_is_on_hdfs_and_shown_by_the_dry_run(yarn_cluster,
                                                                 tmp_path: Path) -> None:
    resources, app_config = prepare_light_job(tmp_path, ["--sleep", "1"])
    result = run_tfyarn(yarn_cluster, "submit", "--resources", str(resources), "--app-config",
                        str(app_config), "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    expected = f"{yarn_cluster.layout.default_fs}/user/"
    assert document["work_dir"].startswith(expected), document["work_dir"]
    assert document["work_dir"].endswith("/tfyarn/jobs/${APP_ID}"), document["work_dir"]
    assert fixed_part("hdfs://nn:8020/a/b/${APP_ID}") == "hdfs://nn:8020/a/b"
    assert fixed_part("hdfs://nn:8020/a/b") == "hdfs://nn:8020/a/b"
