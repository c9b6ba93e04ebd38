"""Which helper (see :mod:`ckptlint.checkpoint.sites.helper_sites`) a call calls.

- ``run(block, x)``: a function of this module, or one imported from a module of the linted
  tree (``from .utils import run``, ``utils.run(...)`` after ``from . import utils``);
- ``self.ckpt(block, x)``: a method of the class around the call or of one of its base
  classes (of this module, or imported from a module of the tree).

A module of the tree is read only when its text mentions a checkpoint API (a cheap byte
test; the read is recorded as a dependency of the linted file), then parsed once and its
helpers summarised once (kept with its analysis).

Holds that byte test (``_may_define_helper`` and the caches behind it), used by
:mod:`ckptlint.checkpoint.sites.ast_helper_calls`, which resolves the calls.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.facts.apis import gate_names

if TYPE_CHECKING:

    pass


__all__ = []


_WORDS = tuple(w.encode() for w in sorted(gate_names()[0] | {"checkpoint", "ckpt", "recompute"}))


#: (path, size, mtime) -> the names the file defines with a ``def`` whose text mentions a
#: checkpoint API, and the names it imports (re-exports; ``*`` for a star import).
_MENTIONS: dict[tuple[str, int, int], frozenset[str]] = {}


#: path -> (the text of its editor buffer, the names as for ``_MENTIONS``), for its last text
_BUFFER_MENTIONS: dict[str, tuple[str, frozenset[str]]] = {}


_DEF = re.compile(rb"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)


_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)


_WORD = re.compile(rb"\w+")


_MAX_REMEMBERED = 50_000


_MAX_BUFFERS = 64


def _checkpointing_defs(raw: bytes) -> list[bytes]:
    """The names of the ``def``s of ``raw`` whose text (to the next line indented no deeper)
    mentions a checkpoint API: only those can be helpers (a module that loads "checkpoints"
    of weights is not read for its other functions). A line that starts with a closing
    bracket (``):`` of a signature written one parameter a line) does not end the text."""
    if not any(word in raw for word in _WORDS):
        return []
    found: list[bytes] = []
    for match in _DEF.finditer(raw):
        indent = len(match.group(1))
        end = re.compile(rb"\n[ \t]{0,%d}(?=[^\s#)\]}])" % indent).search(raw, match.end())
        body = raw[match.end() : end.start() if end else len(raw)]
        if any(word in body for word in _WORDS):
            found.append(match.group(2))
    return found


def _may_define_helper(path: Path, name: str, unsaved: str | None = None) -> bool:
    """Whether the file at ``path`` defines a function or method ``name`` whose text mentions
    a checkpoint API, or imports ``name`` (or ``*``), from its bytes (kept per file version);
    ``unsaved``: its text in an editor's buffer, read instead of the file."""
    found = _buffer_helper_names(str(path), unsaved) if unsaved is not None else _file_helper_names(path)
    return name in found or "*" in found


def _buffer_helper_names(path: str, text: str) -> frozenset[str]:
    """:func:`_helper_names` of an editor's buffer, kept for its last text (a lint asks once
    per call site that may call a helper of the module: a 280 kB module, 50 call sites, took
    0.39 s a lint when each asked anew)."""
    kept = _BUFFER_MENTIONS.get(path)
    if kept is not None and (kept[0] is text or kept[0] == text):
        return kept[1]
    if len(_BUFFER_MENTIONS) >= _MAX_BUFFERS and path not in _BUFFER_MENTIONS:
        _BUFFER_MENTIONS.clear()  # buffers of documents closed since: their texts are not kept
    found = _helper_names(text.encode("utf-8", "surrogatepass"))
    _BUFFER_MENTIONS[path] = (text, found)
    return found


def _file_helper_names(path: Path) -> frozenset[str]:
    """:func:`_helper_names` of the file at ``path``, kept per file version."""
    try:
        stat = path.stat()
    except OSError:
        return frozenset()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    found = _MENTIONS.get(key)
    if found is None:
        try:
            raw = path.read_bytes() if path.is_file() else b""
        except OSError:
            raw = b""
        if len(_MENTIONS) > _MAX_REMEMBERED:
            _MENTIONS.clear()  # a long-running server: old file versions
        found = _MENTIONS[key] = _helper_names(raw)
    return found


def _helper_names(raw: bytes) -> frozenset[str]:
    """The names ``raw`` defines with a ``def`` mentioning a checkpoint API, and those it
    imports with ``from ... import`` (re-exports: ``from .gradient import helper`` / ``*``)."""
    defined = _checkpointing_defs(raw)
    for names in _FROM_IMPORT.findall(raw):
        defined += _WORD.findall(names) + ([b"*"] if b"*" in names else [])
    return frozenset(d.decode("ascii", "replace") for d in defined)


