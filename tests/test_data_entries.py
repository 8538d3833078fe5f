"""site.global.data / --data: HDFS entries YARN localizes into every task (no cluster needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jobtools import write_doc

from appmaster.agent.main import gather_data
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.jobplan import DATA_ENTRY_PREFIX, JobPlan
from tfyarn.jobconfig import JobConfig, JobConfigError, load_job
from tfyarn.jobconfig.datasets import DataEntry
from tfyarn.submission.api import SubmitOptions
from tfyarn.submission.plan import build_plan

RESOURCES = {"components": {
    "chiefworker": {"yarn.role.priority": "1", "yarn.component.instances": "1"},
    "worker": {"yarn.role.priority": "2", "yarn.component.instances": "2"}}}


def load(tmp_path: Path, **settings: object) -> JobConfig:
    (tmp_path / "train.py").write_text("print('training')\n")
    write_doc(tmp_path / "resources.json", RESOURCES)
    write_doc(tmp_path / "appConfig.json", {"global": {
        "site.global.user.scripts.entry": "train.py",
        **{"site.global." + key: value for key, value in settings.items()}}})
    return load_job(tmp_path / "resources.json", tmp_path / "appConfig.json", user="alice")


def problems(tmp_path: Path, **settings: object) -> str:
    with pytest.raises(JobConfigError) as info:
        load(tmp_path, **settings)
    return str(info.value)


def test_entries_from_a_list_or_a_comma_separated_string(tmp_path: Path) -> None:
    wanted = (DataEntry("hdfs:///user/alice/mnist.tar.gz", "mnist", True),
              DataEntry("hdfs://nn:8020/data/vocab.txt", "vocab.txt", False),
              DataEntry("viewfs://cluster/data/dir", "dir", False))
    texts = ["hdfs:///user/${USER_NAME}/mnist.tar.gz#mnist", "hdfs://nn:8020/data/vocab.txt",
             "viewfs://cluster/data/dir/"]
    assert load(tmp_path, data=texts).spec.data == wanted
    assert load(tmp_path, data=", ".join(texts)).spec.data == wanted


@pytest.mark.parametrize(("entry", "fragment"), [
    ("/data/mnist#m", "not on the cluster's file system"),
    ("file:///data/mnist#m", "not on the cluster's file system"),
    ("s3a://bucket/mnist#m", "not on the cluster's file system"),
    ("hdfs:/data/mnist", "not a URL of the form"),
    ("hdfs:///", "not a URL of the form"),
    ("hdfs:///data/${APP_ID}/x", "unknown placeholder"),
    ("hdfs:///data/mnist#a/b", "cannot be a name"),
    ("hdfs:///data/mnist#..", "cannot be a name"),
])
def test_malformed_entries_name_the_key_and_the_fix(tmp_path: Path, entry: str,
                                                     fragment: str) -> None:
    text = problems(tmp_path, data=[entry])
    assert text.startswith(f'{tmp_path}/appConfig.json: global."site.global.data" = "{entry}"')
    assert fragment in text and "Fix: " in text


def test_duplicate_names_and_both_data_keys_refused(tmp_path: Path) -> None:
    text = problems(tmp_path, data=["hdfs:///a/train", "hdfs:///b/train"])
    assert 'the name "train" is given twice' in text and "#train2" in text
    text = problems(tmp_path, data=4)
    assert "must be a list of strings or one comma-separated string" in text
    text = problems(tmp_path, data=["hdfs:///a/x"], **{"user.data.dir": "hdfs:///d"})
    assert "user.data.dir" in text and "hdfs:///d#data" in text


def test_data_option_replaces_the_key_and_names_itself(tmp_path: Path) -> None:
    """--data is site.global.data given on the command line: checked with the files, named
    by the option in its problems and in the settings' origins."""
    def with_data(*entries: str) -> JobConfig:
        load(tmp_path, data=["hdfs:///a/x"])  # the files
        return load_job(tmp_path / "resources.json", tmp_path / "appConfig.json", user="alice",
                        overrides=SubmitOptions(data=entries).overrides())

    assert with_data().spec.data == load(tmp_path, data=["hdfs:///a/x"]).spec.data
    job = with_data("hdfs:///b/y.zip#y")
    assert job.spec.data == (DataEntry("hdfs:///b/y.zip", "y", True),)
    assert str(job.settings["site.global.data"][1]) == "--data (command line)"
    with pytest.raises(JobConfigError) as info:
        with_data("hdfs:///b/y", "hdfs:///c/y", "local/file")
    text = str(info.value)
    assert text.count("command line: --data = ") == 2
    assert '"hdfs:///c/y": the name "y" is given twice' in text


def test_plan_passes_data_dir_and_localizes_each_entry(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    (tmp_path / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn:8020</value>"
        "</property></configuration>")
    job = load(tmp_path, data=["hdfs:///d/mnist.tgz#mnist", "hdfs://other:9000/v.txt"])
    plan = JobPlan.from_json(build_plan(job).to_json())  # as the containers read it
    assert plan.data == (DataEntry("hdfs://nn:8020/d/mnist.tgz", "mnist", True),
                         DataEntry("hdfs://other:9000/v.txt", "v.txt", False))
    spec = ClusterSpec(chief=("c:1",), workers=("w0:1", "w1:1"))
    assert "--data_dir=/c/data" in plan.task_command(spec, "worker", 1, "/c")
    without = build_plan(load(tmp_path))
    assert not any(f.startswith("--data_dir") for f in without.task_command(spec, "worker", 1, "w"))

    from tfyarn.submission.appspec import application_spec
    from tfyarn.submission.plan import AppSpecExtras

    job_file = tmp_path / "job.json"
    job_file.write_text(plan.to_json())
    files = application_spec(plan, tmp_path, job_file, AppSpecExtras()).services["worker"].files
    archive, plain = files[DATA_ENTRY_PREFIX + "mnist"], files[DATA_ENTRY_PREFIX + "v.txt"]
    assert (archive.type, plain.type) == ("archive", "file")
    assert archive.visibility == plain.visibility == "private"  # kept on the node for later jobs


def test_agent_gathers_the_entries_in_the_data_dir(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / f"{DATA_ENTRY_PREFIX}mnist").mkdir()  # as YARN localized them
    (tmp_path / f"{DATA_ENTRY_PREFIX}mnist" / "train.tfrecords").write_text("records")
    (tmp_path / f"{DATA_ENTRY_PREFIX}v.txt").write_text("vocab")
    for _ in range(2):  # a second call (a restarted script) finds the links in place
        data_dir = gather_data(["mnist", "v.txt"])
    assert data_dir == os.path.join(tmp_path, "data")
    assert (Path(data_dir) / "mnist" / "train.tfrecords").read_text() == "records"
    assert (Path(data_dir) / "v.txt").read_text() == "vocab"
