"""The cache folder on disk: what ckptlint writes there, how it is marked, and ``--clean``,
which removes what ckptlint wrote and nothing else.

What ckptlint writes in a cache folder (:mod:`ckptlint.lint.cache`):

- ``CACHEDIR.TAG`` (https://bford.info/cachedir/: backup tools skip the folder) and a
  ``.gitignore`` holding ``*``, as ruff 0.17 marks its ``.ruff_cache``; written only into a
  folder that ckptlint creates, that is empty, or that already holds ckptlint's tag, so that
  ``--cache-dir .`` never git-ignores a project nor tags it as disposable;
- one folder per build, ``<version>-<12 hex digits>/``, holding ``<settings fingerprint>.json``
  cache files (each starting ``{"format":N,"build":"<that folder's name>"``) and, while a run
  writes, ``.tmp-<pid>-<8 hex digits>.json``.

:func:`clean` removes exactly those files (a file of the expected name whose first bytes do
not name its build folder is not ours and stays), then the folders they leave empty; the tag
and ``.gitignore`` go only when they hold ckptlint's own text; a folder that still holds
anything else (a user's files, another tool's cache) stays, with that content. ruff 0.17.6
likewise leaves a shared ``--cache-dir`` intact.

A cache folder that is a symbolic link (``--cache-dir LINK``, ``.ckptlint_cache -> elsewhere``)
is where ckptlint wrote its cache: the runs write through the link. :func:`clean` removes
ckptlint's files from the folder it points to, by the same rules, and keeps the link and that
folder (emptied of ckptlint's files, it still serves the next run); a broken link is reported
and left alone. ruff's ``remove_dir_all`` would remove just the link and leave the cache
files where they lie.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CACHEDIR_TAG", "DEFAULT_CACHE_DIR", "GITIGNORE", "Cleaned", "clean", "make_cache_dir"]

DEFAULT_CACHE_DIR = ".ckptlint_cache"
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by ckptlint.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)
GITIGNORE = "# Automatically created by ckptlint.\n*\n"

_BUILD = re.compile(r"[0-9][0-9A-Za-z.+!]*-[0-9a-f]{12}")
_CACHE_FILE = re.compile(r"[0-9a-f]{8,64}\.json")
_TEMPORARY = re.compile(r"\.tmp-[0-9]+-[0-9a-f]{8}\.json")
#: Bytes read from the start of a cache file to recognise it as ckptlint's.
_HEAD = 512


def make_cache_dir(folder: Path) -> None:
    """Create ``folder`` (and its parents); mark it with ``CACHEDIR.TAG`` and ``.gitignore``
    when it was created here, is empty, or is already marked as ckptlint's. Raises
    ``OSError`` when it cannot be created."""
    try:
        held = os.listdir(folder)
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True)
        held = []
    except OSError:
        held = None  # not a folder, or not readable: mkdir below reports it
        folder.mkdir(parents=True, exist_ok=True)
    if held is None or (held and not _holds_text(folder / "CACHEDIR.TAG", CACHEDIR_TAG)):
        return
    for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", GITIGNORE)):
        if not os.path.lexists(folder / name):
            (folder / name).write_text(text, encoding="utf-8")


def _holds_text(path: Path, text: str) -> bool:
    """Whether ``path`` is a regular file (not a link) holding exactly ``text``."""
    try:
        if not path.is_file() or path.is_symlink():
            return False
        with open(path, "rb") as handle:
            return handle.read(len(text) + 1) == text.encode("utf-8")
    except OSError:
        return False


def _is_cache_file(path: Path, build: str) -> bool:
    """Whether ``path`` (named like a cache file of the build folder ``build``) is one that
    ckptlint wrote: a regular file whose first bytes name that build."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD)
    except OSError:
        return False
    if _TEMPORARY.fullmatch(path.name) and head == b"":
        return True  # a write that never got its first bytes out
    return head.startswith(b'{"format":') and f'"build":{_json_string(build)}'.encode() in head


def _json_string(text: str) -> str:
    import json

    return json.dumps(text)


