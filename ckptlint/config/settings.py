"""Effective settings and rule selection (ruff's semantics).

Selection is layered: the configuration file is one layer, the command line another. In a
layer, ``select`` (when given) starts from nothing; ``select``/``extend-select`` enable and
``ignore`` disables; for each rule the most specific matching prefix wins (``ALL`` is the
least specific; on a tie ``ignore`` wins). Codes are matched by prefix: ``CKP1`` selects
CKP101, CKP102, ...
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ckptlint.facts.versions import TargetVersion
from ckptlint.rule_codes import OFF_BY_DEFAULT, RULE_CODES
from ckptlint.text.diagnostics import Applicability

__all__ = [
    "OUTPUT_FORMATS",
    "DEFAULT_EXCLUDES",
    "RuleSelection",
    "SelectionLayer",
    "Settings",
    "UnknownRuleSelector",
    "validate_selector",
]

#: ruff's default excludes (plus our cache folder), matched against every path component.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".ckptlint_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

#: The names ``output-format`` (and ``--output-format``) accepts; :mod:`ckptlint.output` has a
#: renderer for each (``tests/test_architecture.py`` checks they agree).
OUTPUT_FORMATS: tuple[str, ...] = ("concise", "full", "json", "json-lines", "github", "gitlab", "sarif", "junit")


class UnknownRuleSelector(ValueError):
    """A code or prefix that selects no rule (``CKP0001``, ``XYZ``)."""


def validate_selector(selector: str) -> str:
    """Return ``selector`` normalised (upper case); raise :class:`UnknownRuleSelector` when
    it matches no rule."""
    normalised = selector.strip().upper()
    if normalised == "ALL":
        return normalised
    if not normalised or not any(code.startswith(normalised) for code in RULE_CODES):
        raise UnknownRuleSelector(selector)
    return normalised


@dataclass(frozen=True)
class SelectionLayer:
    """One layer of selection: the config file or the command line."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def _specificity(selector: str) -> int:
    return 0 if selector == "ALL" else len(selector)


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


@dataclass(frozen=True)
class RuleSelection:
    """The set of enabled rule codes after applying every layer."""

    layers: tuple[SelectionLayer, ...]

    def enabled(self, default: Iterable[str]) -> frozenset[str]:
        state = {code: code in set(default) for code in RULE_CODES}
        for layer in self.layers:
            if layer.select is not None:
                state = dict.fromkeys(RULE_CODES, False)
            choices = [(s, True) for s in (layer.select or ())] + [(s, True) for s in layer.extend_select]
            choices += [(s, False) for s in layer.ignore]
            for code in RULE_CODES:
                best: tuple[tuple[int, bool], bool] | None = None
                for selector, enable in choices:
                    if not _matches(selector, code):
                        continue
                    rank = (_specificity(selector), not enable)  # on a tie, ignore wins
                    if best is None or rank > best[0]:
                        best = (rank, enable)
                if best is not None:
                    state[code] = best[1]
        return frozenset(code for code, on in state.items() if on)


@dataclass(frozen=True)
class Settings:
    """The settings that apply to one file.

    Attributes:
        root: the folder of the configuration file (or the working directory without one);
            excludes and per-file-ignores are relative to it.
        config_path: the configuration file, or ``None``.
        enabled: enabled rule codes.
        per_file_ignores: ``(pattern, codes)`` pairs, gitignore-style patterns.
        exclude: patterns replacing :data:`DEFAULT_EXCLUDES`; extend_exclude: added ones.
        unsafe_fixes: whether unsafe fixes apply (``None``: not set; hidden but counted).
        extend_safe_fixes / extend_unsafe_fixes: code prefixes whose fixes are promoted to
            safe / demoted to unsafe.
        respect_gitignore: skip files ignored by ``.gitignore``.
        force_exclude: apply excludes to files named on the command line too.
        cache_dir: where the cache lives (relative paths are relative to ``root``).
        notebooks: lint Jupyter notebooks (``.ipynb``) found in folders and named on the
            command line (``notebooks = false`` turns them off).
        target_versions: the library versions the file's project allows, one per library
            (declared, or overridden by ``target-versions`` / ``--target-version``; see
            :mod:`ckptlint.config.declarations`); rules decide version-dependent facts from them.
    """

    root: Path
    config_path: Path | None = None
    enabled: frozenset[str] = field(default_factory=frozenset)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    extend_safe_fixes: tuple[str, ...] = ()
    extend_unsafe_fixes: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    cache_dir: str = ".ckptlint_cache"
    output_format: str | None = None
    notebooks: bool = True
    target_versions: tuple[TargetVersion, ...] = ()

    @property
    def all_excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude

    def promote(self, code: str) -> Applicability | None:
        """``SAFE``/``UNSAFE`` when the fix safety of ``code`` is overridden (by
        ``extend-safe-fixes``/``extend-unsafe-fixes``; the longer prefix wins), else ``None``."""
        safe = max((len(p) for p in self.extend_safe_fixes if _matches(p, code)), default=-1)
        unsafe = max((len(p) for p in self.extend_unsafe_fixes if _matches(p, code)), default=-1)
        if safe < 0 and unsafe < 0:
            return None
        return Applicability.SAFE if safe > unsafe else Applicability.UNSAFE

    def ignored_for(self, relative_path: str) -> frozenset[str]:
        """Codes disabled for ``relative_path`` (``/``-separated, relative to ``root``) by
        ``per-file-ignores``."""
        from ckptlint.config.patterns import (
            pattern_matches,  # local: pathspec is not needed to lint
        )

        codes: set[str] = set()
        for pattern, selectors in self.per_file_ignores:
            if pattern_matches(pattern, relative_path):
                for selector in selectors:
                    codes.update(c for c in RULE_CODES if _matches(selector, c))
        return frozenset(codes)

    def fingerprint(self) -> str:
        """A stable hash of everything that changes findings (for the cache)."""
        data = asdict(self)
        data["root"] = str(self.root)
        data["config_path"] = str(self.config_path)
        data["enabled"] = sorted(self.enabled)
        blob = json.dumps(data, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def default_enabled() -> frozenset[str]:
    """Rules enabled when nothing is selected: every rule whose class does not opt out."""
    return frozenset(code for code in RULE_CODES if code not in OFF_BY_DEFAULT)


def normalise_selectors(values: Sequence[str], where: str) -> tuple[str, ...]:
    """Validate every selector; raise :class:`UnknownRuleSelector` naming ``where``."""
    out = []
    for value in values:
        try:
            out.append(validate_selector(value))
        except UnknownRuleSelector:
            raise UnknownRuleSelector(f"{where}: unknown rule selector `{value}`") from None
    return tuple(out)
