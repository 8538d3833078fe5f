"""What the Keras `model.fit` examples share: finding tf-keras, the model, data and callbacks.

On TensorFlow 2.21, Keras 3's `fit` runs with neither ParameterServerStrategy nor
MultiWorkerMirroredStrategy; tf-keras (Keras 2, `TF_USE_LEGACY_KERAS=1`) runs both. The
examples therefore check for tf-keras before importing TensorFlow, whose own error would
come much later and name neither the cause nor the fix.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import time
from types import ModuleType

from example_support import HIDDEN, N_CLASSES, N_FEATURES, teacher_weights

DATA_SEEDS = 2**31  # stateless seeds for the endless synthetic input


def _version(*distributions: str) -> str | None:
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def tf_keras_problem() -> str | None:
    """Why this Python cannot run the examples' `fit` (no tf-keras, one of another version,
    no tensorboard), with the fix; None when it can."""
    tf_version = _version("tensorflow", "tensorflow-cpu", "tensorflow-gpu") or "2.21.0"
    series = ".".join(tf_version.split(".")[:2])
    fix = (f"Fix: install it beside TensorFlow {tf_version} in the job's Python "
           f"(site.global.python, or the packed env site.global.python.env): "
           f"pip install --no-deps 'tf-keras=={series}.*' (README: \"Keras model.fit\").")
    if importlib.util.find_spec("tf_keras") is None:
        return (f"this example needs tf-keras (Keras 2): on TensorFlow {series} Keras 3's "
                f"model.fit runs with neither ParameterServerStrategy nor "
                f"MultiWorkerMirroredStrategy, and {sys.executable} has no tf_keras. {fix}")
    if importlib.util.find_spec("tensorboard") is None:  # tf.summary's implementation
        return (f"the TensorBoard callback needs the tensorboard package, and "
                f"{sys.executable} has none (tensorflow-cpu does not bring it). Fix: pip "
                f"install 'tensorboard=={series}.*' into the job's Python.")
    keras_version = _version("tf-keras", "tf_keras")
    if keras_version and not keras_version.startswith(series + "."):
        return (f"tf-keras {keras_version} does not match TensorFlow {tf_version} "
                f"(tf-keras must be the same minor version). {fix}")
    return None


def load_tf_keras() -> tuple[ModuleType, ModuleType]:
    """(tensorflow, tf_keras), or exit 1 with the fix. Call before TensorFlow is imported:
    TF_USE_LEGACY_KERAS makes `tf.keras` (and TensorFlow's own Keras users) tf-keras too."""
    problem = tf_keras_problem()
    if problem:
        sys.exit(f"Error: {problem}")
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf
    import tf_keras

    return tf, tf_keras


def build_model(keras: ModuleType, learning_rate: float):
    """The examples' MLP (create it in the strategy's scope), compiled for plain SGD."""
    model = keras.Sequential([
        keras.layers.Dense(HIDDEN, activation="relu", input_shape=(N_FEATURES,)),
        keras.layers.Dense(N_CLASSES),
    ])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def synthetic_dataset(tf: ModuleType, np: ModuleType, batch_size: int):
    """Endless batches of random inputs labelled by the fixed teacher (see example_support).

    Built from TensorFlow ops only, so ParameterServerStrategy can rebuild it on each
    worker (a dataset fed by Python would run only on the chief)."""
    teacher = tf.constant(teacher_weights(np))

    def batch(seed):
        x = tf.random.stateless_normal([batch_size, N_FEATURES], seed=tf.stack([seed, seed]))
        return x, tf.argmax(tf.matmul(x, teacher), axis=1)

    return tf.data.Dataset.range(DATA_SEEDS).map(batch)


def global_step(keras: ModuleType, model) -> int:
    """The optimizer's step count, whatever variable the strategy wraps it in."""
    return int(keras.backend.get_value(model.optimizer.iterations))


def step_tensorboard(keras: ModuleType, log_dir: str):
    """Keras's TensorBoard callback, with each epoch's summaries at the global step
    (`optimizer.iterations`, restored with the checkpoint) instead of the epoch number:
    `tfyarn status` reads the step from these event files, and a resumed run goes on from it.
    """

    class StepTensorBoard(keras.callbacks.TensorBoard):
        def _log_epoch_metrics(self, epoch: int, logs: dict) -> None:
            super()._log_epoch_metrics(global_step(keras, self.model), logs)

    return StepTensorBoard(log_dir=log_dir, update_freq="epoch")


def step_pause(keras: ModuleType, seconds: float, steps_per_epoch: int) -> list:
    """--step_sleep for `fit`, so tests can make training last: a step's pause times the
    epoch's steps after each epoch (ParameterServerStrategy allows no per-step callbacks)."""
    if seconds <= 0:
        return []
    return [keras.callbacks.LambdaCallback(
        on_epoch_end=lambda _epoch, _logs: time.sleep(seconds * steps_per_epoch))]


def epochs_of(train_steps: int, steps_per_epoch: int) -> int:
    """Epochs of steps_per_epoch steps that reach train_steps (the last one may go past)."""
    return max(1, -(-train_steps // steps_per_epoch))
