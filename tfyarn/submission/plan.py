"""From the validated job files to the plan the AppMaster runs, and its dry-run display."""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from appmaster.common import frameworks
from appmaster.common.cluster_spec import ClusterSpec
from appmaster.common.frameworks.base import GROUP_ROLES, world_size_text
from appmaster.common.jobplan import JobPlan, RolePlan
from appmaster.common.pageguard import FLAG_FILE
from appmaster.common.settings import (
    ALLOCATION_HOLD,
    APP_SCOPE,
    APPLICATION_PRIORITY,
    APPMASTER_COMPONENT,
    APPMASTER_SCOPE,
    CHECKPOINT_PREFIX,
    COMPONENT_SCOPE,
    FAILURE_THRESHOLD_MEANING,
    JOB_SCOPE,
    SETTINGS,
    WORK_DIR_FLAG,
)
from appmaster.common.vocabulary import FailurePolicy, Role
from tfyarn.jobconfig import JobConfig
from tfyarn.jobconfig.model import BUILT_IN, JOB_FILE
from tfyarn.submission import amneeds, environments
from tfyarn.submission.workdir import default_work_dir, qualified

# A dry run of thousands of tasks stays quick and small: a role with more tasks than this
# shows its first ones and its last, and a longer host list shows its ends.
TASKS_SHOWN = 8
HOSTS_SHOWN = 8
# A task's container directory on its node, known only once it runs: where its local work
# dir and data dir are (appmaster/common/jobplan.py's task_command, the same as the agent's)
CONTAINER_DIR = "<container-dir>"


@dataclass(frozen=True)
class AppSpecExtras:
    """What the application gets besides its spec: tfyarn's tags, and whether the cluster's
    web UI knows who asks (SPNEGO, `hadoop.http.authentication.type`), so that the RM's proxy
    passes a real user name and the job page can admit by it."""

    tags: tuple[str, ...] = ()
    web_login: bool = False


def page_users(plan: JobPlan, web_login: bool) -> list[str]:
    """Who besides the owner opens the job page: the view ACL's users ("*": everyone who
    passes the RM's proxy). Without a web login the proxy names nobody: open, "*"."""
    users, groups = acl_names(plan.view_acl)
    if not web_login or "*" in users or "*" in groups:
        return ["*"]
    return users


def acl_names(acl: str | None) -> tuple[list[str], list[str]]:
    """(users, groups) of an access list as YARN writes one: "alice,bob ml-team"."""
    users, _, groups = (acl or "").partition(" ")
    return [u for u in users.split(",") if u], [g for g in groups.split(",") if g]


def with_label(role: RolePlan, label: str | None) -> RolePlan:
    """The role as the AppMaster asks for it: with the application's label where it names
    none, as YARN would apply it."""
    return role if role.label or not label else dataclasses.replace(role, label=label)


def build_plan(job: JobConfig, extra_args: Sequence[str] = (),
               principal: str | None = None) -> JobPlan:
    """The job's spec completed for the containers: the interpreter the tasks run, the work
    dir, HDFS URLs with the cluster's authority, the application's label (YARN gives it to
    every request without one; the plan says so explicitly), ``extra_args`` after
    site.global.user.scripts.args (`tfyarn submit ... -- ARGS`), and the ``principal`` whose
    keytab the job holds (the master gets new HDFS tokens as them)."""
    spec = job.spec
    work_dir = spec.work_dir or default_work_dir()
    if spec.checkpoint_prefix:  # Slider's layout: <prefix>/<application name>.<application id>
        # hdfs:///… named with the cluster's fs.defaultFS, which the containers need not know
        work_dir = qualified(f"{spec.checkpoint_prefix.rstrip('/')}/{spec.name}.${{APP_ID}}")
    python_env = job.client.python_env
    return dataclasses.replace(
        spec,
        python=environments.task_python(  # may raise environments.JobEnvironmentError
            None if python_env is None else environments.archive_python(python_env),
            spec.python, spec.docker_image,
        ),
        work_dir=work_dir,
        roles=tuple(with_label(role, spec.am_label) for role in spec.roles),
        tensorboard=spec.tensorboard and with_label(spec.tensorboard, spec.am_label),
        evaluator=spec.evaluator and with_label(spec.evaluator, spec.am_label),
        script_args=(*spec.script_args, *extra_args),
        data_dir=spec.data_dir and qualified(spec.data_dir),
        data=tuple(dataclasses.replace(entry, url=qualified(entry.url)) for entry in spec.data),
        principal=principal,
    )


