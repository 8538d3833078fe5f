"""A job's environment from its settings and `tfyarn submit`'s options.

tfyarn/submission/environments.py knows packed envs and Docker images on their own; this
module applies them to a job (a JobConfig). Kept apart so that environments does not depend
on jobconfig, which reads its helpers to check appConfig.json.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from tfyarn.jobconfig import JobConfig
from tfyarn.submission import envpack
from tfyarn.submission.environments import (
    JobEnvironment,
    JobEnvironmentError,
    archive_suffix,
    cache_url,
    docker_mount_problem,
    ensure_uploaded,
    is_on_cluster,
    master_python,
    ships_own_env,
    upload_once,
)


def with_overrides(job: JobConfig, python_env: str | None, docker_image: str | None,
                   docker_mounts: Sequence[str]) -> JobConfig:
    """The job with submit's --python-env, --docker-image and --docker-mount applied."""
    app = job.app
    if python_env is not None:
        path = Path(os.path.abspath(Path(python_env).expanduser()))
        archive_suffix(path)
        app = replace(app, python_env=path)
    if docker_image is not None:
        if not docker_image.strip() or any(c.isspace() for c in docker_image.strip()):
            raise JobEnvironmentError(f"--docker-image {docker_image!r}: not an image name.",
                                      hint="give one such as tensorflow/tensorflow:2.16.1.")
        app = replace(app, docker_image=docker_image.strip())
    if docker_mounts:
        for mount in docker_mounts:
            if problem := docker_mount_problem(mount):
                raise JobEnvironmentError(f"--docker-mount: {problem}.")
        app = replace(app, docker_mounts=tuple(docker_mounts))
    return replace(job, app=app)


def prepare(job: JobConfig, task_python: str,
            echo: Callable[[str], None] = print) -> JobEnvironment:
    """Uploads the packed env unless the cluster has it; what application_spec needs."""
    app = job.app
    url = None
    shipped = ships_own_env(app.python, app.python_env)
    if shipped:
        url = ship_this_env(echo)
    elif app.python_env is not None:
        env = ensure_uploaded(app.python_env)
        if env.uploaded:
            echo(f"Python env {app.python_env}: uploaded to {env.url}")
        else:
            echo(f"Python env {app.python_env}: already at {env.url} (same sha256), "
                 "not uploaded again")
        url = env.url
    return JobEnvironment(
        python_env_url=url,
        docker_image=app.docker_image,
        docker_mounts=app.docker_mounts,
        master_python=master_python(task_python, shipped, app.docker_image),
    )


def ship_this_env(echo: Callable[[str], None] = print) -> str:
    """The URL of this interpreter's environment on the cluster: packed (once per content,
    kept in ~/.cache/tfyarn/envs) and uploaded unless the cluster has it (envpack.py)."""
    source = envpack.current_env()
    name = envpack.remote_name(envpack.env_key(source))
    url = cache_url(name)
    what = f"this Python environment ({source.prefix})"
    if is_on_cluster(url, what):
        echo(f"Python env: {source.prefix} is on the cluster already ({url})")
        return url
    archive = envpack.cache_dir() / name
    if not archive.is_file():
        echo(f"Python env: packing {source.prefix} with its interpreter for the cluster's "
             "nodes (once: later jobs reuse it)")
        started = time.monotonic()
        size = envpack.pack(source, archive, envpack.TerminalProgress("  packing"))
        echo(f"  packed {envpack.format_size(size)} in {time.monotonic() - started:.0f} s "
             f"({archive})")
        envpack.prune_cache(keep=archive)
    started = time.monotonic()
    if upload_once(archive, url, what=what, progress=envpack.TerminalProgress("  uploading")):
        echo(f"  uploaded to {url} in {time.monotonic() - started:.0f} s")
    else:
        echo(f"  another submit uploaded it first: {url}")
    return url
