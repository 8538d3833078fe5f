"""Read and check a job's two files: resources.json and appConfig.json.

The format is that of Apache Slider's TensorFlow package, so existing Slider job files
load unchanged; the same structure may also be written in YAML (.yaml/.yml). Every
problem found in both files is reported at once, each with a fix, so that users can
correct everything in one go. The cluster's and the person's defaults files
(tfyarn/jobconfig/defaults.py) fill in what the job files leave out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from appmaster.common.jobplan import JobPlan
from appmaster.common.vocabulary import TF_ROLES, Role
from tfyarn.jobconfig.appconfig import parse_app
from tfyarn.jobconfig.defaults import Defaults, effective, read_defaults
from tfyarn.jobconfig.documents import Checker, read_document
from tfyarn.jobconfig.model import (
    APPMASTER,
    COMPONENT_NAMES,
    ClientFacts,
    JobConfig,
    JobConfigError,
    Problem,
    describe_problems,
)
from tfyarn.jobconfig.overrides import OverriddenChecker, Override, apply
from tfyarn.jobconfig.resources import check_roles_fit, check_stall_timeouts, parse_resources

__all__ = [
    "APPMASTER", "COMPONENT_NAMES", "ClientFacts", "Defaults", "JobConfig", "JobConfigError",
    "Override", "Problem", "describe_problems", "load_job", "read_defaults",
]


def load_job(
    resources_path: str | os.PathLike[str],
    app_config_path: str | os.PathLike[str],
    *,
    user: str | None = None,
    defaults: Defaults | None = None,
    overrides: Sequence[Override] = (),
) -> JobConfig:
    """Read both job files, raising JobConfigError with every problem in them, in the
    defaults files and in the command line's ``overrides``.

    `user` replaces ${USER_NAME} in the work dir; None means the current user. `defaults`
    fill in what the files leave out; None reads the cluster's and the person's files
    (read_defaults), Defaults() means none. `overrides` (--set and the options that stand
    for a setting) beat every file.
    """
    if defaults is None:
        defaults = read_defaults()
    problems: list[Problem] = list(defaults.problems)
    resources_doc = read_document(Checker(str(resources_path), problems), Path(resources_path))
    app_doc = read_document(Checker(str(app_config_path), problems), Path(app_config_path))
    given_resources = None if resources_doc is None else dict(resources_doc)
    given_app = None if app_doc is None else dict(app_doc)
    in_resources, in_app = apply(overrides, given_resources, given_app, problems)
    resources_checker = OverriddenChecker(str(resources_path), problems, in_resources)
    app_checker = OverriddenChecker(str(app_config_path), problems, in_app)
    resources = None if given_resources is None else parse_resources(
        resources_checker, defaults.resources_document(given_resources))
    app = None if given_app is None else parse_app(
        app_checker, defaults.app_document(given_app), Path(app_config_path), user)
    if resources is not None and app is not None:
        check_roles_fit(resources_checker, resources[0], app[0]["framework"])
        check_stall_timeouts(resources_checker, resources[0], app[0]["progress_interval_s"])
    if problems:
        raise JobConfigError(problems)
    assert resources is not None and app is not None  # no problems means both parsed
    components, am_memory_mb, am_vcores, am_label, job_fields = resources
    spec_fields, client_facts = app
    with_tasks = [c for c in components if c.instances > 0]
    side = {c.name: c for c in with_tasks if c.name not in TF_ROLES}
    spec = JobPlan(roles=tuple(c for c in with_tasks if c.name in TF_ROLES),
                   tensorboard=side.get(Role.TENSORBOARD), evaluator=side.get(Role.EVALUATOR),
                   am_memory_mb=am_memory_mb, am_vcores=am_vcores, am_label=am_label,
                   **job_fields, **spec_fields)
    client = ClientFacts(resources_path=Path(resources_path),
                         app_config_path=Path(app_config_path), **client_facts)
    settings = effective(defaults, [(str(resources_path), resources_doc or {}),
                                    (str(app_config_path), app_doc or {})], overrides)
    return JobConfig(spec=spec, client=client, settings=settings)
