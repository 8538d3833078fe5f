"""The skein ApplicationSpec of a job: one skein service per role, the master as its driver."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

import skein

import appmaster
from appmaster.common.agentlink import TOKEN_FILE, new_token
from appmaster.common.hdfstokens import KEYTAB_FILE, KRB5_CONF_FILE
from appmaster.common.jobplan import (
    DATA_DIR_NAME,
    DATA_ENTRY_PREFIX,
    LOCALIZED_SCRIPTS_DIR,
    PLAN_FILE,
    SECRET_FILE_PREFIX,
    JobPlan,
    RolePlan,
)
from appmaster.common.registry import APPMASTER_BUILD_ENV, CANNOT_START, PLACEMENT_APART_ENV
from appmaster.common.settings import ANTI_AFFINITY_REQUIRED, PYTHON
from tfyarn.hadoop import amjar, skeinui
from tfyarn.hadoop.jvm import LEAN_AM_ENV, QUICK_JVM_OPTIONS, am_java_options
from tfyarn.jobconfig.datasets import is_archive
from tfyarn.submission.codepack import tar_directory
from tfyarn.submission.environments import JobEnvironment
from tfyarn.submission.plan import AppSpecExtras, acl_names, page_users
from tfyarn.submission.workdir import qualified

APPMASTER_DIR = Path(appmaster.__file__).parent
READER_DIR = Path(__file__).parent.parent / "data"  # tfyarn.data, which training scripts import
READER_PACK = "tfyarn"
# tfyarn.preemption and tfyarn.progress: scripts import them
SCRIPT_MODULES = (READER_DIR.parent / "preemption.py", READER_DIR.parent / "progress.py")
# what jax.distributed.initialize() needs to find tfyarn's cluster (tfyarn/jaxcluster.py)
JAX_CLUSTER_MODULE = READER_DIR.parent / "jaxcluster.py"
JAX_STARTUP_DIR = READER_DIR.parent / "jaxstartup"


LAUNCH_ERROR_FILE = "tfyarn-launch.stderr"  # YARN quotes a failed container's *stderr*


def _launch(plan: JobPlan, module: str, python: str | None = None) -> str:
    """Shell lines skein runs in a container: our shipped code first on the path, and the
    interpreter checked before it is run."""
    python = python or plan.python
    return (
        'export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"\n'
        f"{interpreter_check(python, module)}"
        f"exec {python} -m {module}\n"
    )


def interpreter_check(python: str, module: str) -> str:
    """Shell lines that end the container with a message naming the interpreter, the node
    and both fixes when the interpreter is not there, instead of the shell's bare "not
    found". A task's agent then runs on the node's own python3 only to tell the master why
    (skein hides a failed container's diagnostics behind "see logs"); the message also goes
    to a *stderr* file of the container's logs. For the AppMaster, `tfyarn submit --wait`
    and `status` read it from its log (jobview.launch_failure)."""
    what = "the AppMaster" if module == "appmaster.master.main" else "this task"
    message = (
        f"tfyarn: cannot start {what}: the interpreter %s does not exist on node %s. "
        "Fix: install Python with TensorFlow, skein and hdfs-native at that path on every "
        f"node (or in the Docker image), or remove {PYTHON.key} from appConfig.json "
        "(and your defaults files: tfyarn config) so that tfyarn packs and ships your "
        "environment; or give a packed env with --python-env.")
    quoted = shlex.quote(python)
    report = ""
    if module == "appmaster.agent.main":
        report = (f"  if command -v python3 >/dev/null 2>&1; then exec python3 -m {module} "
                  f'{CANNOT_START} "$message"; fi\n')
    return (
        f"if ! command -v {quoted} >/dev/null 2>&1; then\n"
        f"  message=$(printf {shlex.quote(message)} {quoted} \"${{NM_HOST:-$(hostname)}}\")\n"
        f'  printf "%s\\n" "$message" | tee -a "${{LOG_DIRS%%,*}}/{LAUNCH_ERROR_FILE}" >&2\n'
        f"{report}"
        "  exit 127\n"
        "fi\n"
    )


def reader_package(into: Path) -> Path:
    """A package ``tfyarn`` holding only what scripts import (tfyarn.data, tfyarn.preemption,
    tfyarn.progress, tfyarn.jaxcluster), for the tasks: their Python (a packed env, a Docker
    image) need not have tfyarn installed, and $PWD is first on their path."""
    package = into / "tfyarn"
    shutil.copytree(READER_DIR, package / "data", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for module in (*SCRIPT_MODULES, JAX_CLUSTER_MODULE):
        shutil.copy2(module, package / module.name)  # its time: cached
    shutil.copytree(JAX_STARTUP_DIR, package / JAX_STARTUP_DIR.name, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    init = package / "__init__.py"
    init.write_text('"""tfyarn.data, shipped with the job."""\n')
    # The pack is cached on HDFS by its content (codepack.upload): same file, same bytes.
    shipped = (READER_DIR / "__init__.py").stat()
    os.utime(init, ns=(shipped.st_atime_ns, shipped.st_mtime_ns))
    return package


# Read by tfyarn's patched skein driver (tfyarn/hadoop/amjar.py), which sets YARN's log
# aggregation context of the application from them: skein's spec has no field for it.
LOG_INCLUDE_ENV = "TFYARN_LOG_INCLUDE_PATTERN"
LOG_EXCLUDE_ENV = "TFYARN_LOG_EXCLUDE_PATTERN"


def apart_env(role: RolePlan) -> dict[str, str]:
    """ANTI_AFFINITY_REQUIRED, for the patched AppMaster's first requests of the role."""
    return {PLACEMENT_APART_ENV: "1"} if role.placement_policy & ANTI_AFFINITY_REQUIRED else {}


def log_aggregation_env(plan: JobPlan) -> dict[str, str]:
    """yarn.log.include.patterns / exclude.patterns, each joined into one regular
    expression (YARN's context takes one of each); none: YARN's defaults (every file)."""
    env = {}
    if plan.log_include_patterns:
        env[LOG_INCLUDE_ENV] = "|".join(plan.log_include_patterns)
    if plan.log_exclude_patterns:
        env[LOG_EXCLUDE_ENV] = "|".join(plan.log_exclude_patterns)
    return env


def code_packs(scripts_dir: Path, job_dir: Path) -> dict[str, Path]:
    """The job's code, one tar per directory (tfyarn/submission/codepack.py), by the name each is
    unpacked under in the containers: the scripts, the AppMaster's code, tfyarn.data, and
    the AppMaster's web UI template (tfyarn/hadoop/skeinui.py)."""
    packs = job_dir / "packs"
    return {LOCALIZED_SCRIPTS_DIR: tar_directory(scripts_dir, packs, LOCALIZED_SCRIPTS_DIR),
            "appmaster": tar_directory(APPMASTER_DIR, packs, "appmaster"),
            READER_PACK: tar_directory(reader_package(job_dir), packs, READER_PACK),
            skeinui.UI_DIR: tar_directory(skeinui.write_overview(job_dir / skeinui.UI_DIR),
                                          packs, skeinui.UI_DIR)}


def rendezvous_token(job_dir: Path) -> Path:
    """The job's secret for the master's rendezvous (appmaster/master/rendezvous.py), in a file only
    its owner reads; YARN localizes it privately for the application, like skein's own key."""
    path = job_dir / TOKEN_FILE
    path.touch(mode=0o600)
    path.write_text(new_token())
    return path


def kerberos_files(keytab: str | None) -> dict[str, skein.File]:
    """With --keytab, the AppMaster alone gets it, privately, to obtain new HDFS tokens for a
    job that outlives its own (appmaster/common/hdfstokens.py), and the client's krb5.conf when
    KRB5_CONFIG names one (Java reads no KRB5_CONFIG; else the node's /etc/krb5.conf)."""
    if not keytab:
        return {}
    files = {KEYTAB_FILE: skein.File(str(Path(keytab).resolve()), type="file",
                                     visibility="application")}
    krb5_conf = os.environ.get("KRB5_CONFIG")
    if krb5_conf and Path(krb5_conf).is_file():
        files[KRB5_CONF_FILE] = skein.File(str(Path(krb5_conf).resolve()), type="file",
                                           visibility="application")
    return files


def application_acls(plan: JobPlan, extras: AppSpecExtras) -> skein.ACLs:
    """YARN's application ACLs from the job's access lists; none given: YARN's default, the
    owner and YARN's admins. skein's UI (the job page behind it) admits the owner and the view
    ACL's users by the name the RM's proxy passes, where the cluster's web UI logs users in
    (docs/secure.md, "The tracking page"); elsewhere that name is nobody's and it stays open."""
    users = page_users(plan, extras.web_login)
    if plan.view_acl is None and plan.modify_acl is None and users == ["*"]:
        return skein.ACLs()
    (view_users, view_groups), (modify_users, modify_groups) = (
        acl_names(plan.view_acl), acl_names(plan.modify_acl))
    return skein.ACLs(enable=True, view_users=view_users, view_groups=view_groups,
                      modify_users=modify_users, modify_groups=modify_groups,
                      ui_users=users)


def application_spec(plan: JobPlan, scripts_dir: Path, job_file: Path, extras: AppSpecExtras,
                     secrets: dict[str, Path] | None = None,
                     environment: JobEnvironment | None = None,
                     keytab: str | None = None,
                     packs: Mapping[str, str] | None = None) -> skein.ApplicationSpec:
    environment = environment or JobEnvironment()  # a packed Python env, a Docker image
    # The code packs: on HDFS already (codepack.upload), or local tars skein uploads.
    packs = packs or {name: str(path)
                      for name, path in code_packs(scripts_dir, job_file.parent).items()}
    # PRIVATE: a node keeps an unpacked pack for the user's later jobs while it is unchanged.
    code = {name: skein.File(source, type="archive", visibility="private")
            for name, source in packs.items()}
    files = {
        LOCALIZED_SCRIPTS_DIR: code[LOCALIZED_SCRIPTS_DIR],
        "appmaster": code["appmaster"],
        PLAN_FILE: skein.File(str(job_file), type="file"),
        TOKEN_FILE: skein.File(str(rendezvous_token(job_file.parent)), type="file",
                               visibility="application"),
    }
    # Secrets reach the tasks only, as files YARN localizes privately for this application.
    task_files = {**files, **environment.files(), READER_PACK: code[READER_PACK]}
    for name, path in (secrets or {}).items():
        task_files[SECRET_FILE_PREFIX + name] = skein.File(str(path), type="file",
                                                           visibility="application")
    if plan.data_dir:  # Slider's user.data.dir: YARN copies it from HDFS once per node
        task_files[DATA_DIR_NAME] = skein.File(qualified(plan.data_dir), type="file",
                                               visibility="application")
    for entry in plan.data:  # site.global.data: kept on each node for later jobs
        task_files[DATA_ENTRY_PREFIX + entry.name] = skein.File(
            entry.url, type="archive" if is_archive(entry.url) else "file",
            visibility="private")
    services = {
        role.name: skein.Service(
            # Every container is asked for the moment skein's AppMaster registers, in its
            # first allocate call, before master.py has even started (as a plain skein
            # application does); the master adopts them (Master.containers_skein_requested).
            # Asked role by role by the master instead, the roles after the first waited for
            # skein's next allocator heartbeat (docs/benchmarks.md, issue 37). skein orders
            # these first asks by its own service order, not yarn.role.priority: every later
            # ask (a replacement, a restart) follows the priorities (docs/guide/job-files.md).
            instances=role.instances,
            resources=skein.Resources(memory=role.memory_mb, vcores=role.vcores, gpus=role.gpus),
            node_label=role.label or "",
            # The master, not skein, decides what a failure means for the job.
            max_restarts=0,
            allow_failures=True,
            files=task_files,
            env={**plan.env, **environment.task_env(), **apart_env(role)},
            script=_launch(plan, "appmaster.agent.main"),
        )
        for role in (*plan.roles, *plan.side_roles)
    }
    master = skein.Master(
        resources=skein.Resources(memory=plan.am_memory_mb, vcores=plan.am_vcores),
        files={**files, **environment.master_files(), **kerberos_files(keytab),
               skeinui.UI_DIR: code[skeinui.UI_DIR]},
        script=_launch(plan, "appmaster.master.main", environment.master_python),
        log_config=skein.File(str(skeinui.write_log_config(
            job_file.parent / "skein.log4j.properties")), type="file"),
        # skein's Java AppMaster reads JAVA_TOOL_OPTIONS: a short-lived JVM starts faster so,
        # stays lean (tfyarn/hadoop/jvm.py), its web UI's templates reflect on java.util's entries,
        # which JDK 17 must open, and its Overview links the job page (tfyarn/hadoop/skeinui.py).
        env={"JAVA_TOOL_OPTIONS": f"{QUICK_JVM_OPTIONS} {am_java_options()} "
             f"--add-opens=java.base/java.util=ALL-UNNAMED {skeinui.JVM_OPTION}",
             **LEAN_AM_ENV, **log_aggregation_env(plan),
             APPMASTER_BUILD_ENV: amjar.chosen().describe()},
    )
    return skein.ApplicationSpec(
        name=plan.name,
        queue=plan.queue,
        acls=application_acls(plan, extras),
        node_label=plan.am_label or "",
        master=master,
        services=services,
        max_attempts=plan.am_max_attempts,
        tags={"tfyarn", *extras.tags},
    )