def placeholder_spec(plan: JobPlan) -> ClusterSpec:
    """Addresses are known only once tasks run: show where each one goes."""
    exports = {
        role.name: {i: f"<{role.name}-{i}-host:port>" for i in range(role.instances)}
        for role in plan.roles
    }
    return ClusterSpec.from_exports(exports)


def restart_limit(role: RolePlan, group: bool = False) -> str:
    """``group``: a PyTorch or JAX job, whose every failure restarts all its ranks."""
    if role.name == Role.EVALUATOR:  # beside training: its end never ends the job by default
        if role.failure_policy == FailurePolicy.FATAL:
            return "its failure fails the job (failure policy fatal)"
        kept = (0 if role.failure_policy == FailurePolicy.IGNORE else role.failure_threshold)
        return ("a failed evaluator is dropped and training goes on" if kept == 0 else
                f"{'unlimited' if kept < 0 else kept} failure(s) replaced, then it is dropped "
                "and training goes on")
    if role.failure_policy == FailurePolicy.IGNORE:
        return "a failed task is dropped and the job goes on"
    if role.failure_policy == FailurePolicy.FATAL or role.failure_threshold == 0:
        return "no failure tolerated (the first fails the job)"
    how = "each restarting every rank" if group else "each replaced"
    if role.failure_threshold < 0:
        return f"unlimited failures tolerated, {how}"
    return f"{role.failure_threshold} failure(s) tolerated, {how}"


def shown_tasks(instances: int) -> list[int]:
    """The task indices a dry run shows: all, or the first few and the last."""
    if instances <= TASKS_SHOWN:
        return list(range(instances))
    return [*range(TASKS_SHOWN - 1), instances - 1]


def summarised(arg: str) -> str:
    """``--worker_hosts=a,b,...`` with its middle left out when it is long."""
    flag, equals, hosts = arg.partition("=")
    items = hosts.split(",")
    if not equals or not flag.endswith("_hosts") or len(items) <= HOSTS_SHOWN:
        return arg
    return f"{flag}={','.join(items[:HOSTS_SHOWN - 2])},...({len(items) - HOSTS_SHOWN + 1} more)" \
           f"...,{items[-1]}"


def plan_document(job: JobConfig, plan: JobPlan, extras: AppSpecExtras) -> dict:
    spec = placeholder_spec(plan)
    roles = []
    for role in (*plan.roles, *([plan.evaluator] if plan.evaluator else [])):
        shown = shown_tasks(role.instances)
        commands = [
            shlex.join(map(summarised, plan.task_command(spec, role.name, i, CONTAINER_DIR)))
            for i in shown
        ]
        roles.append({
            **role.to_dict(),  # every field of the role's plan, by its name
            "restarts": restart_limit(role, group=frameworks.of(plan.framework).ranks),
            "tasks_shown": shown, "commands": commands,
            "tf_config_task": [spec.tf_config(role.name, i)["task"] for i in shown],
        })
    fields = {name: value for name, value in plan.to_dict().items() if name not in ROLE_FIELDS}
    return {
        **fields,  # every field of the plan, by its name; below, what is drawn from them
        "tags": ["tfyarn", *extras.tags],
        "scripts_dir": str(job.client.scripts_dir),
        "python_env": None if job.client.python_env is None else str(job.client.python_env),
        # tfyarn packs and ships the environment running it (tfyarn/submission/envpack.py)
        "shipped_env": (sys.prefix if environments.ships_own_env(job.spec.python,
                                                                 job.client.python_env) else None),
        # what each task's script is told, and how (site.global.user.scripts.work_dir_flag)
        "task_work_dir": plan.task_work_dir("${APP_ID}", CONTAINER_DIR),
        "chief": "{} {}".format(*plan.chief),
        "page_users": page_users(plan, extras.web_login),
        # which AppMaster: tfyarn's patched skein one, or skein's stock one and why
        "am_build": amneeds.document(),
        "roles": roles,
        "env": sorted(plan.env),
        "tensorboard": None if plan.tensorboard is None else {
            **plan.tensorboard.to_dict(),
            "command": shlex.join(plan.tensorboard_command(
                0, plan.task_work_dir("${APP_ID}", CONTAINER_DIR), FLAG_FILE)).replace(
                "--port 0", "--port <reserved loopback port>"),
        },
        # every setting not at tfyarn's default, and where it came from (`tfyarn config`)
        "settings": {key: {"value": value, "from": str(source)}
                     for key, (value, source) in job.settings.items()
                     if source.level != BUILT_IN},
        "ignored_keys": list(job.client.ignored),
        "failure_threshold_meaning": FAILURE_THRESHOLD_MEANING,
    }


