"""Loading the parity scripts of ``benchmarks/`` (``ast_*_parity.py``) for the tests that run
their comparisons: each script is a module of its own name, loaded once per process (the
records its dataclasses define are looked up by module), with its sibling modules importable."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["BENCHMARKS", "load_parity"]

#: The folder of the parity scripts.
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_parity(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as module ``name`` (the one already loaded, if any). Raises
    ``FileNotFoundError`` when the script is missing."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # its sibling modules
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
