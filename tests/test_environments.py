"""Per-job Python environments and Docker images (tfyarn/submission/environments.py).

Unit tests for the pure parts, the upload against a stand-in filesystem shell, and the
generated skein spec; one job on the local YARN with a packed virtualenv, submitted twice.
There is no Docker engine here: the Docker runtime is checked in the spec only.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any

import barenodes
import pytest
from barenodes import make_venv
from jobtools import JobFiles, prepare_job, read_json, submit_and_wait

from appmaster.common.jobplan import LOCALIZED_SCRIPTS_DIR, PLAN_FILE
from tfyarn.jobconfig import JobConfig, JobConfigError, envvalues, load_job
from tfyarn.localyarn import cluster
from tfyarn.localyarn.layout import Layout
from tfyarn.submission import environments as envs
from tfyarn.submission.api import SubmitOptions
from tfyarn.submission.appspec import application_spec
from tfyarn.submission.environments import JobEnvironment, JobEnvironmentError
from tfyarn.submission.plan import AppSpecExtras, build_plan, format_plan, plan_document

REPO = Path(__file__).resolve().parent.parent
G = "site.global."
SHA = "ab" * 32


# ---------------------------------------------------------------- archives


def make_tar(path: Path, members: dict[str, str | None]) -> Path:
    """A .tar.gz (or .tar): name -> text, or None for a symlink to python3.11."""
    mode = "w:gz" if path.name.endswith((".gz", ".tgz")) else "w"
    with tarfile.open(path, mode) as tar:
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            if text is None:
                info.type, info.linkname = tarfile.SYMTYPE, "python3.11"
                tar.addfile(info)
            else:
                data = text.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(("name", "suffix"), [
    ("env.tar.gz", ".tar.gz"), ("ENV.TGZ", ".tgz"), ("a.b.tar", ".tar"), ("env.zip", ".zip"),
    ("/some/dir/tf2.16-env.tar.gz", ".tar.gz"),
])
def test_archive_suffix(name: str, suffix: str) -> None:
    assert envs.archive_suffix(name) == suffix


@pytest.mark.parametrize("name", ["env.gz", "env", "env.tar.bz2", ".tar.gz", "env.whl"])
def test_archive_suffix_refuses_what_yarn_does_not_unpack(name: str) -> None:
    with pytest.raises(JobEnvironmentError, match="venv-pack"):
        envs.archive_suffix(name)


@pytest.mark.parametrize(("names", "found"), [
    # venv-pack: symlinks at the top
    (["pyvenv.cfg", "bin/python3", "bin/python", "bin/python3.11"], "bin/python"),
    # conda-pack, with "./" prefixes as some tar writers add
    (["./conda-meta/history", "./bin/python3.10", "./bin/python3", "./bin/python"], "bin/python"),
    (["bin/python3", "lib/x.py"], "bin/python3"),
    # an archive of the env's directory
    (["myenv/pyvenv.cfg", "myenv/bin/python"], "myenv/bin/python"),
    (["myenv/bin/python", "bin/python3"], "bin/python3"),  # the shallowest wins
    (["lib/python3.11/site-packages/x/bin/python"], None),
    (["bin/pythonw", "bin/ipython"], None),
    ([], None),
])
def test_python_member(names: list[str], found: str | None) -> None:
    assert envs.python_member(names) == found


def test_archive_python_reads_tar_and_zip(tmp_path: Path) -> None:
    tar = make_tar(tmp_path / "env.tar.gz", {"pyvenv.cfg": "home = /usr/bin\n",
                                             "bin/python3.11": "", "bin/python": None})
    assert envs.archive_python(tar) == "bin/python"
    plain = make_tar(tmp_path / "env.tar", {"env/bin/python3": None})
    assert envs.archive_python(plain) == "env/bin/python3"
    with zipfile.ZipFile(tmp_path / "env.zip", "w") as z:
        z.writestr("bin/python", "")
    assert envs.archive_python(tmp_path / "env.zip") == "bin/python"


def test_archive_python_errors_say_what_to_do(tmp_path: Path) -> None:
    no_python = make_tar(tmp_path / "scripts.tar.gz", {"train.py": "print(1)\n"})
    with pytest.raises(JobEnvironmentError, match="no bin/python.*must contain skein"):
        envs.archive_python(no_python)
    broken = tmp_path / "broken.tgz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(JobEnvironmentError, match="cannot read the archive"):
        envs.archive_python(broken)
    with pytest.raises(JobEnvironmentError, match="no such file"):
        envs.archive_python(tmp_path / "missing.tar.gz")


def test_interpreters() -> None:
    assert envs.python_in_env("bin/python") == "./pyenv/bin/python"
    assert envs.task_python("bin/python", "/opt/py/bin/python", "img") == "./pyenv/bin/python"
    assert envs.task_python(None, "/opt/py/bin/python", "img") == "/opt/py/bin/python"
    assert envs.task_python(None, None, "img") == "python3"
    # Nothing named: the env tfyarn packs from this interpreter (tfyarn/submission/envpack.py).
    assert envs.task_python(None, None, None) == "./pyenv/bin/python"
    assert envs.ships_own_env(None, None) and not envs.ships_own_env("/usr/bin/python3", None)
    # The AppMaster is never in Docker: beside an image's python3, it runs the shipped env.
    assert envs.master_python("python3", shipped_env=True, docker_image="img") == (
        "./pyenv/bin/python")
    assert envs.master_python("./pyenv/bin/python", False, "img") == "./pyenv/bin/python"
    assert envs.master_python("/opt/py/bin/python", False, None) == "/opt/py/bin/python"
    assert envs.master_python("/opt/py/bin/python", False, "img") == "/opt/py/bin/python"


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_bytes(b"abc")
    assert envs.sha256_file(path, chunk=1) == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


# ---------------------------------------------------------------- where the copy goes

CORE_SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>hadoop.tmp.dir</name><value>/tmp</value></property>
  <property>
    <name>fs.defaultFS</name>
    <value> hdfs://nn.example.com:8020 </value>
  </property>
</configuration>
"""


