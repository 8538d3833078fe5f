"""A job's environment on the cluster: its packed env uploaded, or this interpreter's
shipped in layers, and its Docker settings.

tfyarn/submission/environments.py knows packed envs and Docker images on their own; this
module applies them to a job (a JobConfig).
"""

from __future__ import annotations

from collections.abc import Callable

from tfyarn.jobconfig import JobConfig
from tfyarn.submission import envpack, frameworks, layership
from tfyarn.submission.environments import (
    JobEnvironment,
    ensure_uploaded,
    master_python,
    ships_own_env,
)


def check_frameworks(job: JobConfig) -> None:
    """Refuse a job whose script imports a framework (TensorFlow, PyTorch, JAX), or whose
    site.global.framework names one, that the env tfyarn would ship, this interpreter's,
    lacks; nothing to check where the job names its own Python or runs in a Docker image."""
    spec, client = job.spec, job.client
    if not ships_own_env(spec.python, client.python_env) or spec.docker_image:
        return
    env = envpack.current_env()
    frameworks.check_shipped_env(client.entry_path, client.scripts_dir, env.site_dirs,
                                 env.prefix, spec.framework)


def prepare(job: JobConfig, task_python: str,
            echo: Callable[[str], None] = print) -> JobEnvironment:
    """Uploads the packed env unless the cluster has it; what application_spec needs."""
    spec, python_env = job.spec, job.client.python_env
    url, layers, master_layers = None, (), None
    shipped = ships_own_env(spec.python, python_env)
    if shipped:
        env = ship_this_env(echo, spec.layers_dir, spec.layers_trust)
        layers, master_layers = env.layers, env.master_layers
    elif python_env is not None:
        env = ensure_uploaded(python_env)
        if env.uploaded:
            echo(f"Python env {python_env}: uploaded to {env.url}")
        else:
            echo(f"Python env {python_env}: already at {env.url} (same sha256), "
                 "not uploaded again")
        url = env.url
    return JobEnvironment(
        python_env_url=url,
        docker_image=spec.docker_image,
        docker_mounts=spec.docker_mounts,
        master_python=master_python(task_python, shipped, spec.docker_image),
        layers=layers,
        master_layers=master_layers,
    )


def ship_this_env(echo: Callable[[str], None] = print, shared_url: str | None = None,
                  trusted: tuple[str, ...] | None = None) -> layership.ShippedEnv:
    """This interpreter's environment on the cluster, in layers each packed (once per
    content, kept in ~/.cache/tfyarn/envs) and uploaded unless the cluster has it
    (envlayers.py, layership.py; in a directory all users share: sharedlayers.py)."""
    return layership.ship(envpack.current_env(), echo, shared_url=shared_url, trusted=trusted)
