"""Everything that differs by framework, one module each (base.py says what each declares)."""

from __future__ import annotations

from appmaster.common.frameworks.base import FrameworkTraits
from appmaster.common.frameworks.jax import JAX
from appmaster.common.frameworks.pytorch import PYTORCH
from appmaster.common.frameworks.tensorflow import TENSORFLOW

KNOWN: dict[str, FrameworkTraits] = {f.word.value: f for f in (TENSORFLOW, PYTORCH, JAX)}


def of(framework: str) -> FrameworkTraits:
    """The framework named by site.global.framework's value."""
    try:
        return KNOWN[str(framework)]
    except KeyError:
        raise ValueError(f"unknown framework {framework!r}") from None
