"""What a well-formed entry of the result cache looks like (:mod:`ckptlint.lint.cache`).

A cache file is data that anything may have edited or damaged: an entry is used only when
every field has the type and range that :meth:`ResultCache.store` writes, its findings have
known rule codes and lie in the linted file or in a file its result read (CKP202 reports a
side effect where it is written), and its dependencies are real paths. Anything
else is a cache miss (the file is linted again and the entry overwritten), never output.
"""

from __future__ import annotations

import re

from ckptlint.registry import RULE_CODES

__all__ = ["is_real_path", "valid_dependencies", "valid_entry", "valid_state"]

_DIGEST = re.compile(r"[0-9a-f]{32}")
_CODES = frozenset(RULE_CODES)
_APPLICABILITIES = frozenset({"safe", "unsafe", "display-only"})
#: Problem kinds whose results are cached (those that depend only on a file's bytes).
_PROBLEM_KINDS = frozenset({"decode", "parse", "warning"})


def is_real_path(path: object) -> bool:
    """Whether ``path`` can name a file: a non-empty string without NUL (a name such as
    ``pkg/\\0self/name.py``, built from an attribute known only at run time, names none;
    ``os.stat`` raises ``ValueError`` on it)."""
    return isinstance(path, str) and bool(path) and "\0" not in path


def _count(value: object, least: int = 0) -> bool:
    """An integer (not a bool) of at least ``least``."""
    return type(value) is int and value >= least


def valid_state(value: object) -> bool:
    """``[size, mtime_ns]``: two non-negative integers."""
    return isinstance(value, list) and len(value) == 2 and all(_count(v) for v in value)


def valid_dependencies(deps: object) -> bool:
    """``{path: [digest, size, mtime_ns]}``, or ``[null, null, null]`` for a path looked for
    and not found; every path a real one."""
    if not isinstance(deps, dict):
        return False
    for path, known in deps.items():
        if not is_real_path(path) or not isinstance(known, list) or len(known) != 3:
            return False
        digest, size, mtime = known
        if digest is None:
            if size is not None or mtime is not None:
                return False
        elif not (isinstance(digest, str) and _DIGEST.fullmatch(digest) and _count(size) and _count(mtime)):
            return False
    return True


def _position(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_count(v, 1) for v in value)


def _location(value: object) -> bool:
    return isinstance(value, dict) and _count(value.get("row"), 1) and _count(value.get("column"), 1)


def _fix(value: object) -> bool:
    if value is None:
        return True
    if not isinstance(value, dict) or value.get("applicability") not in _APPLICABILITIES:
        return False
    edits = value.get("edits")  # None: a run that built no edits stored it (Fix.built false)
    return (
        isinstance(value.get("message"), str)
        and (edits is None or isinstance(edits, list))
        and all(
            isinstance(e, dict)
            and isinstance(e.get("content"), str)
            and _location(e.get("location"))
            and _location(e.get("end_location"))
            for e in edits or ()
        )
    )


def _diagnostic(value: object, path: str, deps: dict, shared: dict | None) -> bool:
    if not isinstance(value, dict):
        return False
    noqa_row = value.get("noqa_row")
    return (
        value.get("code") in _CODES
        and isinstance(value.get("message"), str)
        and _in_place(value.get("path"), path, deps, shared)
        and _position(value.get("start"))
        and _position(value.get("end"))
        and _fix(value.get("fix"))
        and (noqa_row is None or _count(noqa_row, 1))
        and value.get("cell") is None
    )


def _in_place(where: object, path: str, deps: dict, shared: dict | None) -> bool:
    """Whether a finding at ``where`` lies in the linted file or in a file its result read."""
    if not isinstance(where, str):
        return False
    return where == path or where in deps or (shared is not None and where in shared)


def valid_entry(path: str, entry: object, shared: dict | None = None) -> bool:
    """Whether ``entry`` is a well-formed cached result of linting ``path``: the gate's
    ``{"rejected": [size, mtime_ns]}``, or a linted file's hash, stat, module, dependencies
    (its own, or the name of a shared set: ``shared`` is that set, which the caller has
    checked with :func:`valid_dependencies` once for all the entries naming it; ``None`` when
    it is missing or malformed), findings, problems and the ``# noqa`` lines of other files it
    used. Does not check that the result is still current."""
    if not isinstance(entry, dict):
        return False
    if "rejected" in entry:
        return len(entry) == 1 and valid_state(entry["rejected"])
    module = entry.get("module")
    stat = entry.get("stat")
    depset = entry.get("depset")
    diagnostics = entry.get("diagnostics")
    problems = entry.get("problems")
    noqa_used = entry.get("noqa_used", [])
    deps = entry.get("deps")
    if not valid_dependencies(deps) or (depset is not None and shared is None):
        return False
    shared = shared if depset is not None else None
    return (
        isinstance(entry.get("hash"), str)
        and _DIGEST.fullmatch(entry["hash"]) is not None
        and (stat is None or valid_state(stat))
        and isinstance(module, list)
        and len(module) == 2
        and isinstance(module[0], str)
        and isinstance(module[1], bool)
        and (depset is None or isinstance(depset, str))
        and isinstance(diagnostics, list)
        and all(_diagnostic(d, path, deps, shared) for d in diagnostics)  # type: ignore[arg-type]
        and isinstance(problems, list)
        and all(
            isinstance(p, list) and len(p) == 2 and p[0] in _PROBLEM_KINDS and isinstance(p[1], str) for p in problems
        )
        and isinstance(noqa_used, list)
        and all(isinstance(u, list) and len(u) == 2 and is_real_path(u[0]) and _count(u[1], 1) for u in noqa_used)
    )
