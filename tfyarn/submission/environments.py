"""Per-job Python environments and Docker images for the job's containers.

A packed environment (a virtualenv packed by venv-pack, or a conda env packed by conda-pack)
is copied once to the cluster's default filesystem, under its content's sha256, and YARN
unpacks it as ``./pyenv`` in every container of the job: the AppMaster and the tasks all run
its interpreter. Two jobs on one cluster can so use two TensorFlow versions. tfyarn's own
code in the containers needs the standard library and hdfs-native there, and the AppMaster's
also skein (with setuptools on Python 3.12+: skein imports distutils); the training script
needs TensorFlow.

A Docker image runs the tasks (not the AppMaster, which is skein's Java process) in YARN's
Docker container runtime; see Hadoop's "Launching Applications Using Docker Containers".
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import tarfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tfyarn.errors import TfyarnError
from tfyarn.hadoop import hadoopconf
from tfyarn.jobconfig.envvalues import (
    ARCHIVE_SUFFIXES,
    archive_kind,
    docker_mount_problem,
)

ENV_DIR = "pyenv"  # the name the packed environment is unpacked under in every container
# What YARN unpacks (by the resource's name), longest first: ".tar.gz" before ".tar".
CACHE_DIR = ".tfyarn/envs"  # under the user's home directory on the default filesystem
# The interpreter inside an archive: venv-pack and conda-pack put the env at its top; an
# archive of the env's directory has it one level down.
_PYTHON_MEMBER = re.compile(r"(?:[^/]+/)?bin/python3?")
_ENV_NEEDS = "the env must contain skein and hdfs-native (tfyarn's code in the containers " \
             "imports them; on Python 3.12+ also setuptools, for skein's distutils) and " \
             "TensorFlow (for the training script)"

DOCKER_NETWORK = "host"  # tasks are reached at their node's address: no bridged ports

class JobEnvironmentError(TfyarnError, RuntimeError):
    """The packed env or the Docker settings cannot be used; the message says what to do."""


# ---------------------------------------------------------------- the archive


def archive_suffix(path: str | os.PathLike[str]) -> str:
    """The archive kind by its name (".tar.gz", ".tgz", ".tar" or ".zip"), as YARN reads it."""
    if suffix := archive_kind(path):
        return suffix
    raise JobEnvironmentError(
        f"{path}: not an archive YARN can unpack.",
        hint="pack the env with venv-pack or conda-pack into a .tar.gz (or .tgz, .tar, .zip) "
        "file, e.g. `venv-pack -p ENV -o env.tar.gz` or `conda pack -n ENV -o env.tar.gz`.")


def python_member(names: Sequence[str]) -> str | None:
    """The interpreter among an archive's member names: the shallowest bin/python, else
    bin/python3; None when there is none."""
    found = [n.removeprefix("./") for n in names if _PYTHON_MEMBER.fullmatch(n.removeprefix("./"))]
    if not found:
        return None
    return min(found, key=lambda n: (n.count("/"), not n.endswith("/python"), n))


def archive_python(archive: str | os.PathLike[str]) -> str:
    """The interpreter's path inside the archive, e.g. "bin/python"; raises JobEnvironmentError."""
    path = Path(archive)
    suffix = archive_suffix(path)
    if not path.is_file():
        raise JobEnvironmentError(f"{path}: no such file.",
                                  hint="give the path of the packed env.")
    try:
        if suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        else:
            names = []
            with tarfile.open(path, "r:*") as tar:
                for member in tar:  # streams: stop at the usual place instead of reading all
                    names.append(member.name)
                    if member.name.removeprefix("./") == "bin/python":
                        break
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        raise JobEnvironmentError(f"{path}: cannot read the archive ({exc}).",
                                  hint="pack the env again.") from exc
    member = python_member(names)
    if member is None:
        raise JobEnvironmentError(
            f"{path}: no bin/python in the archive, so it is no packed Python env.",
            hint=f"pack a virtualenv with venv-pack or a conda env with conda-pack; {_ENV_NEEDS}.")
    return member


def python_in_env(member: str) -> str:
    """The interpreter in a container (relative to its working directory)."""
    return f"./{ENV_DIR}/{member}"


SHIPPED_MEMBER = "bin/python"  # the interpreter in the env tfyarn packs itself (envpack.py)


def task_python(env_member: str | None, python: str | None, docker_image: str | None) -> str:
    """The interpreter the tasks run: the packed env's, else the configured one (the same
    path on every node), else the image's python3 in Docker, else that of the environment
    tfyarn packs and ships (tfyarn/submission/envpack.py)."""
    if env_member is not None:
        return python_in_env(env_member)
    if python:
        return python
    if docker_image:
        return "python3"
    return python_in_env(SHIPPED_MEMBER)