def test_default_fs_old_name(tmp_path: Path) -> None:
    (tmp_path / "core-site.xml").write_text(CORE_SITE.replace("fs.defaultFS", "fs.default.name"))
    assert envs.default_fs({"HADOOP_CONF_DIR": str(tmp_path)}) == "hdfs://nn.example.com:8020"


def test_default_fs_reads_hadoop_conf_dir(tmp_path: Path) -> None:
    (tmp_path / "core-site.xml").write_text(CORE_SITE)
    environ = {"HADOOP_CONF_DIR": str(tmp_path)}
    assert envs.default_fs(environ) == "hdfs://nn.example.com:8020"
    (tmp_path / "core-site.xml").write_text(CORE_SITE.replace("hdfs://nn.example.com:8020",
                                                              "hdfs://127.0.0.1:8020/"))
    assert envs.default_fs(environ) == "hdfs://127.0.0.1:8020"
    (tmp_path / "core-site.xml").write_text(CORE_SITE.replace("hdfs://nn.example.com:8020",
                                                              "file:///"))
    with pytest.raises(JobEnvironmentError, match="every node reads it"):
        envs.default_fs(environ)


def test_default_fs_missing_configuration(tmp_path: Path) -> None:
    if Path("/etc/hadoop/conf/core-site.xml").exists():
        pytest.skip("this machine has a system-wide Hadoop configuration")
    with pytest.raises(JobEnvironmentError, match="HADOOP_CONF_DIR"):
        envs.default_fs({"HADOOP_CONF_DIR": str(tmp_path)})


@pytest.mark.parametrize("url", ["file:///", "hdfs:///", "/user/x", "", "hdfs://"])
def test_check_default_fs_needs_a_cluster_filesystem(url: str) -> None:
    # hdfs:/// would also crash skein's driver: it compares hosts and finds none.
    with pytest.raises(JobEnvironmentError):
        envs.check_default_fs(url)


def test_cached_archive_url() -> None:
    assert envs.cached_archive_url("hdfs://nn:8020/", "alice", SHA, ".tar.gz") == (
        f"hdfs://nn:8020/user/alice/.tfyarn/envs/{SHA}.tar.gz"
    )
    assert envs.cached_archive_url("hdfs://127.0.0.1:8020", "root", SHA, ".zip") == (
        f"hdfs://127.0.0.1:8020/user/root/.tfyarn/envs/{SHA}.zip"
    )
    with pytest.raises(ValueError):
        envs.cached_archive_url("hdfs://nn:8020", "alice", "abc", ".tar.gz")
    with pytest.raises(ValueError):
        envs.cached_archive_url("hdfs://nn:8020", "alice", SHA, ".rar")


