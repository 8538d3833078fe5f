"""YARN's preemption notice, for a task's script: save a checkpoint before YARN's kill.

When the ResourceManager announces it will take a task's container back (for another queue:
the kill follows after the scheduler's ``max_wait_before_kill``, 15 s by default), tfyarn's
AppMaster tells the task, and these say so:

- :func:`notice_received`: poll it in a custom training loop (cheap: one ``stat``);
- :func:`termination_watcher_fn` and :func:`await_kill`: for TensorFlow's
  ``PreemptionCheckpointHandler`` (``tf.distribute.experimental.TerminationConfig(
  termination_watcher_fn=..., exit_fn=...)``);
- :func:`keras_callback`: a Keras callback for ``fit`` that saves once and trains on.

Outside tfyarn (no notice file in the environment) they report no notice.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from appmaster.common.registry import NOTICE_FILE_ENV


def notice_received() -> bool:
    """Whether YARN announced this task's preemption."""
    path = os.environ.get(NOTICE_FILE_ENV)
    return bool(path) and os.path.exists(path)


def termination_watcher_fn() -> bool:
    """TensorFlow's termination watcher: True once the notice came."""
    return notice_received()


def preempted_here() -> bool:
    """Whether the notice names this task's own container (the chief is also told when
    another task's container will go: it holds the checkpoint)."""
    path = os.environ.get(NOTICE_FILE_ENV)
    try:
        with open(path or "") as notice:
            return notice.read().strip() == os.environ.get("SKEIN_CONTAINER_ID")
    except OSError:
        return False


def await_kill() -> None:
    """For ``TerminationConfig(exit_fn=...)``: after the save, the task whose container YARN
    takes waits for YARN's kill (a preemption is no failure), instead of TensorFlow's default
    exit 42 (a failure, counted); another task's returns and trains on."""
    while preempted_here():
        time.sleep(1)


def keras_callback(save: Callable[[], Any]) -> Any:
    """A ``tf.keras.callbacks.Callback`` that, after the batch during which the notice came,
    calls ``save()`` (a ``tf.train.CheckpointManager``'s ``save``, say) once; training goes
    on until YARN's kill, and a restart resumes from that checkpoint."""
    import tensorflow as tf  # only where Keras is used

    class PreemptionCallback(tf.keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.saved = False

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if not self.saved and notice_received():
                save()
                self.saved = True

    return PreemptionCallback()
