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
from tfyarn.errors import NOTHING_SUBMITTED, in_context
from tfyarn.hadoop import haconf, hadoopconf
from tfyarn.hadoop.driver import DriverSettings, driver_settings, skein_client
from tfyarn.hadoop.driver import submit as submit_to_yarn
from tfyarn.jobconfig import JobConfig, load_job
from tfyarn.jobconfig.datasets import DATA_OPTION, with_data
from tfyarn.jobconfig.defaults import where_set
from tfyarn.jobconfig.overrides import Override, parse_set
from tfyarn.security import kerberos
from tfyarn.submission import jobenv, preflight, workdir
from tfyarn.submission.plan import Placement, build_plan, plan_document

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

    def overrides(self) -> list[Override]:
        """The settings the command line gives: the options that stand for one, then each
        --set (checked here: a bad one raises JobConfigError naming it)."""
        options = [("site.global.queue", self.queue, "--queue"),
                   ("site.global.app.name", self.name, "--name"),
                   ("slider-appmaster.yarn.memory", self.am_memory, "--am-memory"),
                   ("slider-appmaster.yarn.vcores", self.am_vcores, "--am-vcores")]
        return [*(Override(key, str(value), option) for key, value, option in options
                  if value is not None),
                *(parse_set(text) for text in self.sets)]

    def given(self) -> frozenset[str]:
        """The AppMaster options set here, by their CLI names (pre-flight names them)."""
        options = {"--am-memory": self.am_memory, "--am-vcores": self.am_vcores,
                   "--am-label": self.am_label}
        return frozenset(option for option, value in options.items() if value is not None)


@dataclass(frozen=True)
class PlannedJob:
    """A checked job, ready to submit: its files read, its plan made, the cluster asked."""

    job: JobConfig
    plan: JobPlan
    placement: Placement
    preflight: preflight.Preflight

    def document(self) -> dict:
        """The dry run's document: the plan, and the pre-flight check under "preflight"."""
        document = plan_document(self.job, self.plan, self.placement)
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
               driver: DriverSettings | None = None) -> str:
        """Hand the job to YARN with an open skein.Client (started with ``driver``); its
        application id."""
        return submit_to_yarn(client, self.job, self.plan, self.placement, environment, driver)


def plan_job(resources: FilePath, app_config: FilePath,
             options: SubmitOptions = SubmitOptions()) -> PlannedJob:
    """Read, check and plan the job, and ask the cluster; submits nothing."""
    with in_context(NOTHING_SUBMITTED):
        job = with_data(load_job(resources, app_config, overrides=options.overrides()),
                        options.data)
        # the job's Python env and Docker image (tfyarn/submission/jobenv.py)
        job = jobenv.with_overrides(job, options.python_env, options.docker_image,
                                    options.docker_mounts)
        plan = build_plan(job, default_label=options.am_label, extra_args=options.script_args)
        if not options.skip_preflight:
            jobenv.check_frameworks(job)  # a thin client's env without TensorFlow, say
            hadoopconf.check_present()  # before a local work dir is picked for want of one
        conf = hadoopconf.client_configuration()
        kerberos.check_login(conf)  # before HDFS is asked
        haconf.check_client(conf, ", ".join(map(str, hadoopconf.conf_dirs())))
        workdir.check_plan(  # on HDFS: reachable, writable; the data there
            plan, data_key=DATA_OPTION if options.data else workdir.DATA_KEY,
            checkpoint_prefix=bool(job.app.checkpoint_prefix))
    placement = Placement(queue=job.app.queue, tags=options.tags,
                          am_memory_mb=job.am_memory_mb, am_vcores=job.am_vcores,
                          am_label=options.am_label, view_acl=job.app.view_acl,
                          modify_acl=job.app.modify_acl, web_login=hadoopconf.web_login(conf))
    # Pre-flight against the live cluster (tfyarn/submission/preflight.py), naming what the
    # user wrote.
    queue_source = where_set(job.settings, str(app_config), "site.global.queue")
    if options.skip_preflight:
        return PlannedJob(job, plan, placement, preflight.Preflight(
            False, skipped_reason="--skip-preflight was given"))
    with in_context(NOTHING_SUBMITTED):  # no active RM of an HA pair, say
        checked = preflight.run_preflight(
            preflight.job_requests(job, plan, placement, options.given()), placement.queue,
            queue_source)
    return PlannedJob(job, plan, placement, checked)


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
                            script_args=tuple(script_args))
    driver = driver_settings(principal, keytab)
    planned = plan_job(resources, app_config, options)
    environment = planned.prepare(echo)
    with nullcontext(client) if client is not None else skein_client(driver) as yarn:
        return planned.submit(yarn, environment, driver)