def ships_own_env(python: str | None, python_env: object | None) -> bool:
    """Neither an interpreter every node has nor a ready archive: tfyarn ships its own."""
    return python is None and python_env is None


def master_python(task_python: str, shipped_env: bool, docker_image: str | None) -> str:
    """The AppMaster's interpreter. It never runs in Docker: with an image whose python3 the
    tasks run, it runs the env tfyarn ships, else the configured interpreter."""
    if docker_image and shipped_env:
        return python_in_env(SHIPPED_MEMBER)
    return task_python


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- the cluster's copy


def default_fs(environ: Mapping[str, str] | None = None) -> str:
    """The cluster's default filesystem, e.g. hdfs://namenode:8020, from core-site.xml."""
    conf = hadoopconf.client_configuration(environ)
    value = conf.get("fs.defaultFS") or conf.get("fs.default.name")  # the latter: old name
    if value:
        return check_default_fs(value)
    raise JobEnvironmentError(
        "cannot tell the cluster's default filesystem: no fs.defaultFS in core-site.xml in "
        + ", ".join(map(str, hadoopconf.conf_dirs(environ))) + ".",
        hint="set HADOOP_CONF_DIR to the cluster's client configuration.")


def check_default_fs(url: str) -> str:
    """A default filesystem every node reaches, written as scheme://authority."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc or parts.scheme == "file":
        raise JobEnvironmentError(
            f"the cluster's default filesystem is {url!r}: the packed env must go where every "
            "node reads it, such as hdfs://namenode:8020.",
            hint="set fs.defaultFS in core-site.xml (HADOOP_CONF_DIR) to the cluster's "
            "filesystem.")
    return f"{parts.scheme}://{parts.netloc}"


def cluster_user(environ: Mapping[str, str] | None = None) -> str:
    """The user the cluster sees (skein's driver honours HADOOP_USER_NAME as Hadoop does)."""
    environ = os.environ if environ is None else environ
    return environ.get("HADOOP_USER_NAME") or getpass.getuser()


def cache_url(name: str, fs_default: str | None = None, user: str | None = None,
              cache_dir: str = CACHE_DIR) -> str:
    """<default filesystem>/user/<user>/<cache_dir>/<name>."""
    fs_default = check_default_fs(fs_default or default_fs())
    return f"{fs_default}/user/{user or cluster_user()}/{cache_dir}/{name}"


def cached_archive_url(default_fs: str, user: str, sha256: str, suffix: str,
                       cache_dir: str = CACHE_DIR) -> str:
    """<default filesystem>/user/<user>/<cache_dir>/<sha256><suffix>."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    if suffix not in ARCHIVE_SUFFIXES:
        raise ValueError(f"not one of {ARCHIVE_SUFFIXES}: {suffix!r}")
    return cache_url(f"{sha256}{suffix}", default_fs, user, cache_dir)


@dataclass(frozen=True)
class UploadedEnv:
    url: str  # on the cluster's default filesystem, used in place by skein
    sha256: str
    uploaded: bool  # False: an earlier job had already uploaded the same content


UPLOAD_TIMEOUT_S = 3600.0
# Every node of a job reads the env and code at once: more copies than HDFS's usual 3, as
# MapReduce does for job files (mapreduce.client.submit.file.replication).
REPLICATION = 10


def ensure_uploaded(archive: str | os.PathLike[str], *, fs_default: str | None = None,
                    user: str | None = None, cache_dir: str = CACHE_DIR,
                    private: bool = False, what: str = "the packed env") -> UploadedEnv:
    """The archive's URL on the default filesystem, copying it there (HDFS's native client,
    no JVM) unless its content (by sha256) already is (see upload_once).
    ``private``: the cache directory is its owner's alone (0700), as skein's staging
    directory is, for what other users must not read (the job's scripts)."""
    path = Path(archive)
    suffix = archive_suffix(path)
    sha = sha256_file(path)
    url = cached_archive_url(fs_default or default_fs(), user or cluster_user(), sha, suffix,
                             cache_dir)
    return UploadedEnv(url, sha, upload_once(path, url, private=private, what=what))


def is_on_cluster(url: str, what: str = "the packed env") -> bool:
    """Whether the cache on the cluster holds ``url`` (complete: uploads are renamed)."""
    from appmaster.common.storage import RemoteDir, StorageError, bounded

    directory, name = url.rsplit("/", 1)
    try:
        return bounded(lambda: RemoteDir(directory).exists(name), what=f"HDFS ({directory})")
    except StorageError as exc:
        raise _upload_error(what, url, directory, exc) from None


def upload_once(path: Path, url: str, *, private: bool = False, what: str = "the packed env",
                progress: Callable[[int, int], None] | None = None) -> bool:
    """Copy ``path`` to ``url`` unless it is there; False when it was. Concurrent uploads of
    one archive are safe: each copies to a name of its own and renames it into place; the
    first rename wins and the others' copies are dropped (a file a job named must never
    change under it), so a half-written archive is never used."""
    from appmaster.common.storage import RemoteDir, StorageError, bounded

    directory, name = url.rsplit("/", 1)
    try:
        remote = RemoteDir(directory)
        if private:
            bounded(lambda: remote.make_private(), what=f"HDFS ({directory})")
        if bounded(lambda: remote.exists(name), what=f"HDFS ({directory})"):
            return False
        with open(path, "rb") as source:
            bounded(lambda: remote.upload(source, name, replace=False, replication=REPLICATION,
                                          progress=progress),
                    UPLOAD_TIMEOUT_S, what=f"HDFS ({directory})")
    except StorageError as exc:
        if isinstance(exc.__cause__, FileExistsError):
            return False  # another submission was first
        raise _upload_error(what, url, directory, exc) from None
    return True


def _upload_error(what: str, url: str, directory: str, exc: Exception) -> JobEnvironmentError:
    return JobEnvironmentError(
        f"cannot copy {what} to {url}: {exc}.",
        hint=f"check that HDFS is reachable from here and that you may write in {directory}.")


def env_file(url: str):
    """The skein file for the packed env: unpacked by YARN as ./pyenv. PRIVATE visibility
    lets each node keep the unpacked env for the user's later jobs while it is unchanged."""
    import skein

    return skein.File(url, type="archive", visibility="private")


# ---------------------------------------------------------------- Docker


def docker_environment(image: str, mounts: Sequence[str] = ()) -> dict[str, str]:
    """The environment that has YARN's Docker runtime run a container in the image.

    The image needs a python with hdfs-native (tfyarn's agent imports it; not skein: the
    agent talks to the master without it, appmaster/common/agentlink.py) and TensorFlow, or a
    packed env that runs in it (conda-pack's are self-contained; venv-pack's link to a
    python at the same path). The network is the host's: tasks are reached at their node's
    address. The container's working directory (with the packed env) is mounted by YARN;
    other mounts must be on the NodeManagers' docker.allowed.ro-mounts/rw-mounts lists.
    """
    image = image.strip()
    if not image or any(c.isspace() for c in image):
        raise ValueError(f"not a Docker image name: {image!r}")
    for mount in mounts:
        if problem := docker_mount_problem(mount):
            raise ValueError(problem)
    env = {
        "YARN_CONTAINER_RUNTIME_TYPE": "docker",
        "YARN_CONTAINER_RUNTIME_DOCKER_IMAGE": image,
        "YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK": DOCKER_NETWORK,
    }
    if mounts:
        env["YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"] = ",".join(mounts)
    return env


# ---------------------------------------------------------------- all of it, for the spec


@dataclass(frozen=True)
class JobEnvironment:
    """What the containers run in, beyond the plan: given to appspec.application_spec."""

    python_env_url: str | None = None  # the packed env on the cluster's filesystem
    docker_image: str | None = None  # the tasks' image
    docker_mounts: tuple[str, ...] = ()
    master_python: str | None = None  # None: the plan's python
    # The layers of the env tfyarn ships (layership.py): (directory, URL, visibility).
    layers: tuple[tuple[str, str, str], ...] = ()
    # Those the AppMaster's container needs (masterlayers.py); None: all of them.
    master_layers: tuple[tuple[str, str, str], ...] | None = None

    def files(self) -> dict:
        """What a task's container is given to run its Python."""
        return self._files(self.layers)

    def master_files(self) -> dict:
        """What the AppMaster's container is given to run its Python."""
        return self._files(self.layers if self.master_layers is None else self.master_layers)

    def _files(self, layers: tuple[tuple[str, str, str], ...]) -> dict:
        import skein

        files = {link: skein.File(url, type="archive", visibility=visibility)
                 for link, url, visibility in layers}
        if self.python_env_url is not None:
            files[ENV_DIR] = env_file(self.python_env_url)
        return files

    def task_env(self) -> dict[str, str]:
        if self.docker_image is None:
            return {}
        return docker_environment(self.docker_image, self.docker_mounts)
