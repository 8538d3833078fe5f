"""A job's environment from its settings and `tfyarn submit`'s options.

tfyarn/submission/environments.py knows packed envs and Docker images on their own; this
module applies them to a job (a JobConfig). Kept apart so that environments does not depend
on jobconfig, which reads its helpers to check appConfig.json.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from tfyarn.jobconfig import JobConfig
from tfyarn.submission import envpack, frameworks, layership
from tfyarn.submission.environments import (
    JobEnvironment,
    JobEnvironmentError,
    archive_suffix,
    docker_mount_problem,
    ensure_uploaded,
    master_python,
    ships_own_env,
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


def check_frameworks(job: JobConfig) -> None:
    """Refuse a job whose script imports a framework (TensorFlow) that the env tfyarn would
    ship, this interpreter's, lacks; nothing to check where the job names its own Python or
    runs in a Docker image."""
    app = job.app
    if not ships_own_env(app.python, app.python_env) or app.docker_image:
        return
    env = envpack.current_env()
    frameworks.check_shipped_env(app.entry_path, app.scripts_dir, env.site_dirs, env.prefix)


def prepare(job: JobConfig, task_python: str,
            echo: Callable[[str], None] = print) -> JobEnvironment:
    """Uploads the packed env unless the cluster has it; what application_spec needs."""
    app = job.app
    url, layers = None, ()
    shipped = ships_own_env(app.python, app.python_env)
    if shipped:
        layers = ship_this_env(echo, app.layers_dir, app.layers_trust).layers
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
        layers=layers,
    )


def ship_this_env(echo: Callable[[str], None] = print, shared_url: str | None = None,
                  trusted: tuple[str, ...] | None = None) -> layership.ShippedEnv:
    """This interpreter's environment on the cluster, in layers each packed (once per
    content, kept in ~/.cache/tfyarn/envs) and uploaded unless the cluster has it
    (envlayers.py, layership.py; in a directory all users share: sharedlayers.py)."""
    return layership.ship(envpack.current_env(), echo, shared_url=shared_url, trusted=trusted)
