#!/usr/bin/env python
"""Keras 3 on the JAX backend, data parallel over every process, as Keras's distribution
guide writes it (keras.io/guides/distribution).

On YARN with ``site.global.framework: jax`` (examples/keras_jax/): tfyarn gives every process
KERAS_DISTRIBUTION_JOB_ADDRESSES, _NUM_PROCESSES and _PROCESS_ID, which
``keras.distribution.initialize()`` reads, and KERAS_BACKEND=jax. Each process feeds its
own share of the data; the model's variables are replicated on every device of every
process. Process 0 saves the weights into the work dir (TFYARN_WORK_DIR, mirrored to HDFS)
after every epoch (the others save too: saving is collective, they save where nobody looks),
and every process loads them at its start, and it writes ``result.json``. Each process
reports its step as each batch begins (``tfyarn.progress.report_step``: tfyarn's stall
watchdog and `tfyarn status` read it). ``--stall_at STEP --stall_process N``: process N
stops after that step in the job's first generation and sleeps, as a rank stuck on its
data would (the others wait for it in their next collective).
Alone (no tfyarn): one process on this machine's devices.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402 (after the backend is chosen)
import keras  # noqa: E402
import numpy as np  # noqa: E402
from example_support import step_progress  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64)  # per process
    parser.add_argument("--work_dir", default=os.environ.get("TFYARN_WORK_DIR", "."))
    parser.add_argument("--step_sleep", type=float, default=0.0, help="seconds per step")
    parser.add_argument("--stall_at", type=int, default=None,
                        help="in the first generation, process --stall_process sleeps after "
                        "this step")
    parser.add_argument("--stall_process", type=int, default=1)
    args = parser.parse_args()

    if "KERAS_DISTRIBUTION_NUM_PROCESSES" in os.environ:
        keras.distribution.initialize()  # reads the three KERAS_DISTRIBUTION_* variables
    process, processes = jax.process_index(), jax.process_count()
    devices = keras.distribution.list_devices()  # every process's devices
    print(f"process {process} of {processes}: {len(jax.local_devices())} local device(s), "
          f"{len(devices)} in all: {devices}", flush=True)
    data_parallel = keras.distribution.DataParallel(devices=devices)
    data_parallel.auto_shard_dataset = False  # each process passes its own share (below)
    keras.distribution.set_distribution(data_parallel)

    # A synthetic 10-class problem; each process takes its own share of the examples.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 32)).astype("float32")
    y = (x[:, :10].argmax(axis=1)).astype("int32")
    x, y = x[process::processes], y[process::processes]

    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    weights = Path(args.work_dir) / "keras_jax.weights.h5"
    state = Path(args.work_dir) / "epochs.json"
    first_epoch = 0
    if weights.exists() and state.exists():
        model.load_weights(weights)
        first_epoch = json.loads(state.read_text())["epochs"]
        print(f"process {process}: resuming after epoch {first_epoch}", flush=True)

    class Snapshot(keras.callbacks.Callback):
        """Saving gathers the variables from every process: all save, process 0 into the
        work dir, the others where nobody looks."""

        def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
            if process == 0:  # whole files only: each written aside (.tmp), then renamed
                partial = weights.with_name("keras_jax.tmp.weights.h5")
                model.save_weights(partial)
                partial.replace(weights)
                state.with_suffix(".tmp").write_text(json.dumps({"epochs": epoch + 1}))
                state.with_suffix(".tmp").replace(state)
            else:
                with tempfile.TemporaryDirectory() as scratch:
                    model.save_weights(Path(scratch) / weights.name)

    steps_per_epoch = -(-len(x) // args.batch_size)
    # Counted here: under JAX the optimizer's iterations are synced back at epoch ends only.
    steps = itertools.count(first_epoch * steps_per_epoch + 1)
    progress = step_progress(keras, lambda: next(steps), args.stall_at,
                             process == args.stall_process, pause_s=args.step_sleep)

    history = model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs,
                        initial_epoch=first_epoch, callbacks=[Snapshot(), progress], verbose=2)
    if process == 0:
        result = {"processes": processes, "devices": len(devices),
                  "first_epoch": first_epoch, "epochs": args.epochs,
                  "accuracy": history.history["accuracy"][-1] if history.history else None}
        (Path(args.work_dir) / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
