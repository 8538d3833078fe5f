#!/usr/bin/env python
"""Plain JAX, data parallel over every process: a linear regression whose batch is sharded
over every device of every process, the weights replicated (jit and shardings, as JAX's
"distributed arrays and automatic parallelization" tutorial writes it).

On YARN with ``site.global.framework: jax`` (examples/jax_data_parallel/):
``jax.distributed.initialize()`` with no arguments finds the coordinator (process 0's task,
on the port its agent holds), the process count and this process's id through JAX's own
cluster detection, as on Slurm or Open MPI: tfyarn ships a detector of its own with the job.
On CPU the processes' collectives use gloo (JAX_CPU_COLLECTIVES_IMPLEMENTATION). Alone: one
process.
Process 0 writes ``result.json`` into the work dir (TFYARN_WORK_DIR).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P  # noqa: N817 (JAX's own spelling)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=256)  # per process
    parser.add_argument("--work_dir", default=os.environ.get("TFYARN_WORK_DIR", "."))
    args = parser.parse_args()
    if "JAX_COORDINATOR_ADDRESS" in os.environ:  # launched as one of several processes
        jax.distributed.initialize()
    process = jax.process_index()
    print(f"process {process} of {jax.process_count()}: devices {jax.devices()}", flush=True)

    mesh = jax.make_mesh((jax.device_count(),), ("batch",))
    batch, replicated = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())
    true_w = np.arange(1.0, 9.0, dtype=np.float32)
    rng = np.random.default_rng(process)  # each process its own examples

    def local_batch() -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(size=(args.batch_size, 8)).astype(np.float32)
        return x, x @ true_w

    def loss(w: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.mean((x @ w - y) ** 2)

    @jax.jit
    def step(w: jax.Array, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        value, grad = jax.value_and_grad(loss)(w, x, y)  # the mean over the global batch
        return w - 0.05 * grad, value

    w = jax.device_put(jnp.zeros(8, jnp.float32), replicated)
    value = jnp.inf
    for _ in range(args.steps):
        x, y = local_batch()
        w, value = step(w, jax.make_array_from_process_local_data(batch, x),
                        jax.make_array_from_process_local_data(batch, y))
    final = float(value)
    print(f"process {process}: loss {final:.6f}", flush=True)
    if process == 0:
        result = {"processes": jax.process_count(), "devices": jax.device_count(),
                  "loss": final, "steps": args.steps}
        (Path(args.work_dir) / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
