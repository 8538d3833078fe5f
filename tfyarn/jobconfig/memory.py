"""Memory sizes as people write them: megabytes as a whole number (Slider's "2048"), or with a
unit as Spark and skein take them ("2g", "512m", "1.5 GiB", "4096 MB").

YARN counts memory in MiB; so does tfyarn's yarn.memory, whatever the unit's spelling (k, m, g,
t; with or without "b", "ib"; any case), as Spark's and skein's sizes do.
"""

from __future__ import annotations

import re
from typing import Any

from tfyarn.jobconfig.documents import as_int

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt])(?:i?b)?\s*", re.IGNORECASE)
_PER_MB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
UNITS_HINT = 'or with a unit, e.g. "2g" or "512 MiB"'


def megabytes(value: Any) -> int | None:
    """The size in MB (MiB), or None when it is no size. A whole number is MB; a fraction of
    a MB (e.g. "1.0001g") is refused rather than rounded."""
    plain = as_int(value)
    if plain is not None:
        return plain
    match = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return None
    mb = float(match[1]) * _PER_MB[match[2].lower()]
    return int(mb) if mb == int(mb) else None
