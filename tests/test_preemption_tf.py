"""tfyarn's preemption hooks (tfyarn/preemption.py) with the real TensorFlow, no YARN: the
script (tests/apps/preemption_tf.py) runs apart, TensorFlow's threads and all, and says what
happened once the notice file appeared mid-training."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).parent / "apps" / "preemption_tf.py"
NOTICE_AT_STEP = 5  # the app's


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="an env without TensorFlow (the thin client's)")
def test_tensorflows_handler_and_the_keras_callback_save_on_the_notice(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(APP), str(tmp_path)], capture_output=True,
                         text=True, timeout=180, cwd=Path(__file__).parents[1])
    assert run.returncode == 0, run.stderr[-3000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    # PreemptionCheckpointHandler heard tfyarn's watcher: it saved the step it reached, then
    # called exit_fn (the app's records the step instead of exiting)
    (exited_at,) = said["exited_at"]
    assert exited_at >= NOTICE_AT_STEP and said["saved_step"] == exited_at, said
    # the Keras callback saved once, after the batch the notice came in, and fit trained on
    assert said["saves"] == [NOTICE_AT_STEP] and said["batches"] == 20, said