def _clean_folder(folder: Path, keep_folder: bool = False) -> bool:
    """Remove what ckptlint wrote in the cache folder ``folder``; remove ``folder`` itself
    when nothing else is left, unless ``keep_folder`` (a symbolic link points to it).
    Returns whether anything was removed."""
    removed = False
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    for entry in entries:
        if not _BUILD.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        build = Path(entry.path)
        try:
            files = list(os.scandir(build))
        except OSError:
            continue
        for item in files:
            path = Path(item.path)
            if (_CACHE_FILE.fullmatch(item.name) or _TEMPORARY.fullmatch(item.name)) and _is_cache_file(path, entry.name):
                try:
                    path.unlink()
                    removed = True
                except OSError:
                    pass
        removed = _remove_if_empty(build) or removed
    markers = [folder / "CACHEDIR.TAG", folder / ".gitignore"]
    try:
        left = set(os.listdir(folder)) - {m.name for m in markers}
    except OSError:
        return removed
    ours = _holds_text(markers[0], CACHEDIR_TAG)
    if not left and ours:
        for marker, text in zip(markers, (CACHEDIR_TAG, GITIGNORE), strict=True):
            if _holds_text(marker, text):
                marker.unlink()
        removed = True
    if (removed or ours) and not keep_folder:
        removed = _remove_if_empty(folder) or removed
    return removed


def _remove_if_empty(folder: Path) -> bool:
    if os.path.abspath(folder) == os.getcwd():
        return False  # `--cache-dir .`: never the working folder itself
    try:
        folder.rmdir()
        return True
    except OSError:  # not empty (or not ours to remove)
        return False


@dataclass(frozen=True)
class Cleaned:
    """A cache folder :func:`clean` looked at: ``folder`` as configured or found, ``target``
    the folder it points to when it is a symbolic link (``None`` for a broken link), and
    ``outcome``: ``"removed"`` (the folder went with ckptlint's files), ``"files"`` (its
    other content, or the link and the folder it points to, stay) or ``"broken link"``
    (nothing removed)."""

    folder: Path
    target: Path | None
    outcome: str


def clean(paths: Iterable[Path], extra: Iterable[Path] = ()) -> list[Cleaned]:
    """``--clean``: remove what ckptlint wrote in the cache folders below ``paths`` (folders
    named ``.ckptlint_cache``, or links of that name) and in the folders ``extra`` (configured
    cache folders), and each such folder once nothing else is left in it; through a symbolic
    link, the files in the folder it points to (see the module docs). Returns what was
    cleaned, and the broken links met."""
    candidates: list[Path] = [Path(p) for p in extra]
    for given in paths:
        if Path(given).is_dir():
            candidates += _default_cache_dirs(Path(given))
    cleaned: list[Cleaned] = []
    seen: set[str] = set()
    for folder in candidates:
        folder = Path(os.path.abspath(folder))
        real = os.path.realpath(folder)
        if str(folder) in seen or real in seen:
            continue
        seen.update((str(folder), real))
        if folder.is_symlink():
            if not os.path.isdir(real):
                if not os.path.exists(real):
                    cleaned.append(Cleaned(folder, None, "broken link"))
                continue
            if _clean_folder(Path(real), keep_folder=True):
                cleaned.append(Cleaned(folder, Path(real), "files"))
            continue
        if not folder.is_dir():
            continue
        if _clean_folder(folder):
            cleaned.append(Cleaned(folder, None, "files" if folder.exists() else "removed"))
    return cleaned


def _default_cache_dirs(top: Path) -> list[Path]:
    """The entries named ``.ckptlint_cache`` at or below ``top`` (not below ``.git`` nor inside
    one another; links to folders not walked, but a link of that name is listed). A walk with a stack of its own: ``os.walk``
    recurses before Python 3.12 and stops at a folder about 1,000 levels deep."""
    found: list[Path] = []
    pending = [str(top)]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        except OSError:
            continue
        folders = sorted(name for name, is_dir in listed if is_dir)
        if any(name == DEFAULT_CACHE_DIR for name, _ in listed):  # a folder, or a link to one
            found.append(Path(folder) / DEFAULT_CACHE_DIR)
        pending += [os.path.join(folder, name) for name in reversed(folders) if name not in (DEFAULT_CACHE_DIR, ".git")]
    return found
