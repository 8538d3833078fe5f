"""tfyarn as a library: `submit` a job from Python, as `tfyarn submit` does.

The pipeline, in order: read and check the job's two files, apply the options, make the plan,
check the work dir and data on HDFS, ask the cluster whether it can run the job (pre-flight),
upload the packed Python env, submit through skein. Until YARN has the application, every
failure is a TfyarnError whose `describe()` says that nothing was submitted. The CLI
(tfyarn/cli/jobs.py) runs the same steps and adds the dry run and following the job.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from appmaster.common.jobplan import JobPlan
from appmaster.common.settings import (
    AM_LABEL,
    AM_MEMORY,
    AM_VCORES,
    APP_NAME,
    APPLICATION_PRIORITY,
    DATA,
    DOCKER_IMAGE,
    DOCKER_MOUNTS,
    PYTHON_ENV,
    QUEUE,
)
from appmaster.common.settings import APPMASTER_COMPONENT as APPMASTER
from tfyarn.errors import NOTHING_SUBMITTED, in_context
from tfyarn.hadoop import haconf, hadoopconf
from tfyarn.hadoop.driver import DriverSettings, driver_settings, skein_client
from tfyarn.jobconfig import JobConfig, load_job
from tfyarn.jobconfig.datasets import DATA_OPTION
from tfyarn.jobconfig.defaults import where_set
from tfyarn.jobconfig.documents import COMMAND_LINE
from tfyarn.jobconfig.overrides import Override, parse_set
from tfyarn.security import kerberos
from tfyarn.submission import amneeds, jobenv, preflight, workdir
from tfyarn.submission.launch import set_priority
from tfyarn.submission.launch import submit as submit_to_yarn
from tfyarn.submission.plan import AppSpecExtras, build_plan, plan_document

log = logging.getLogger(__name__)
FilePath = str | os.PathLike[str]


@dataclass(frozen=True)
class SubmitOptions:
    """What `tfyarn submit`'s options add to the job's files; None: as the files say."""

    name: str | None = None
    queue: str | None = None
    tags: tuple[str, ...] = ()
    am_memory: int | None = None
    am_vcores: int | None = None
    am_label: str | None = None
    python_env: str | None = None
    docker_image: str | None = None
    docker_mounts: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()  # --set KEY=VALUE, as typed
    # after site.global.user.scripts.args, for every task (`tfyarn submit ... -- ARGS`)
    script_args: tuple[str, ...] = ()
    # the job files alone: ask the cluster nothing (no Hadoop configuration needed), and do
    # not check what would run (the shipped env's framework)
    skip_preflight: bool = False

    # with --keytab: who the job gets new HDFS tokens as, past its tokens' maximum lifetime
    principal: str | None = None

    def overrides(self) -> list[Override]:
        """The settings the command line gives: the options that stand for one, then each
        --set (checked here: a bad one raises JobConfigError naming it). Each is checked
        with the job files, as if written there, and named by its option in messages and
        in the dry run's list of where each setting came from."""
        python_env = None if self.python_env is None else os.path.abspath(
            os.path.expanduser(self.python_env))  # from here, not from appConfig.json's dir
        options = [(QUEUE.key, self.queue, "--queue"), (APP_NAME.key, self.name, "--name"),
                   (f"{APPMASTER}.{AM_MEMORY.key}", self.am_memory, "--am-memory"),
                   (f"{APPMASTER}.{AM_VCORES.key}", self.am_vcores, "--am-vcores"),
                   (f"{APPMASTER}.{AM_LABEL.key}", self.am_label, "--am-label"),
                   (PYTHON_ENV.key, python_env, "--python-env"),
                   (DOCKER_IMAGE.key, self.docker_image, "--docker-image"),
                   (DOCKER_MOUNTS.key, list(self.docker_mounts) or None, "--docker-mount"),
                   (DATA.key, list(self.data) or None, DATA_OPTION)]
        return [*(Override(key, value if isinstance(value, list) else str(value), option)
                  for key, value, option in options if value is not None),
                *(parse_set(text) for text in self.sets)]


@dataclass(frozen=True)
class PlannedJob:
    """A checked job, ready to submit: its files read, its plan made, the cluster asked."""

    job: JobConfig
    plan: JobPlan
    extras: AppSpecExtras
    preflight: preflight.Preflight

    def document(self) -> dict:
        """The dry run's document: the plan, and the pre-flight check under "preflight"."""
        document = plan_document(self.job, self.plan, self.extras)
        document["preflight"] = self.preflight.to_json()
        return document

    def check_runnable(self) -> None:
        """Raises PreflightRefused, naming every problem, if the cluster cannot run it."""
        if self.preflight.problems:
            raise preflight.PreflightRefused(self.preflight)

    def prepare(self, echo: Callable[[str], None]) -> jobenv.JobEnvironment:
        """Refuse what the cluster cannot run, echo the pre-flight's line(s), upload the
        packed Python env (unless the cluster has it): what `submit` needs next."""
        self.check_runnable()
        for line in self.preflight.lines():
            echo(line)
        with in_context(NOTHING_SUBMITTED):
            return jobenv.prepare(self.job, self.plan.python, echo)

    def submit(self, client, environment: jobenv.JobEnvironment,
               driver: DriverSettings | None = None,
               echo: Callable[[str], None] = log.info) -> str:
        """Hand the job to YARN with an open skein.Client (started with ``driver``); its
        application id. ``echo`` gets the line on its priority, if it asked for one."""
        app_id = submit_to_yarn(client, self.job, self.plan, self.extras, environment,
                                driver)
        priority = self.plan.value(APPLICATION_PRIORITY)
        if priority is not None:
            echo(set_priority(app_id, priority, preflight.submitting_user()))
        return app_id


