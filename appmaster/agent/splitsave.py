"""A checkpoint save that failed on a ps's host, found in a task's stderr: what to do.

Under ParameterServerStrategy TensorFlow saves each variable on the ps that holds it, at the
path the chief gave (Keras's ``ModelCheckpoint`` without ``CheckpointOptions``, as
TensorFlow's parameter-server tutorial writes it). On a cluster that path is in the chief's
container, a directory no other host has: the ps's ``SaveV2`` fails with ``NOT_FOUND`` on
``<prefix>_temp`` and the chief's save raises it. The agent adds the fix to the task's stderr
and to the lines the job's diagnostics quote. Only the standard library here: it runs in the
containers.
"""

from __future__ import annotations

import re

from appmaster.agent.refusedflags import HINT_PREFIX

CHIEF_CPU = "/job:chief/replica:0/task:0/device:CPU:0"
_SAVE_ON_PS = re.compile(r"NOT_FOUND:\s*(\S+)_temp; No such file or directory")


def split_save_hint(stderr: str) -> str:
    """The fix when a ps could not write its part of the chief's checkpoint; "" otherwise."""
    match = _SAVE_ON_PS.search(stderr)
    if not match or "SaveV2" not in stderr or "/job:ps/" not in stderr:
        return ""
    return (f"{HINT_PREFIX}checkpoint {match.group(1)} was saved from the ps, each on its own "
            "host, where that directory does not exist: the hosts share no disk. Save from the "
            "chief's host into the work dir, which tfyarn mirrors to HDFS: pass "
            f'options=tf.train.CheckpointOptions(experimental_io_device="{CHIEF_CPU}") to '
            "ModelCheckpoint, save_weights or tf.train.Checkpoint's save and restore "
            "(docs/guide/keras.md).")
