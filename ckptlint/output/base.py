"""What every output format receives besides the diagnostics."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ckptlint.diagnostics import Diagnostic

__all__ = ["OutputContext", "Renderer", "display_path"]


@dataclass
class OutputContext:
    """Run-wide facts a format may show.

    Attributes:
        cwd: paths are shown relative to it when below it.
        unsafe_fixes: whether unsafe fixes would apply (decides the ``[*]`` marker).
        fix_applied: ``--fix`` was given (summaries say what was fixed).
        fixed: how many findings were fixed.
        unsafe_fixes_set: ``--unsafe-fixes``/``--no-unsafe-fixes`` or config chose it.
        show_fixes: list the fixes applied (``--show-fixes``).
        sources: file text by path, for formats that show source lines.
    """

    cwd: Path = field(default_factory=Path.cwd)
    unsafe_fixes: bool = False
    fix_applied: bool = False
    fixed: int = 0
    unsafe_fixes_set: bool = False
    show_fixes: bool = False
    statistics: bool = False
    sources: dict[str, str] = field(default_factory=dict)
    fixed_diagnostics: Sequence[Diagnostic] = ()

    def is_fixable(self, diagnostic: Diagnostic) -> bool:
        return diagnostic.fix is not None and diagnostic.fix.applies(self.unsafe_fixes)


Renderer = Callable[[Sequence[Diagnostic], OutputContext], str]


def display_path(path: str, cwd: Path) -> str:
    """``path`` relative to ``cwd`` with ``/`` separators when below it, else as given."""
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        return Path(path).as_posix()
    if relative.startswith(".."):
        return Path(path).as_posix()
    return Path(relative).as_posix()