def plan_job(resources: FilePath, app_config: FilePath,
             options: SubmitOptions = SubmitOptions()) -> PlannedJob:
    """Read, check and plan the job, and ask the cluster; submits nothing."""
    with in_context(NOTHING_SUBMITTED):
        job = load_job(resources, app_config, overrides=options.overrides())
        plan = build_plan(job, extra_args=options.script_args, principal=options.principal)
        amneeds.check(job, plan)  # skein's stock AppMaster would silently not do it
        if not options.skip_preflight:
            jobenv.check_frameworks(job)  # a thin client's env without TensorFlow, say
            hadoopconf.check_present()  # before a local work dir is picked for want of one
        conf = hadoopconf.client_configuration()
        kerberos.check_login(conf)  # before HDFS is asked
        haconf.check_client(conf, ", ".join(map(str, hadoopconf.conf_dirs())))
        workdir.check_plan(  # on HDFS: reachable, writable; the data there
            plan, named=given_by_options(job, app_config, workdir.KEYS),
            checkpoint_prefix=bool(plan.checkpoint_prefix))
    extras = AppSpecExtras(tags=options.tags, web_login=hadoopconf.web_login(conf))
    # Pre-flight against the live cluster (tfyarn/submission/preflight.py), naming what the
    # user wrote.
    queue_source = where_set(job.settings, str(app_config), QUEUE.key)
    if options.skip_preflight:
        return PlannedJob(job, plan, extras, preflight.Preflight(
            False, skipped_reason="--skip-preflight was given"))
    with in_context(NOTHING_SUBMITTED):  # no active RM of an HA pair, say
        priority = plan.value(APPLICATION_PRIORITY)
        checked = preflight.run_preflight(
            preflight.job_requests(job, plan, extras), plan.queue,
            queue_source, None if priority is None else preflight.PriorityAsk(
                priority, where_set(job.settings, str(app_config),
                                    APPLICATION_PRIORITY.key)))
    return PlannedJob(job, plan, extras, checked)


def given_by_options(job: JobConfig, app_config: FilePath,
                     keys: Sequence[str]) -> dict[str, str]:
    """The settings among ``keys`` that the command line gave, each -> its option (--data,
    --set KEY): what messages about their values name instead of the key."""
    where = {key: where_set(job.settings, str(app_config), key) for key in keys}
    return {key: option for key, (file, option) in where.items() if file == COMMAND_LINE}


def submit(resources: FilePath = "resources.json", app_config: FilePath = "appConfig.json", *,
           name: str | None = None, queue: str | None = None, tags: Sequence[str] = (),
           am_memory: int | None = None, am_vcores: int | None = None,
           am_label: str | None = None, python_env: str | None = None,
           docker_image: str | None = None, docker_mounts: Sequence[str] = (),
           data: Sequence[str] = (), sets: Sequence[str] = (),
           script_args: Sequence[str] = (), principal: str | None = None,
           keytab: str | None = None, client=None,
           echo: Callable[[str], None] = log.info) -> str:
    """Submit a distributed TensorFlow job to YARN, as `tfyarn submit --detach` does, and
    return its application id (follow it with skein, `tfyarn status` or the job page).

    ``resources`` and ``app_config`` are the job's two files (Slider's resources.json and
    appConfig.json, or YAML). The keywords are `tfyarn submit`'s options: ``name``,
    ``queue``, ``tags``, ``am_memory`` (MB), ``am_vcores``, ``am_label``, ``python_env`` (a
    packed env's path), ``docker_image``, ``docker_mounts`` ("src:dest[:ro|rw]") and
    ``data`` ("hdfs:///path#name"), ``sets`` (--set's "KEY=VALUE"); ``script_args`` go to
    every task's script after site.global.user.scripts.args (the CLI's arguments after `--`);
    ``principal`` and ``keytab`` log in on a secure cluster as tfyarn's --principal/--keytab
    do (default: the ticket cache from kinit), and give the job the keytab for tokens past
    their maximum lifetime. ``client`` is an open skein.Client to submit with (None: one is
    started, and stopped again). ``echo`` gets the lines the CLI prints on stderr:
    pre-flight notes, the packed env's upload (default: this module's logger, at INFO).

    Raises a TfyarnError (tfyarn.errors) that says what to fix: JobConfigError for the
    files, PreflightRefused when the cluster cannot run the job, SubmitError when YARN
    refuses it, among others. The Hadoop client configuration (HADOOP_CONF_DIR) says
    which cluster.
    """
    options = SubmitOptions(name=name, queue=queue, tags=tuple(tags), am_memory=am_memory,
                            am_vcores=am_vcores, am_label=am_label, python_env=python_env,
                            docker_image=docker_image, docker_mounts=tuple(docker_mounts),
                            data=tuple(data), sets=tuple(sets),
                            script_args=tuple(script_args),
                            principal=principal if keytab else None)
    driver = driver_settings(principal, keytab)
    planned = plan_job(resources, app_config, options)
    environment = planned.prepare(echo)
    with nullcontext(client) if client is not None else skein_client(driver) as yarn:
        return planned.submit(yarn, environment, driver, echo)
