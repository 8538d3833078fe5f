"""YARN's preemption notice, for a task's script: save a checkpoint before YARN's kill.

When the ResourceManager announces it will take a task's container back (for another queue:
the kill follows after the scheduler's ``max_wait_before_kill``, 15 s by default), tfyarn's
AppMaster tells the task, and these say so:

- :func:`notice_received`: poll it in a custom training loop (cheap: one ``stat``);
- :func:`termination_watcher_fn`: for TensorFlow's ``PreemptionCheckpointHandler``
  (``tf.distribute.experimental.TerminationConfig(termination_watcher_fn=...)``);
- :func:`keras_callback`: a Keras callback for ``fit`` that saves once, then stops training.

Outside tfyarn (no notice file in the environment) they report no notice.
"""

from __future__ import annotations

import os
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


def keras_callback(save: Callable[[], Any]) -> Any:
    """A ``tf.keras.callbacks.Callback`` that, after the batch during which the notice came,
    calls ``save()`` (a ``tf.train.CheckpointManager``'s ``save``, say) once and stops
    training; the restarted task resumes from that checkpoint."""
    import tensorflow as tf  # only where Keras is used

    class PreemptionCallback(tf.keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.saved = False

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if not self.saved and notice_received():
                save()
                self.saved = True
                self.model.stop_training = True

    return PreemptionCallback()