def task_work_dir_line(document: dict) -> str:
    """Where a task's script works, how it is told, and how that dir meets the job's."""
    local, flag = document["task_work_dir"], document["work_dir_flag"]
    given = (f"given as {flag} and TFYARN_WORK_DIR" if flag else
             f'given in TFYARN_WORK_DIR only ({WORK_DIR_FLAG.key} is "")')
    if local == document["work_dir"]:
        return f"the work dir itself (a path every node mounts), {given}"
    return (f"{local} on its node, {given}; restored from the work dir before its script "
            "starts, the chief's mirrored to it while it runs")


def seconds_or_none(seconds: float | None) -> str:
    return f"{seconds:.0f} s" if seconds else "none"


def queue_wait_line(document: dict) -> str:
    """How the job waits its turn: its priority in the queue, and how long it keeps part of
    its containers while the rest do not come (settings without a field: the plan's extra)."""
    extra = document["extra"]
    priority = extra.get(APPLICATION_PRIORITY.key, APPLICATION_PRIORITY.default)
    hold = extra.get(ALLOCATION_HOLD.key, ALLOCATION_HOLD.default)
    return ("the queue's default priority" if priority is None else f"priority {priority}") + (
        f"; part of its containers kept {hold:.0f} s with no new one "
        "coming, then given back and asked for again after a random backoff")


class Read(dict):
    """A part of the dry run's document that remembers which keys the lines drawn from it
    read: the plan's fields no line read are listed after them (`the_rest`)."""

    def __init__(self, data: dict) -> None:
        super().__init__(data)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read |= {key, *DRAWN_FROM.get(key, ())}
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read |= {key, *DRAWN_FROM.get(key, ())}
        return super().get(key, default)


# The document's views that say plan fields in words: reading one shows its fields.
DRAWN_FROM = {"restarts": ("failure_threshold", "failure_policy")}


# The job's fields shown as roles of their own (with every field of RolePlan each).
ROLE_FIELDS = ("roles", "evaluator")


def field_label(name: str, scopes: Sequence[str]) -> str:
    """A plan field as the dry run names it: the key of the setting that declares it, as
    users write it; the field's name where no one setting does."""
    keys = [s.key for s in SETTINGS if s.field == name and s.scope in scopes]
    prefix = f"{APPMASTER_COMPONENT}." if name.startswith("am_") else ""
    return f"{prefix}{keys[0]}" if len(keys) == 1 else name


def the_rest(part: Read, scopes: Sequence[str]) -> list[str]:
    """`label=value` for each of the document's entries (a plan field, or a view drawn from
    the plan) that no line read from ``part``."""
    shown = []
    for name, value in part.items():
        if name == "extra":  # the settings without a field of their own, by key
            shown += [f"{key}={json.dumps(setting)}" for key, setting in value.items()
                      if key not in value.read]
        elif name not in part.read:
            shown.append(f"{field_label(name, scopes)}={json.dumps(value)}")
    return shown


