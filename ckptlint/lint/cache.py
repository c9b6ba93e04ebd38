"""The persistent result cache (``.ckptlint_cache/``), after ruff's.

One JSON file per ckptlint build and effective settings,
``<cache dir>/<version>-<code>/<settings fingerprint>.json``, maps each linted file's path
to what linting it gave (diagnostics, and problems that depend only on its bytes) together
with everything that result depended on:

- the BLAKE2b digest of the file's bytes;
- its dotted module name (which ``__init__.py`` files around it decide);
- every other file its regions read (:attr:`FileResult.dependencies`) as ``[digest, size,
  mtime_ns]``, and ``[null, null, null]`` for each candidate path that was looked for and did
  not exist, so creating ``layers.py`` next to a ``layers/`` package invalidates too. A
  dependency whose size and modification time are unchanged is taken as unchanged without
  reading it (ruff's cache trusts modification times the same way); one whose time changed
  is read and compared by digest (a ``touch`` alone invalidates nothing).

A linted file's entry also holds its ``[size, mtime_ns]``, and a file the gate rejected gets
an entry of that alone (``{"rejected": [size, mtime_ns]}``): a later run that finds the same
size and modification time reuses the result without reading the file (:meth:`ResultCache.by_stat`;
ruff's cache trusts modification times the same way), and reads and compares it by digest
otherwise.

A result is reused only when all of these are unchanged; the ckptlint version, a
fingerprint of the installed package's source files (so an edited checkout never reuses
stale results) and :func:`results_fingerprint` (the settings that can change findings)
select the JSON file.

Robustness: a missing, unreadable, corrupt or foreign cache file is treated as empty and
rewritten; a cache folder that cannot be written is silently skipped (linting never fails
because of the cache). Writes go to a temporary file in the same folder, then
``os.replace`` it into place, so a reader never sees a partial file; a concurrent run's
entries are merged in just before writing, and the last writer wins for a path both wrote.
An entry is used only when it is well formed (:mod:`ckptlint.lint.cache_entries`: types,
ranges, known rule codes, findings of the linted file itself, real paths); anything else is a
miss. A dependency is a real path or nothing: a name built from an attribute known only at run
time is never stored nor looked up.

The cache folder, how it is marked and what ``--clean`` removes: :mod:`ckptlint.lint.cache_folder`.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

from ckptlint.lint.cache_entries import is_real_path, valid_dependencies, valid_entry
from ckptlint.lint.cache_folder import CACHEDIR_TAG, DEFAULT_CACHE_DIR, clean, make_cache_dir

if TYPE_CHECKING:
    from ckptlint.config.settings import Settings
    from ckptlint.lint.results import FileResult

__all__ = [
    "CACHEDIR_TAG",
    "DEFAULT_CACHE_DIR",
    "ResultCache",
    "cache_dir_for",
    "clean",
    "digest",
    "results_fingerprint",
]

_FORMAT = 4

#: Dependency lists longer than this (a result whose regions reach many modules,
#: or whose imports probe many absent paths) are kept once per cache file and named by entries.
_SHARED_DEPENDENCIES = 64
#: Problems that depend only on a file's bytes, so their results may be cached.
_CACHEABLE_PROBLEMS = frozenset({"decode", "parse", "warning"})


def digest(data: bytes) -> str:
    """The cache key of a file's bytes: BLAKE2b, 128 bits, as hex."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def cache_dir_for(settings: Settings) -> Path:
    """Where the cache of files linted with ``settings`` lives: ``settings.cache_dir``,
    relative to ``settings.root`` unless absolute."""
    path = Path(settings.cache_dir or DEFAULT_CACHE_DIR)
    return path if path.is_absolute() else settings.root / path


def results_fingerprint(settings: Settings) -> str:
    """:meth:`Settings.fingerprint` of the settings that can change a file's findings:
    those that only steer discovery, output, the cache itself or whether unsafe fixes are
    applied (the findings carry every fix with its applicability) are left out, so that
    ``--unsafe-fixes`` or another output format still reuse the cache. The root (the
    configuration's folder, else the working folder) matters only to ``per-file-ignores``;
    without them it is left out too, so runs from any folder of a project share its cache."""
    from dataclasses import replace

    from ckptlint.config.settings import DEFAULT_EXCLUDES

    neutral = replace(
        settings,
        root=settings.root if settings.per_file_ignores else Path("/"),
        unsafe_fixes=None,
        output_format=None,
        cache_dir=DEFAULT_CACHE_DIR,
        exclude=DEFAULT_EXCLUDES,
        extend_exclude=(),
        respect_gitignore=True,
        force_exclude=False,
        notebooks=True,
    )
    return neutral.fingerprint()