def test_cluster_user() -> None:
    assert envs.cluster_user({"HADOOP_USER_NAME": "etl"}) == "etl"
    assert envs.cluster_user({}) == envs.getpass.getuser()


@pytest.mark.yarn
def test_ensure_uploaded_uploads_once(yarn_cluster, tmp_path: Path) -> None:
    """To the cluster's real HDFS, by content: the same archive from another path is not
    copied again, and no temporary copy is left beside it."""
    from appmaster.common.storage import RemoteDir

    fs = yarn_cluster.layout.default_fs
    user = f"tfyarn-test-{uuid.uuid4().hex[:8]}"
    archive = make_tar(tmp_path / "env.tar.gz", {"bin/python": None, "x": "payload"})
    sha = envs.sha256_file(archive)
    url = f"{fs}/user/{user}/.tfyarn/envs/{sha}.tar.gz"
    first = envs.ensure_uploaded(archive, fs_default=fs, user=user)
    assert first == envs.UploadedEnv(url, sha, uploaded=True)
    envs_dir = RemoteDir(url.rsplit("/", 1)[0])
    assert envs_dir.read_bytes(f"{sha}.tar.gz") == archive.read_bytes()
    again = tmp_path / "copy-of-env.tar.gz"
    shutil.copy(archive, again)
    second = envs.ensure_uploaded(again, fs_default=fs, user=user)
    assert second == envs.UploadedEnv(url, sha, uploaded=False)
    assert set(envs_dir.list_files()) == {f"{sha}.tar.gz"}  # no partial copy left
    envs_dir.client.delete(f"/user/{user}", recursive=True)


@pytest.mark.yarn
def test_ensure_uploaded_from_many_submissions_at_once(yarn_cluster, tmp_path: Path) -> None:
    """Four submissions of one env at the same moment: one copy wins, none fails, the file
    is whole (a file a job named must never change under it)."""
    from concurrent.futures import ThreadPoolExecutor

    from appmaster.common.storage import RemoteDir

    fs = yarn_cluster.layout.default_fs
    user = f"tfyarn-test-{uuid.uuid4().hex[:8]}"
    archive = make_tar(tmp_path / "env.tgz", {"bin/python": None, "x": uuid.uuid4().hex * 10_000})
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(
            lambda _: envs.ensure_uploaded(archive, fs_default=fs, user=user), range(4)))
    assert len({r.url for r in results}) == 1 and sum(r.uploaded for r in results) >= 1
    envs_dir = RemoteDir(results[0].url.rsplit("/", 1)[0])
    assert set(envs_dir.list_files()) == {results[0].url.rsplit("/", 1)[1]}
    assert envs_dir.read_bytes(results[0].url.rsplit("/", 1)[1]) == archive.read_bytes()
    envs_dir.client.delete(f"/user/{user}", recursive=True)