JOB_SCOPES = (APP_SCOPE, APPMASTER_SCOPE, JOB_SCOPE)


def read_views(document: dict) -> tuple[Read, list[Read]]:
    """The document and its roles, each remembering what the lines drawn from it read."""
    board = document["tensorboard"] and Read(document["tensorboard"])
    read = Read({**document, "extra": Read(document["extra"]), "tensorboard": board})
    return read, [Read(role) for role in read["roles"]]


def format_plan(document: dict) -> str:
    """The dry run: the plan in words, then, as they are, its fields no line says (a new
    field or role property shows without a line of its own)."""
    document, roles = read_views(document)
    lines = format_lines(document, roles)
    rest = [("", the_rest(document, JOB_SCOPES))]
    by_role: dict[str, list[str]] = {}  # roles whose rest is the same share a line
    for role in [*roles, *filter(None, [dict.__getitem__(document, "tensorboard")])]:
        said = ", ".join(the_rest(role, (COMPONENT_SCOPE,)))
        by_role.setdefault(said, []).append(dict.__getitem__(role, "name"))
    rest += [(", ".join(names) + ": ", [said]) for said, names in by_role.items() if said]
    if any(said for _, said in rest):
        lines.append("\nThe rest of the plan (tfyarn-job.json), as it is:")
    for heading, said in rest:
        lines += textwrap.wrap(heading + ", ".join(said), 98, initial_indent="  ",
                               subsequent_indent="    ")
    return "\n".join(lines)


def processes_line(document: Read, roles: list[Read]) -> str:
    """A group's ranks in all (containers x processes); a TensorFlow task is one process."""
    if not frameworks.of(document["framework"]).ranks:
        return "one process in each container"
    group = [role for role in roles if role["name"] in GROUP_ROLES]
    processes = max((role["processes"] for role in group), default=1)  # the same in each
    return world_size_text(sum(role["instances"] for role in group), processes)


def gpus_told(role: Read) -> str:
    """How a task's processes are told their GPUs: each its own share of the container's."""
    if role["processes"] > 1:
        return (f"each of its {role['processes']} processes (ranks) gets its own "
                f"{role['gpus'] // role['processes']} in CUDA_VISIBLE_DEVICES")
    return "each task's script gets its own in CUDA_VISIBLE_DEVICES"


