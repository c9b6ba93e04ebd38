"""Import timm for the tests, through the test-only torchvision stand-in where needed.

timm imports torchvision for a few names at import time; the only torchvision wheel for torch
2.13 that installs here is a CUDA build that fails to import beside the CPU torch wheel. Where
a real torchvision imports it is used; else ``torchvision_stub/`` (see its README) goes on
``sys.path``. Without timm (``pip install timm==1.0.31 --no-deps``) the caller skips.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

STUB = Path(__file__).parent / "torchvision_stub"


def import_timm() -> ModuleType:
    try:
        import torchvision  # noqa: F401 - a real torchvision, where one imports
    except Exception:  # noqa: BLE001 - the PyPI wheel raises RuntimeError beside the CPU torch wheel
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        if str(STUB) not in sys.path:
            sys.path.insert(0, str(STUB))
    try:
        import timm
    except Exception as exc:  # noqa: BLE001 - any import failure of timm is a reason to skip
        pytest.skip(f"timm does not import here: {type(exc).__name__}: {exc}")
    return timm
