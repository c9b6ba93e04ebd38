"""The files of a tree that the ``ast`` port's parity benchmarks compare
(``ast_model_parity.py``, ``ast_sites_parity.py``, ``ast_homemade_parity.py``,
``ast_misuse_parity.py``): the gated ``.py`` files (every one with ``every_file``) that both
CPython's parser and libcst accept, with their dotted module names (folders as packages)."""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ckptlint.lint.gate import file_may_have_findings
from ckptlint.semantic.parse import parse_module_unvalidated
from ckptlint.text.source import decode_source

__all__ = ["TreeFile", "comparable_files", "module_name_of", "multiset_mismatches"]


@dataclass(frozen=True)
class TreeFile:
    """One compared file: its path, decoded text, dotted module name and whether it is a package."""

    path: Path
    text: str
    module_name: str
    is_package: bool


def module_name_of(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of ``path`` below ``root`` (folders as packages) and whether it is a package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def comparable_files(root: Path, every_file: bool = False) -> tuple[list[TreeFile], int]:
    """The files of ``root`` to compare, in path order, and how many were skipped because one of
    the parsers refuses them."""
    files: list[TreeFile] = []
    skipped = 0
    for path in sorted(root.rglob("*.py")):
        if not path.is_file():
            continue
        raw = path.read_bytes()
        if not every_file and not file_may_have_findings(raw, str(path)):
            continue
        try:
            text = decode_source(raw, str(path)).text
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(text)
            parse_module_unvalidated(text)
        except Exception:  # noqa: BLE001 - a file one of the parsers refuses is not compared
            skipped += 1
            continue
        files.append(TreeFile(path, text, *module_name_of(path, root)))
    return files, skipped


def multiset_mismatches(expected: Iterable[object], got: Iterable[object], what: str = "") -> list[str]:
    """What one side read and the other did not, as multisets of ``repr``s, sorted: ``"<what> only
    in libcst: ..."`` for ``expected`` (libcst's readings), ``"<what> only in ast: ..."`` for ``got``."""
    left, right = Counter(map(repr, expected)), Counter(map(repr, got))
    prefix = f"{what} " if what else ""
    return [f"{prefix}only in libcst: {item}" for item in sorted((left - right).keys())] + [
        f"{prefix}only in ast: {item}" for item in sorted((right - left).keys())
    ]
