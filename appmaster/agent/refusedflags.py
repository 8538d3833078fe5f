"""A script that stops at once on a flag tfyarn passed it, found in its stderr: what to do.

absl says ``FATAL Flags parsing error: Unknown command line flag 'work_dir'`` (one flag, the
first it met); argparse's ``parse_args()`` says ``error: unrecognized arguments:
--work_dir=/x --epochs 5`` (every one). The agent adds the fix to the task's stderr and to the
lines the job's diagnostics quote. Only the standard library here: it runs in the containers.
"""

from __future__ import annotations

import re

from appmaster.common.settings import DATA, DATA_DIR, WORK_DIR_FLAG

WORK_DIR_FLAG_KEY = WORK_DIR_FLAG.key
CLUSTER_FLAGS = ("--ps_hosts", "--worker_hosts", "--job_name", "--task_index")
DATA_DIR_FLAG = "--data_dir"
HINT_PREFIX = "tfyarn: "

_ABSL = re.compile(r"Unknown command line flag '([^']+)'")
_ARGPARSE = re.compile(r"error: unrecognized arguments: (.*)")


def refused_flags(stderr: str) -> list[str]:
    """The flags (``--name``) a script's parser refused, in order, as absl or argparse
    report them."""
    found: list[str] = []
    for line in stderr.splitlines():
        names = ["--" + name for name in _ABSL.findall(line)]
        if match := _ARGPARSE.search(line):
            names += [arg.partition("=")[0] for arg in match.group(1).split()
                      if arg.startswith("--") and len(arg) > 2]
        found += [name for name in names if name not in found]
    return found


def refused_flag_hint(stderr: str, work_dir_flag: str, data_dir: bool = False) -> str:
    """The fix when the script refused a flag tfyarn added to its command (its work dir flag,
    ``--data_dir`` when the job has data, the four cluster flags); "" when it refused none
    (an argument of site.global.user.scripts.args is the user's own)."""
    hints = []
    for flag in refused_flags(stderr):
        if work_dir_flag and flag == work_dir_flag:
            hints.append(
                f"the script does not define {flag}, which tfyarn passes every task: set "
                f"{WORK_DIR_FLAG_KEY} to the flag your script uses for its model/checkpoint "
                'dir, or to "" for none (the path is in TFYARN_WORK_DIR).')
        elif data_dir and flag == DATA_DIR_FLAG:
            hints.append(
                f"the script does not define {flag}, which tfyarn passes every task of a job "
                f"with data ({DATA.key}, {DATA_DIR.key}): define it (the path "
                "is also in TFYARN_DATA_DIR).")
        elif flag in CLUSTER_FLAGS:
            hints.append(
                f"the script does not define {flag}, one of the four flags tfyarn passes every "
                f"task ({' '.join(CLUSTER_FLAGS)}): define them, or let the parser tolerate "
                "them (argparse's parse_known_args()) and read TF_CONFIG.")
    return "\n".join(HINT_PREFIX + hint for hint in hints)