@pytest.mark.yarn
def test_ensure_uploaded_reports_a_failed_copy(yarn_cluster, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's home on HDFS: refused by the NameNode, said plainly."""
    monkeypatch.setenv("HADOOP_USER_NAME", "tfyarn-test-intruder")
    archive = make_tar(tmp_path / "env.tar.gz", {"bin/python": None})
    with pytest.raises(JobEnvironmentError, match=r"cannot copy the packed env to .*"
                       r"Permission denied: user=tfyarn-test-intruder") as error:
        envs.ensure_uploaded(archive, fs_default=yarn_cluster.layout.default_fs,
                             user=envs.getpass.getuser())
    assert "\tat " not in str(error.value)


# ---------------------------------------------------------------- Docker


def test_docker_environment() -> None:
    assert envs.docker_environment("tensorflow/tensorflow:2.16.1") == {
        "YARN_CONTAINER_RUNTIME_TYPE": "docker",
        "YARN_CONTAINER_RUNTIME_DOCKER_IMAGE": "tensorflow/tensorflow:2.16.1",
        "YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK": "host",
    }
    env = envs.docker_environment(
        "registry.example.com:5000/ml/tf:2.15-gpu",
        ["/etc/hadoop/conf:/etc/hadoop/conf:ro", "/data:/data", "/scratch:/scratch:rw+rshared"],
    )
    assert env["YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"] == "registry.example.com:5000/ml/tf:2.15-gpu"
    assert env["YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"] == (
        "/etc/hadoop/conf:/etc/hadoop/conf:ro,/data:/data,/scratch:/scratch:rw+rshared"
    )
    with pytest.raises(ValueError):
        envs.docker_environment("two words")
    with pytest.raises(ValueError, match="no mount"):
        envs.docker_environment("img", ["/a:/b:rx"])


@pytest.mark.parametrize("mount", ["/a:/b", "/a:/b:ro", "/a:/b:rw", "/a/b c:/d:ro",
                                   "/a:/b:rprivate", "/a:/b:ro+slave"])
def test_docker_mount_ok(mount: str) -> None:
    assert envvalues.docker_mount_problem(mount) is None


@pytest.mark.parametrize("mount", ["/a", "a:/b", "/a:b", "/a:/b:x", "/a:/b,/c:/d", "/a:/b:ro:rw"])
def test_docker_mount_problem(mount: str) -> None:
    assert "is no mount" in (envvalues.docker_mount_problem(mount) or "")


# ---------------------------------------------------------------- job files, plan and spec


def job_files(tmp_path: Path, **settings: object) -> tuple[Path, Path]:
    (tmp_path / "train.py").write_text("print('hi')\n")
    resources = tmp_path / "resources.json"
    resources.write_text(json.dumps({"components": {
        "ps": {"yarn.role.priority": "1", "yarn.component.instances": "1"},
        "chiefworker": {"yarn.role.priority": "2", "yarn.component.instances": "1"},
        "worker": {"yarn.role.priority": "3", "yarn.component.instances": "2"},
    }}))
    app = tmp_path / "appConfig.json"
    app.write_text(json.dumps({"global": {G + "user.scripts.entry": "train.py",
                                          **{G + k: v for k, v in settings.items()}}}))
    return resources, app


def test_appconfig_keys(tmp_path: Path) -> None:
    (tmp_path / "envs").mkdir()
    make_tar(tmp_path / "envs" / "tf.tar.gz", {"bin/python": None})
    job = load_job(*job_files(tmp_path, **{
        "python.env": "envs/tf.tar.gz", "docker.image": "tf:2",
        "docker.mounts": "/etc/hadoop/conf:/etc/hadoop/conf:ro, /data:/data",
    }))
    assert job.client.python_env == tmp_path / "envs" / "tf.tar.gz"
    assert job.spec.docker_image == "tf:2"
    assert job.spec.docker_mounts == ("/etc/hadoop/conf:/etc/hadoop/conf:ro", "/data:/data")
    plain = load_job(*job_files(tmp_path))
    assert (plain.client.python_env, plain.spec.docker_image, plain.spec.docker_mounts) == (
        None, None, ()
    )


def test_appconfig_problems(tmp_path: Path) -> None:
    (tmp_path / "env.rar").write_text("")
    with pytest.raises(JobConfigError) as raised:
        load_job(*job_files(tmp_path, **{"python.env": "env.rar",
                                          "docker.mounts": ["/a:/b", "nope", 3]}))
    text = str(raised.value)
    assert 'global."site.global.python.env" = "env.rar": not an archive YARN can unpack' in text
    assert "must be a list of strings" in text
    with pytest.raises(JobConfigError) as raised:
        load_job(*job_files(tmp_path, **{"python.env": "missing.tar.gz",
                                          "docker.mounts": ["/a:/b", "nope"]}))
    text = str(raised.value)
    assert "no such file" in text and str(tmp_path / "missing.tar.gz") in text
    assert "'nope' is no mount" in text


def test_the_environment_options_are_settings_of_the_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--python-env, --docker-image and --docker-mount stand for their settings: they beat the
    job files, are checked as the files are, and their problems name the option."""
    files = job_files(tmp_path, **{"docker.image": "from-config:1"})
    archive = make_tar(tmp_path / "env.tar.gz", {"bin/python": None})
    monkeypatch.chdir(tmp_path)  # --python-env is relative to where tfyarn runs

    def with_options(**options: Any) -> JobConfig:
        return load_job(*files, overrides=SubmitOptions(**options).overrides())

    changed = with_options(python_env="env.tar.gz", docker_image="from-cli:2",
                           docker_mounts=("/a:/b:ro",))
    assert changed.client.python_env == archive
    assert (changed.spec.docker_image, changed.spec.docker_mounts) == ("from-cli:2", ("/a:/b:ro",))
    assert str(changed.settings[G + "python.env"][1]) == "--python-env (command line)"
    assert with_options() == load_job(*files)
    with pytest.raises(JobConfigError, match="command line: --docker-mount = "):
        with_options(docker_mounts=("relative:/b",))
    with pytest.raises(JobConfigError, match="--python-env = .*not an archive"):
        with_options(python_env="train.py")
    with pytest.raises(JobConfigError, match="--docker-image = .*not an image name"):
        with_options(docker_image="two words")


def test_plan_with_packed_env_and_docker(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "env.tar.gz", {"pyvenv.cfg": "", "bin/python": None})
    job = load_job(*job_files(tmp_path, **{"python.env": "env.tar.gz", "docker.image": "tf:2",
                                           "docker.mounts": ["/data:/data:ro"]}))
    plan = build_plan(job)
    assert plan.python == "./pyenv/bin/python"
    document = plan_document(job, plan, AppSpecExtras())
    assert document["python_env"] == str(archive)
    assert (document["docker_image"], document["docker_mounts"]) == ("tf:2", ["/data:/data:ro"])
    assert all(c.startswith("./pyenv/bin/python app/train.py ")
               for r in document["roles"] for c in r["commands"])
    text = format_plan(document)
    assert f"python env: {archive}, unpacked as ./pyenv in every container" in text
    assert "docker: the tasks run in image tf:2 (host network; mounts: /data:/data:ro)" in text


def test_plan_in_docker_without_env(tmp_path: Path) -> None:
    job = load_job(*job_files(tmp_path, **{"docker.image": "tf:2"}))
    assert build_plan(job).python == "python3"
    job = load_job(*job_files(tmp_path, **{"docker.image": "tf:2", "python": "/opt/tf/python"}))
    assert build_plan(job).python == "/opt/tf/python"


def test_application_spec(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "e.tar.gz", {"bin/python": None})
    plan = build_plan(load_job(*job_files(tmp_path), overrides=SubmitOptions(
        python_env=str(archive)).overrides()))
    url = f"hdfs://nn:8020/user/alice/.tfyarn/envs/{SHA}.tar.gz"
    job_file = tmp_path / PLAN_FILE
    job_file.write_text(plan.to_json())
    environment = JobEnvironment(python_env_url=url, docker_image="tf:2",
                                 docker_mounts=("/data:/data:ro",),
                                 master_python="./pyenv/bin/python")
    spec = application_spec(plan, tmp_path, job_file, AppSpecExtras(),
                            environment=environment)
    for files in [spec.master.files, *(s.files for s in spec.services.values())]:
        env_file = files[envs.ENV_DIR]
        assert env_file.source == url  # on the cluster already: skein uses it in place
        assert str(env_file.type) == "ARCHIVE" and str(env_file.visibility) == "PRIVATE"
        assert {LOCALIZED_SCRIPTS_DIR, "appmaster", PLAN_FILE} <= set(files)
    assert "exec ./pyenv/bin/python -m appmaster.master.main" in spec.master.script
    assert not any(k.startswith("YARN_CONTAINER_RUNTIME") for k in spec.master.env)
    assert set(spec.services) == {"ps", "chiefworker", "worker"}
    for service in spec.services.values():
        assert "exec ./pyenv/bin/python -m appmaster.agent.main" in service.script
        assert service.env["YARN_CONTAINER_RUNTIME_TYPE"] == "docker"
        assert service.env["YARN_CONTAINER_RUNTIME_DOCKER_IMAGE"] == "tf:2"
        assert service.env["YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK"] == "host"
        assert service.env["YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"] == "/data:/data:ro"
    spec.to_dict()  # skein validates the whole spec


def test_the_appmaster_is_given_only_the_layers_it_needs(tmp_path: Path) -> None:
    """The tasks get every layer of the shipped env; the AppMaster the ones it imports."""
    plan = build_plan(load_job(*job_files(tmp_path)))
    job_file = tmp_path / PLAN_FILE
    job_file.write_text(plan.to_json())
    python, tf = (("pyenv", "hdfs://nn:8020/e/layer-python-1.tar", "public"),
                  ("pyenv-site-tensorflow", "hdfs://nn:8020/e/layer-tensorflow-2.tar", "public"))
    environment = JobEnvironment(layers=(python, tf), master_layers=(python,))
    spec = application_spec(plan, tmp_path, job_file, AppSpecExtras(), environment=environment)
    assert "pyenv" in spec.master.files and "pyenv-site-tensorflow" not in spec.master.files
    for service in spec.services.values():
        assert {"pyenv", "pyenv-site-tensorflow"} <= set(service.files)


def test_application_spec_with_a_node_interpreter(tmp_path: Path) -> None:
    """site.global.python: every node has it; nothing is shipped."""
    job = load_job(*job_files(tmp_path, python="/opt/py/bin/python3"))
    plan = build_plan(job)
    spec = application_spec(plan, tmp_path, tmp_path / PLAN_FILE, AppSpecExtras())
    assert envs.ENV_DIR not in spec.master.files
    assert "exec /opt/py/bin/python3 -m appmaster.master.main" in spec.master.script
    assert not any(k.startswith("YARN_CONTAINER_RUNTIME") for s in spec.services.values()
                   for k in s.env)


def test_local_cluster_launchers(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    java_home = Path("/opt/jdk")
    assert cluster.write_launcher(layout, java_home) == layout.bin_dir / "yarn"
    hadoop = layout.bin_dir / "hadoop"
    text = hadoop.read_text()
    assert os.access(hadoop, os.X_OK)
    assert "org.apache.hadoop.fs.FsShell" in text and 'JAVA_HOME="/opt/jdk"' in text
    assert "@" not in text.replace("$@", "").replace("[@]", "")  # every placeholder filled
    before = hadoop.stat().st_ino
    cluster.write_launcher(layout, java_home)
    assert hadoop.stat().st_ino == before  # unchanged text: not rewritten


# ---------------------------------------------------------------- on the local YARN

ENV_SCRIPT = '''\
"""Records which Python runs this task in its own work dir; the ps blocks until ended, the
chief waits until every task has recorded (they say so in skein's key-value store: the hosts
share no disk)."""
import argparse
import json
import os
import sys
import time

import skein
import tfyarn.data  # shipped with the job: the packed env has no tfyarn
import tfyarn_env_marker  # only in the packed env

parser = argparse.ArgumentParser()
for flag in ("--ps_hosts", "--worker_hosts", "--job_name", "--work_dir"):
    parser.add_argument(flag, required=True)
parser.add_argument("--task_index", type=int, required=True)
args = parser.parse_args()
record = {"executable": sys.executable, "prefix": sys.prefix,
          "real_prefix": os.path.realpath(sys.prefix), "marker": tfyarn_env_marker.TOKEN,
          "role": os.environ.get("TFYARN_ROLE"), "reader": tfyarn.data.__file__,
          "shard": None if args.job_name == "ps" else vars(tfyarn.data.task_shard())}
path = os.path.join(args.work_dir, f"env_{args.job_name}_{args.task_index}.json")
with open(path + ".tmp", "w") as f:
    json.dump(record, f)
os.replace(path + ".tmp", path)
app = skein.ApplicationClient.from_current()
app.kv.put(f"envtest/{args.job_name}_{args.task_index}", path.encode())
if args.job_name == "ps":
    while True:
        time.sleep(1)
if record["role"] == "chiefworker":
    tasks = len(args.ps_hosts.split(",")) + len(args.worker_hosts.split(","))
    deadline = time.time() + 120
    while time.time() < deadline and len(app.kv.get_prefix("envtest/")) < tasks:
        time.sleep(0.2)
'''
TASKS = {"env_ps_0", "env_worker_0", "env_worker_1", "env_worker_2"}


@pytest.fixture(scope="module")
def packed_env(tmp_path_factory) -> tuple[Path, str]:
    """A small venv of the system Python with skein and hdfs-native (pinned to the versions
    tfyarn runs with: its code in the containers imports both) and a marker module, packed
    with venv-pack; no TensorFlow, so that it stays small."""
    venv_pack = pytest.importorskip("venv_pack")
    root = tmp_path_factory.mktemp("pyenv")
    venv = root / "venv"
    # of the system Python, which every node has at the same path (venv-pack links to it)
    make_venv(venv, barenodes.pins())
    token = uuid.uuid4().hex
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "tfyarn_env_marker.py").write_text(f"TOKEN = {token!r}\n")
    archive = root / "tfyarn-test-env.tar.gz"
    venv_pack.pack(prefix=str(venv), output=str(archive), verbose=False)
    return archive, token


def submit_with_env(yarn_cluster, tmp_path: Path, archive: Path) -> tuple[str, str, JobFiles]:
    """`tfyarn submit --wait --python-env ARCHIVE` on the seed files with ENV_SCRIPT."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "env_task.py").write_text(ENV_SCRIPT)
    resources, app_config = prepare_job(tmp_path, scripts_dir=scripts, entry="env_task.py")
    run = submit_and_wait(yarn_cluster, tmp_path, resources, app_config,
                          "--python-env", str(archive))
    assert run.returncode == 0, run.output
    assert f"{run.app_id} SUCCEEDED" in run.output, run.output
    return run.app_id, run.output, run.files


def assert_ran_in_env(files: JobFiles, token: str, sha: str) -> set[str]:
    """Every task ran the packed env's interpreter; returns the unpacked copies they used."""
    paths = files.glob("env_*.json")  # each in its own container's work dir, on its host
    records = {p.stem: read_json(p) for p in paths}
    assert set(records) == TASKS and len(paths) == len(TASKS), sorted(map(str, paths))
    for name, record in records.items():
        assert record["marker"] == token, name
        # tfyarn.data came with the job (the env has no tfyarn), and sharded by TF_CONFIG
        assert "site-packages" not in record["reader"], record
        assert record["reader"].endswith("/tfyarn/data/__init__.py"), record
        shard = None if "_ps_" in name else {"index": int(name[-1]), "count": 3}
        assert record["shard"] == shard, record
        assert Path(record["prefix"]).name == envs.ENV_DIR, record
        assert record["executable"] == str(Path(record["prefix"]) / "bin" / "python"), record
        # ./pyenv links to the NodeManager's unpacked copy of the cached archive.
        assert Path(record["real_prefix"]).name == f"{sha}.tar.gz", record
        # PRIVATE: kept per node and user (usercache/<user>/filecache), not per application.
        assert "/filecache/" in record["real_prefix"], record
        assert "/appcache/" not in record["real_prefix"], record
    return {record["real_prefix"] for record in records.values()}


def fs_mtime(env: dict[str, str], url: str) -> str:
    result = subprocess.run(["hadoop", "fs", "-stat", "%Y", url], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def unpacked_copies(layout: Layout, sha: str) -> dict[str, set[str]]:
    """NodeManager name -> its unpacked copies of the archive (one per node and user, when
    YARN reuses them: PRIVATE resources are kept in usercache/<user>/filecache)."""
    return {nm.name: {str(p.resolve()) for p in layout.node_dir(nm).glob(
                f"local/usercache/*/filecache/*/{sha}.tar.gz")}
            for nm in layout.node_managers}


@pytest.mark.yarn
def test_jobs_run_in_the_packed_env_uploaded_once(yarn_cluster, packed_env, tmp_path: Path):
    archive, token = packed_env
    sha = envs.sha256_file(archive)
    # The copy goes to the cluster's HDFS, the one file system every host reads.
    assert envs.default_fs(yarn_cluster.env) == yarn_cluster.layout.default_fs
    url = envs.cached_archive_url(envs.default_fs(yarn_cluster.env),
                                  envs.cluster_user(yarn_cluster.env), sha, ".tar.gz")
    try:
        first_dir, second_dir = tmp_path / "first", tmp_path / "second"
        first_dir.mkdir()
        second_dir.mkdir()
        _, output, files = submit_with_env(yarn_cluster, first_dir, archive)
        assert f"Python env {archive}: uploaded to {url}" in output
        unpacked = assert_ran_in_env(files, token, sha)
        first_copies = unpacked_copies(yarn_cluster.layout, sha)
        assert unpacked <= set().union(*first_copies.values()), (unpacked, first_copies)
        mtime = fs_mtime(yarn_cluster.env, url)

        time.sleep(1.0)  # a copy now would show in the modification time (ms)
        _, output, files = submit_with_env(yarn_cluster, second_dir, archive)
        assert f"Python env {archive}: already at {url} (same sha256), not uploaded again" in (
            output
        )
        assert fs_mtime(yarn_cluster.env, url) == mtime
        # The nodes reuse what they unpacked for the first job: no node unpacked it again,
        # and the second job's tasks ran from copies made for the first.
        again = assert_ran_in_env(files, token, sha)
        second_copies = unpacked_copies(yarn_cluster.layout, sha)
        for node, copies in first_copies.items():
            if copies:
                assert second_copies[node] == copies, (node, first_copies, second_copies)
        assert all(len(copies) <= 1 for copies in second_copies.values()), second_copies
        assert again & unpacked, (again, unpacked)
    finally:
        subprocess.run(["hadoop", "fs", "-rm", "-f", url], env=yarn_cluster.env,
                       capture_output=True, timeout=120)
