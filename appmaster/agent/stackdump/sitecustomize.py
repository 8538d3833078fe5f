"""Run by Python at the start of every task process (the agent puts this directory first on
its PYTHONPATH): on the signal TFYARN_STACKS_SIGNAL names, the process writes every thread's
Python stack to its stderr (its log file) and goes on. The agent sends it when the stall
watchdog fires (appmaster/agent/steps.py). Then the environment's own sitecustomize, if it has
one, runs as it would have.

Only the standard library, and nothing else at a process's start: it runs before every
script, on any Python from 3.10.
"""

import faulthandler
import os
import sys


def _register() -> None:
    number = os.environ.get("TFYARN_STACKS_SIGNAL", "")
    if number.isdigit():
        # chain=False: the signal's default action would end the process
        faulthandler.register(int(number), file=sys.stderr, all_threads=True, chain=False)


def _next_sitecustomize() -> None:
    """The sitecustomize this one hides (a distribution's or the env's), run in its place."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    entries = [os.path.abspath(p or ".") for p in sys.path]
    # only what comes after this directory: one earlier on the path ran before this one
    path = sys.path[entries.index(here) + 1:] if here in entries else sys.path
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _register()
except (ValueError, RuntimeError, OSError) as exc:  # never stop the script for it
    print(f"tfyarn: no stacks on signal: {exc}", file=sys.stderr)
_next_sitecustomize()
