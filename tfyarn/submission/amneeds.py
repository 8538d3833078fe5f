"""What a job's files ask that only tfyarn's patched skein AppMaster does, and the refusal,
before anything is submitted, where the package has only skein's stock one
(tfyarn/hadoop/amjar.py): skein's AppMaster would run the job without them, silently.

Asked only of the patched AppMaster (and of the patched driver, in the same jar):
- a placement policy with STRICT (1) or ANTI_AFFINITY_REQUIRED (4): steered requests and
  YARN's placement constraints;
- yarn.node.failure.threshold: leaving hosts out is YARN's blacklist;
- yarn.log.include.patterns / exclude.patterns: YARN's log aggregation context.
YARN's preemption notice is passed on by the patched AppMaster to every job; no setting asks
for it, so the stock one is not refused for it: the dry run says which AppMaster runs the job.
"""

from __future__ import annotations

from appmaster.common.jobplan import JobPlan
from appmaster.common.settings import (
    ANTI_AFFINITY_REQUIRED,
    LOG_EXCLUDE,
    LOG_INCLUDE,
    NODE_FAILURE_THRESHOLD,
    PLACEMENT_POLICY,
    STRICT,
)
from tfyarn.errors import TfyarnError
from tfyarn.hadoop import amjar
from tfyarn.jobconfig import JobConfig
from tfyarn.jobconfig.defaults import where_set


class PatchedAppMasterNeeded(TfyarnError, RuntimeError):
    """The job asks for what only the patched AppMaster does, and the package has none."""


def needs(plan: JobPlan) -> list[tuple[str, str]]:
    """What the plan asks of the patched AppMaster: each setting that asks it, keyed as
    `tfyarn config` names it (a component's own as <component>.<key>), with what it asks."""
    found = []
    for role in plan.roles:
        key = f"{role.name}.{PLACEMENT_POLICY.key}"
        policy = role.placement_policy
        if policy & STRICT:
            found.append((key, f"= {policy} (STRICT: a task comes back only to the host it "
                               "ran on)"))
        if policy & ANTI_AFFINITY_REQUIRED:
            found.append((key, f"= {policy} (ANTI_AFFINITY_REQUIRED: YARN's placement "
                               "constraints)"))
        if role.node_failure_threshold is not None:
            found.append((f"{role.name}.{NODE_FAILURE_THRESHOLD.key}",
                          f"= {role.node_failure_threshold} (leaving a host out: YARN's "
                          "blacklist)"))
    for setting, patterns in ((LOG_INCLUDE, plan.log_include_patterns),
                              (LOG_EXCLUDE, plan.log_exclude_patterns)):
        if patterns:
            found.append((setting.key, "(YARN's log aggregation context)"))
    return found


def check(job: JobConfig, plan: JobPlan, jar: amjar.AppMasterJar | None = None) -> None:
    """Refuse the job if it needs the patched AppMaster and ``jar`` (default: the one a
    submit would use) is skein's stock one; each setting named where it was set."""
    jar = jar or amjar.chosen()
    asked = needs(plan)
    if jar.patched or not asked:
        return
    resources = str(job.client.resources_path)
    lines = "\n".join("  {}: {} {}".format(*where_set(job.settings, resources, key), what)
                      for key, what in asked)
    raise PatchedAppMasterNeeded(
        f"the job asks for what only tfyarn's patched skein AppMaster does:\n{lines}\nbut "
        f"this tfyarn submits with {jar.describe()}.",
        hint=f"{jar.fix}; or leave those settings out")


def document(jar: amjar.AppMasterJar | None = None) -> dict:
    """The dry run's and the job page's word on it."""
    jar = jar or amjar.chosen()
    return {"patched": jar.patched, "jar": jar.path.name, "described": jar.describe()}
