"""A small programmatic interface: lint or fix source text without the command line.

>>> from ckptlint.api import lint_source
>>> [d.code for d in lint_source("from torch.utils.checkpoint import checkpoint\\ncheckpoint(f, x)\\n")]
['CKP001']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ckptlint.config.declarations import parse_target_version
from ckptlint.config.files import CliOverrides, build_settings
from ckptlint.config.settings import Settings, normalise_selectors
from ckptlint.lint.linter import FileLinter
from ckptlint.lint.results import FixMode, ProblemKind, io_error
from ckptlint.semantic.project import Project
from ckptlint.text.diagnostics import Diagnostic

__all__ = ["fix_source", "lint_source", "settings_for"]


def settings_for(
    select: Iterable[str] | None = None, ignore: Iterable[str] = (), target_versions: Mapping[str, str] | None = None
) -> Settings:
    """Settings with no configuration file, the given selection and ``cwd`` as root;
    ``target_versions``: library -> version or specifier set (``{"transformers": ">=5.24"}``),
    as ``--target-version`` gives them. Raises
    :class:`~ckptlint.config.declarations.InvalidTargetVersion` for an untracked library or a
    value that is not a version."""
    cli = CliOverrides(
        select=normalise_selectors(list(select), "select") if select is not None else None,
        ignore=normalise_selectors(list(ignore), "ignore"),
        target_versions=tuple(
            parse_target_version(library, value, "target_versions") for library, value in (target_versions or {}).items()
        ),
    )
    return build_settings(None, cli, Path.cwd())


def lint_source(
    text: str,
    path: str = "<string>.py",
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    project: Project | None = None,
    target_versions: Mapping[str, str] | None = None,
) -> list[Diagnostic]:
    """Lint ``text`` as if it were the file ``path``; returns sorted diagnostics.

    ``select``/``ignore`` take codes or prefixes (default: the default rule set);
    ``target_versions`` the library versions to judge for (nothing declared by default). A text that
    cannot be checked (a coding cookie naming an unknown encoding, too deeply nested) gives one
    CKP902 diagnostic, as on the command line. Raises
    :class:`~ckptlint.config.settings.UnknownRuleSelector` for an unknown code, ``RuntimeError`` for
    an internal error.
    """
    settings = settings_for(select, ignore, target_versions)
    result = FileLinter(project).lint(path, text.encode("utf-8"), settings, gate=False)
    errors = [p for p in result.problems if not p.unchecked and p.kind is not ProblemKind.WARNING]
    if errors:
        raise RuntimeError("; ".join(p.line() for p in errors))
    unchecked = [io_error(p.path, p.message) for p in result.problems if p.unchecked]
    return sorted(result.diagnostics + unchecked, key=lambda d: d.sort_key)


def fix_source(
    text: str,
    path: str = "<string>.py",
    *,
    unsafe: bool = False,
    select: Iterable[str] | None = None,
    project: Project | None = None,
    target_versions: Mapping[str, str] | None = None,
) -> str:
    """``text`` after applying every applicable fix (safe ones; unsafe ones too when
    ``unsafe``), iterated to a fixpoint."""
    settings = settings_for(select, target_versions=target_versions)
    result = FileLinter(project).lint(path, text.encode("utf-8"), settings, fix=FixMode.APPLY, unsafe=unsafe, gate=False)
    if any(p.kind in (ProblemKind.INTERNAL, ProblemKind.FIX) for p in result.problems):
        raise RuntimeError("; ".join(p.line() for p in result.problems))
    return result.fixed_text if result.fixed_text is not None else text
