"""Everything that differs by framework, one module each (base.py says what each declares)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from appmaster.common.frameworks.base import FrameworkTraits
from appmaster.common.frameworks.jax import JAX
from appmaster.common.frameworks.pytorch import PYTORCH
from appmaster.common.frameworks.tensorflow import TENSORFLOW
from appmaster.common.settings import CHECKPOINT_PREFIX, FRAMEWORK

KNOWN: dict[str, FrameworkTraits] = {f.word.value: f for f in (TENSORFLOW, PYTORCH, JAX)}


def of(framework: str) -> FrameworkTraits:
    """The framework named by site.global.framework's value."""
    try:
        return KNOWN[str(framework)]
    except KeyError:
        raise ValueError(f"unknown framework {framework!r}") from None


def work_dir_flag(given: Mapping[str, Any]) -> str:
    """site.global.user.scripts.work_dir_flag where appConfig's settings ``given`` name none:
    the job's framework's flag (none for a framework unknown, which its own check refuses),
    --ckp_dir for a TensorFlow job with Slider's site.global.user.checkpoint.prefix, as
    Slider's TensorFlow package read it."""
    traits = KNOWN.get(str(given.get(FRAMEWORK.key, FRAMEWORK.default)))
    flag = "" if traits is None else traits.work_dir_flag
    return "--ckp_dir" if flag and given.get(CHECKPOINT_PREFIX.key) else flag