def format_lines(document: Read, roles: list[Read]) -> list[str]:
    words = frameworks.of(document["framework"]).words
    chief = words.chief  # "the chief", "rank 0"
    lines = [
        f"Application {document['name']!r} in queue {document['queue']!r}, tags "
        f"{', '.join(document['tags'])}",
        f"  scripts:  {document['scripts_dir']} (entry {document['entry']}, "
        f"python {document['python']})",
        f"  framework: {document['framework']}, " + processes_line(document, roles),
        f"  work dir: {document['work_dir']}"
        + (f" ({CHECKPOINT_PREFIX.key})" if document["checkpoint_prefix"] else ""),
        "  each task's work dir: " + task_work_dir_line(document),
        f"  {words.chief_label}: {document['chief']}"
        + (" (no chiefworker component)" if document["chief"] == "worker 0" else ""),
        f"  AppMaster: {document['am_memory_mb']} MB, {document['am_vcores']} vcore(s), "
        f"node label {document['am_label'] or '<default partition>'}, up to "
        f"{document['am_max_attempts']} attempt(s); {document['am_build']['described']}",
        f"  timeouts: allocation {seconds_or_none(document['allocation_timeout_s'])}, "
        f"registration {document['registration_timeout_s']:.0f} s, job deadline "
        f"{seconds_or_none(document['deadline_s'])}",
        "  waiting for the queue: " + queue_wait_line(document),
        "  success: " + (f"when {chief} exits 0" if document["success_policy"] == "chief"
                          else f"when {chief} and every worker exit 0"),
    ]
    view, modify, page = document["view_acl"], document["modify_acl"], document["page_users"]
    if view or modify:
        lines.append(f"  access besides you and YARN's admins: view {view or 'nobody'!r},"
                     f" kill {modify or 'nobody'!r}")
    lines.append("  job page: " + ("whoever passes the ResourceManager's proxy"
                                   if page == ["*"] else
                                   ", ".join(["you", *page]) + " (by Kerberos name)"))
    if document["data_dir"]:
        lines.append(f"  data dir: {document['data_dir']}, localized by YARN into every task's "
                     "directory (--data_dir)")
    for entry in document["data"]:
        lines.append(f"  data: {entry['url']} as <--data_dir>/{entry['name']}"
                     + (" (unpacked)" if entry["archive"] else "")
                     + ", localized by YARN into every task (cached per node)")
    if document["python_env"]:
        lines.append(f"  python env: {document['python_env']}, unpacked as "
                     f"./{environments.ENV_DIR} in every container (uploaded once per content)")
    if document.get("shipped_env"):
        lines.append(f"  python env: {document['shipped_env']} (this interpreter's), packed "
                     f"by tfyarn in layers: its interpreter unpacked as ./{environments.ENV_DIR}"
                     ", each large distribution and the rest of site-packages as "
                     "./pyenv-site-* in every container (each packed and uploaded once per "
                     "content)")
    if document["docker_image"]:
        mounts = ", ".join(document["docker_mounts"]) or "none"
        lines.append(f"  docker: the tasks run in image {document['docker_image']} "
                     f"(host network; mounts: {mounts}); the AppMaster runs on the host")
    for role in roles:
        gpus = f", {role['gpus']} GPU" if role["gpus"] else ""
        label = role["label"] or "<default partition>"
        lines.append(
            f"\n{role['name']} (priority {role['priority']}): {role['instances']} x "
            f"{role['memory_mb']} MB, {role['vcores']} vcore(s){gpus}, node label {label}; "
            f"{role['restarts']}"
        )
        if role["gpus"]:
            lines.append(
                f"  GPUs: {role['gpus']} yarn.io/gpu per task ({role['gpus'] * role['instances']}"
                f" in all) on {'node label ' + label if role['label'] else label}; "
                + gpus_told(role))
        previous = -1
        for index, command, task in zip(role["tasks_shown"], role["commands"],
                                        role["tf_config_task"], strict=True):
            if index != previous + 1:
                lines.append(f"  ... {index - previous - 1} more {role['name']} tasks like "
                             "these (host lists summarised)")
            lines.append(f"  [{task['type']} {task['index']}] {command}")
            previous = index
    if document["env"]:
        lines.append(f"\nEnvironment variables set for every task: {', '.join(document['env'])}")
    if document["secrets"]:
        lines.append("\nSecrets (files, path in TFYARN_SECRET_<name>): "
                     + ", ".join(document["secrets"]))
    if document["tensorboard"]:
        board = document["tensorboard"]
        lines.append(f"\n{board['name']} (priority {board['priority']}): {board['instances']} x "
                     f"{board['memory_mb']} MB, {board['vcores']} vcore(s), "
                     f"node label {board['label'] or '<default partition>'}; "
                     "its URL in `tfyarn status` and on the job page\n"
                     f"  {board['command']}")
    outside = {key: entry for key, entry in document.get("settings", {}).items()
               if not entry["from"].endswith(f"({JOB_FILE})")}
    if outside:  # the job files' own are in the files; --json lists them too
        lines.append("\nSettings from defaults files and the command line (tfyarn config):")
        width = max(map(len, outside))
        lines += [f"  {key:<{width}}  {json.dumps(entry['value'], ensure_ascii=False)}  "
                  f"({entry['from']})" for key, entry in outside.items()]
    if document["ignored_keys"]:
        lines.append("\nSlider-only keys accepted and not needed: "
                     + ", ".join(document["ignored_keys"]))
    lines.append(f"\nFailure threshold: {document['failure_threshold_meaning']}")
    return lines


def format_plan_json(document: dict) -> str:
    return json.dumps(document, indent=2)