def _code_fingerprint() -> str:
    """The ckptlint version and a digest of the package's source files (relative path,
    size, modification time): a rebuilt or edited ckptlint starts a fresh cache."""
    import ckptlint

    package = Path(ckptlint.__file__).parent
    entries: list[str] = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "runtime"))
        for name in sorted(files):
            if name.endswith(".py"):
                try:
                    stat = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                entries.append(f"{os.path.relpath(os.path.join(folder, name), package)}:{stat.st_size}:{stat.st_mtime_ns}")
    code = hashlib.blake2b("\n".join(entries).encode(), digest_size=6).hexdigest()
    return f"{ckptlint.__version__}-{code}"


class _Bucket:
    """The entries of one cache file (one cache folder, build and settings)."""

    def __init__(self, path: Path, key: dict[str, str]) -> None:
        self.path = path
        self.key = key
        self.entries, self.depsets = _read_entries(path, key)
        self.updated: dict[str, dict[str, Any] | None] = {}  # path -> new entry, None: drop
        self._checked: dict[str, bool] = {}  # path -> whether its entry is well formed
        self._sets_checked: dict[str, bool] = {}  # shared set name -> whether it is well formed

    def entry(self, path: str) -> dict[str, Any] | None:
        """The entry of ``path`` when there is one and it is well formed, else ``None``."""
        entry = self.entries.get(path)
        if entry is None:
            return None
        valid = self._checked.get(path)
        if valid is None:
            ref = entry.get("depset")
            shared = self._shared(ref) if isinstance(ref, str) else None
            valid = self._checked[path] = valid_entry(path, entry, shared)
        return entry if valid else None

    def _shared(self, ref: str) -> dict[str, Any] | None:
        """The shared dependency set ``ref`` when it is there and well formed (checked once:
        one set may serve thousands of entries)."""
        valid = self._sets_checked.get(ref)
        if valid is None:
            valid = self._sets_checked[ref] = valid_dependencies(self.depsets.get(ref))
        return self.depsets[ref] if valid else None

    def dependencies(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        """The dependencies of ``entry``: its own, or the shared set it names (``None`` when
        that set is missing or malformed: the entry is not used)."""
        ref = entry.get("depset")
        return entry["deps"] if ref is None else self._shared(ref)

    def share(self, deps: dict[str, Any]) -> str:
        """Keep ``deps`` (a large dependency set: a search of a whole project) once for every
        entry that has it; the name entries refer to it by."""
        ref = digest(json.dumps(deps, sort_keys=True, separators=(",", ":")).encode())[:24]
        self.depsets[ref] = deps
        self._sets_checked.pop(ref, None)
        return ref

    def save(self) -> None:
        if not self.updated:
            return
        folder = self.path.parent
        make_cache_dir(folder.parent)
        folder.mkdir(parents=True, exist_ok=True)
        entries, depsets = _read_entries(self.path, self.key)  # merge what a concurrent run wrote
        depsets.update(self.depsets)
        for name, entry in self.updated.items():
            if entry is None:
                entries.pop(name, None)
            else:
                entries[name] = entry
        for name in [n for n in entries if n not in self.updated and not os.path.exists(n)]:
            del entries[name]  # the file is gone
        used = {e["depset"] for e in entries.values() if isinstance(e.get("depset"), str)}
        shared = {ref: deps for ref, deps in sorted(depsets.items()) if ref in used}
        data = {"format": _FORMAT, **self.key, "files": dict(sorted(entries.items())), "depsets": shared}
        temp = folder / f".tmp-{os.getpid()}-{secrets.token_hex(4)}.json"
        try:
            with open(temp, "x", encoding="utf-8") as out:
                json.dump(data, out, separators=(",", ":"))
            os.replace(temp, self.path)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
        self.updated.clear()


def _read_entries(path: Path, key: dict[str, str]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(entries by path, shared dependency sets by name) of the cache file ``path``."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}, {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return {}, {}
    if any(data.get(k) != v for k, v in key.items()):
        return {}, {}
    files = data.get("files")
    depsets = data.get("depsets")
    # the rest of an entry is checked when it is used (ResultCache entries: valid_entry)
    files = {k: v for k, v in files.items() if is_real_path(k) and isinstance(v, dict)} if isinstance(files, dict) else {}
    depsets = {k: v for k, v in depsets.items() if isinstance(v, dict)} if isinstance(depsets, dict) else {}
    return files, depsets


class ResultCache:
    """Reads and writes cached lint results for one run.

    Args:
        build: the cache's build key; defaults to the ckptlint version plus a fingerprint
            of its source files.

    Use :meth:`lookup` before linting a file (it returns a :class:`FileResult` on a hit),
    :meth:`store` after, and :meth:`save` once at the end of the run.
    """

    def __init__(self, build: str | None = None) -> None:
        self.build = build or _code_fingerprint()
        self._buckets: dict[tuple[Path, str], _Bucket] = {}
        self._digests: dict[str, str] = {}  # linted path -> digest of the bytes linted
        self._stats: dict[str, list[int]] = {}  # linted path -> [size, mtime_ns] before it was read
        self._dependency_digests: dict[str, str | None] = {}
        self._dependency_stats: dict[str, tuple[int, int] | None] = {}
        self._fingerprints: dict[Settings, str] = {}
        self.hits = 0
        self.misses = 0

    def _bucket(self, settings: Settings) -> _Bucket:
        fingerprint = self._fingerprints.get(settings)
        if fingerprint is None:
            fingerprint = self._fingerprints[settings] = results_fingerprint(settings)
        folder = cache_dir_for(settings)
        bucket = self._buckets.get((folder, fingerprint))
        if bucket is None:
            path = folder / self.build / f"{fingerprint}.json"
            bucket = _Bucket(path, {"build": self.build, "settings": fingerprint})
            self._buckets[(folder, fingerprint)] = bucket
        return bucket

    def by_stat(self, path: str, stat: os.stat_result, settings: Settings) -> FileResult | bool | None:
        """What ``path`` gave when it had this size and modification time (``stat``, taken
        before reading it), without reading it: ``True`` when the gate rejected it, its
        cached result when it was linted and everything the result depended on is unchanged
        (as :meth:`lookup`), else ``None`` (read it and call :meth:`lookup` or
        :meth:`rejected`). Not for ``--fix``/``--diff`` runs, which need the tree."""
        state = [stat.st_size, stat.st_mtime_ns]
        entry = self._bucket(settings).entry(path)
        if entry is None:
            return None
        if entry.get("rejected") == state:
            return True  # not counted: hits and misses are of linted files
        if entry.get("stat") != state:
            return None
        result = self._result(path, entry, self._bucket(settings))
        if result is not None:
            self._digests[path] = entry["hash"]
            self.hits += 1
        return result

    def rejected(self, path: str, stat: os.stat_result, settings: Settings) -> None:
        """Remember that the gate rejected ``path`` with this size and modification time."""
        self._bucket(settings).updated[path] = {"rejected": [stat.st_size, stat.st_mtime_ns]}

    def lookup(
        self,
        path: str,
        raw: bytes,
        settings: Settings,
        *,
        fixing: bool = False,
        unsafe: bool = False,
        stat: os.stat_result | None = None,
    ) -> FileResult | None:
        """The cached result of linting ``raw`` (the bytes of ``path``), or ``None``.

        With ``fixing`` (``--fix``/``--diff``), a result holding a fix that would be applied
        to this file (safe, or unsafe when ``unsafe``) is not used: the fix has to be
        computed from the tree, so the file is linted again. ``stat``: the file's, taken
        before ``raw`` was read; stored with the result for :meth:`by_stat`.
        """
        key = digest(raw)
        self._digests[path] = key
        if stat is not None:
            self._stats[path] = [stat.st_size, stat.st_mtime_ns]
        entry = self._bucket(settings).entry(path)
        if entry is None or entry.get("hash") != key:
            self.misses += 1
            return None
        result = self._result(path, entry, self._bucket(settings), fixing=fixing, unsafe=unsafe)
        if result is None:
            self.misses += 1
            return None
        self.hits += 1
        if stat is not None and entry.get("stat") != self._stats[path]:
            self._bucket(settings).updated[path] = {**entry, "stat": self._stats[path]}  # touched only
        return result

    def _result(
        self, path: str, entry: dict[str, Any], bucket: _Bucket, *, fixing: bool = False, unsafe: bool = False
    ) -> FileResult | None:
        """The result ``entry`` (of ``bucket``) holds for ``path`` when what it depended on is unchanged."""
        from ckptlint.lint.results import FileResult, Problem, ProblemKind
        from ckptlint.text.diagnostics import Diagnostic, edits_wanted

        try:
            deps = bucket.dependencies(entry)
            if deps is None or not self._still_valid(path, entry, deps):
                return None
            diagnostics = [Diagnostic.from_dict(d) for d in entry["diagnostics"]]
            problems = [Problem(path, message, ProblemKind(kind)) for kind, message in entry["problems"]]
            dependencies = list(deps)
            noqa_used = {(str(other), int(row)) for other, row in entry.get("noqa_used", ())}
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # a damaged entry: lint again and overwrite it
        if fixing and any(d.path == path and d.fix is not None and d.fix.chosen(unsafe) is not None for d in diagnostics):
            return None
        if edits_wanted() and any(d.fix is not None and not d.fix.built for d in diagnostics):
            return None  # stored by a run that built no edits: this one shows them
        return FileResult(
            path, diagnostics=diagnostics, problems=problems, dependencies=dependencies, noqa_used_elsewhere=noqa_used
        )

    def _still_valid(self, path: str, entry: dict[str, Any], deps: dict[str, Any]) -> bool:
        if entry["module"] != _module_of(path):
            return False
        for dep, (known, size, mtime) in deps.items():
            state = self._dependency_stat(dep)
            if known is None or state is None:
                if known is not None or state is not None:
                    return False  # appeared, or vanished
                continue
            if state != (size, mtime) and self._dependency_digest(dep) != known:
                return False
        return True

    def _dependency_stat(self, path: str) -> tuple[int, int] | None:
        """``(size, mtime_ns)`` of the regular file at ``path``; ``None`` when there is none
        (absent, a folder, unreadable)."""
        if path not in self._dependency_stats:
            try:
                stat = os.stat(path)
                self._dependency_stats[path] = (stat.st_size, stat.st_mtime_ns) if S_ISREG(stat.st_mode) else None
            except (OSError, ValueError):  # ValueError: not a path (a NUL in it)
                self._dependency_stats[path] = None
        return self._dependency_stats[path]

    def _dependency_entry(self, path: str) -> list[Any]:
        state = self._dependency_stat(path)
        if state is None:
            return [None, None, None]
        return [self._dependency_digest(path), *state]

    def _dependency_digest(self, path: str) -> str | None:
        if path not in self._dependency_digests:
            try:
                with open(path, "rb") as handle:
                    self._dependency_digests[path] = digest(handle.read())
            except (OSError, ValueError):  # absent (or a folder, or unreadable): the loader saw no module
                self._dependency_digests[path] = None
        return self._dependency_digests[path]

    def store(self, result: FileResult, settings: Settings) -> None:
        """Remember ``result`` (of the bytes given to :meth:`lookup` for its path). Results
        with problems that may not recur (internal errors, unreadable files) and files
        rewritten by a fix are not stored."""
        key = self._digests.get(result.path)
        if key is None or result.changed:
            return
        if any(p.kind not in _CACHEABLE_PROBLEMS for p in result.problems):
            self._bucket(settings).updated[result.path] = None
            return
        bucket = self._bucket(settings)
        deps = {dep: self._dependency_entry(dep) for dep in result.dependencies if is_real_path(dep)}
        if len(deps) > _SHARED_DEPENDENCIES:
            # the file itself too, so that the modules of one project share one set (its own
            # bytes are checked by the entry's hash anyway)
            own = os.path.abspath(result.path)
            deps = dict(sorted({**deps, own: self._dependency_entry(own)}.items()))
            shared = {"deps": {}, "depset": bucket.share(deps)}
        else:
            shared = {"deps": deps}
        bucket.updated[result.path] = {
            "hash": key,
            "stat": self._stats.get(result.path),
            "module": _module_of(result.path),
            **shared,
            "diagnostics": [d.to_dict() for d in result.diagnostics],
            "problems": [[p.kind, p.message] for p in result.problems],
            "noqa_used": sorted([other, row] for other, row in result.noqa_used_elsewhere),
        }

    def save(self) -> None:
        """Write every changed cache file; a folder that cannot be written is skipped."""
        for bucket in self._buckets.values():
            try:
                bucket.save()
            except OSError:
                pass


def _module_of(path: str) -> list[Any]:
    """``[dotted name, is_package]`` as the engine computes it for ``path``."""
    if not os.path.isabs(path):
        return ["", False]
    from ckptlint.semantic.project import module_name_for

    name, is_package, _ = module_name_for(Path(path))
    return [name, is_package]
