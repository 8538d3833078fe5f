"""Run by Python at the start of each process of a JAX job (the agent puts this directory
first on its PYTHONPATH): tfyarn's cluster detector for ``jax.distributed.initialize()``
(tfyarn/jaxcluster.py), then the sitecustomize this one hides, if the env has one."""

import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
try:
    from tfyarn import jaxcluster

    jaxcluster.install()
except Exception as exc:  # never in the way of the script
    print(f"tfyarn: jax.distributed.initialize() cannot find tfyarn's cluster: {exc}",
          file=sys.stderr)

# Only what comes after this directory on the path: one before it (tfyarn's stacks-on-signal
# sitecustomize, appmaster/agent/stackdump) ran already, and runs this one as its next.
_entries = [os.path.abspath(p or ".") for p in sys.path]
_after = sys.path[_entries.index(_here) + 1:] if _here in _entries else sys.path
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _after)
if _spec is not None and _spec.loader is not None:
    _theirs = importlib.util.module_from_spec(_spec)
    sys.modules["sitecustomize"] = _theirs
    _spec.loader.exec_module(_theirs)
