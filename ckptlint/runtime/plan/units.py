"""Budgets as numbers or strings (``"8GiB"``), and sizes written back for people.

Binary units are powers of 1024 (``KiB``, ``MiB``, ``GiB``, ``TiB``; ``K``/``M``/``G``/``T``
alone mean the same, as in ``torch.cuda`` memory summaries), decimal units powers of 1000
(``kB``, ``MB``, ``GB``, ``TB``). A bare number is bytes.
"""

from __future__ import annotations

import math
import re

from ckptlint.runtime.memory import format_bytes

__all__ = ["format_bytes", "parse_budget"]

_UNITS = {
    "": 1, "b": 1,
    "k": 2**10, "kib": 2**10, "kb": 10**3,
    "m": 2**20, "mib": 2**20, "mb": 10**6,
    "g": 2**30, "gib": 2**30, "gb": 10**9,
    "t": 2**40, "tib": 2**40, "tb": 10**12,
}
_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_budget(budget: int | float | str) -> int:
    """Bytes of ``budget``: an int or float (bytes) or a string such as ``"8GiB"``, ``"512 MB"``.

    Raises:
        ValueError: not a positive size, or an unknown unit.
        TypeError: neither a number nor a string.
    """
    if isinstance(budget, bool) or not isinstance(budget, (int, float, str)):
        raise TypeError(f"budget must be bytes (a number) or a string such as '8GiB', got {budget!r}")
    if isinstance(budget, str):
        found = _PATTERN.match(budget)
        if found is None or found.group(2).lower() not in _UNITS:
            raise ValueError(f"budget {budget!r}: expected a size such as '8GiB', '512MiB', '2.5GB' or a number of bytes")
        value = float(found.group(1)) * _UNITS[found.group(2).lower()]
    else:
        value = float(budget)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"budget must be a positive size, got {budget!r}")
    return int(value)
