"""What every output format receives besides the diagnostics, and helpers they share."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from ckptlint.registry import (  # re-exported: the formats' helpers
    rule_name,
    severity_of,
)
from ckptlint.text.diagnostics import Diagnostic
from ckptlint.text.reading import load_source
from ckptlint.text.source import SourceDecodeError, SourceFile

__all__ = [
    "OutputContext",
    "Renderer",
    "display_path",
    "encodable",
    "find_repository_root",
    "printable",
    "raw_bytes",
    "relative_uri",
    "rule_name",
    "severity_of",
]


@dataclass
class OutputContext:
    """Run-wide facts a format may show.

    Attributes:
        cwd: paths are shown relative to it when below it.
        unsafe_fixes: whether unsafe fixes would apply (decides the ``[*]`` marker).
        fix_applied: ``--fix`` was given (summaries say what was fixed).
        fixed: how many findings were fixed.
        show_fixes: list the fixes applied (``--show-fixes``).
        statistics: ``--statistics`` was given.
        quiet: ``--quiet``: findings only, no summary lines.
        sources: file text by path (after fixes, when fixes were applied), for formats that
            show source lines or fingerprint it; other files are read from disk on demand.
        fixed_by_file: path -> {code: findings fixed} (``--show-fixes``).
        env: the environment (``GITHUB_STEP_SUMMARY``, ``GITHUB_SERVER_URL``, ...).
        root: the folder repository-relative paths are relative to (SARIF, GitLab); default:
            the git repository enclosing ``cwd``, else ``cwd``.
        interrupted: the run was stopped (SIGINT/SIGTERM) before every file was checked:
            summaries never say "All checks passed!".
        incomplete: files not fully checked because of an internal error (a rule or a
            worker crashed; reported on stderr): summaries never say "All checks passed!".
    """

    cwd: Path = field(default_factory=Path.cwd)
    unsafe_fixes: bool = False
    fix_applied: bool = False
    fixed: int = 0
    show_fixes: bool = False
    statistics: bool = False
    quiet: bool = False
    sources: dict[str, str] = field(default_factory=dict)
    fixed_by_file: dict[str, dict[str, int]] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    root: Path | None = None
    interrupted: bool = False
    incomplete: int = 0
    _read: dict[str, SourceFile | None] = field(default_factory=dict, repr=False)

    def is_fixable(self, diagnostic: Diagnostic) -> bool:
        return diagnostic.fix is not None and diagnostic.fix.chosen(self.unsafe_fixes) is not None

    def source(self, path: str, cell: int | None = None) -> SourceFile | None:
        """The text of ``path`` as linted (from :attr:`sources`, else read from disk), or
        ``None`` when it cannot be read or decoded. For a notebook: its code cells joined,
        or with ``cell`` that cell's text (the rows of a localized diagnostic)."""
        if path not in self._read:
            if path in self.sources:
                if path.lower().endswith(".ipynb"):
                    from ckptlint.text.notebook import NotebookSource, source_from_text

                    notebook = source_from_text(path, self.sources[path])
                    try:  # the notebook on disk holds the IPython lines the text masks
                        on_disk = load_source(_read(path), path)
                    except (OSError, SourceDecodeError):
                        on_disk = None
                    if (
                        isinstance(on_disk, NotebookSource)
                        and on_disk.notebook is not None
                        and on_disk.text == notebook.text  # the same version (stdin may differ)
                    ):
                        notebook = NotebookSource(path=path, text=notebook.text, notebook=on_disk.notebook)
                    self._read[path] = notebook
                else:
                    self._read[path] = SourceFile(path, self.sources[path])
            else:
                try:
                    self._read[path] = load_source(_read(path), path)
                except (OSError, SourceDecodeError):
                    self._read[path] = None
        source = self._read[path]
        if cell is not None and source is not None and hasattr(source, "cell_source"):
            return source.cell_source(cell)
        return source

    def localize(self, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
        """``diagnostics`` with those in notebooks made relative to their cell
        (:func:`ckptlint.text.notebook.localize`); other diagnostics unchanged."""
        out = []
        for d in diagnostics:
            if d.cell is None and d.path.lower().endswith(".ipynb"):
                from ckptlint.text.notebook import NotebookSource, localize

                source = self.source(d.path)
                if isinstance(source, NotebookSource):
                    d = localize(d, source)
            out.append(d)
        return out

    @property
    def repository_root(self) -> Path:
        if self.root is None:
            self.root = find_repository_root(self.cwd)
        return self.root


Renderer = Callable[[Sequence[Diagnostic], OutputContext], str]


def display_path(path: str, cwd: Path) -> str:
    """``path`` relative to ``cwd`` with ``/`` separators when below it, else as given; a byte
    of the name that is not UTF-8 is shown escaped (:func:`printable`)."""
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        return printable(Path(path).as_posix())
    if relative.startswith(".."):
        return printable(Path(path).as_posix())
    return printable(Path(relative).as_posix())


def raw_bytes(text: str) -> bytes:
    """The bytes ``text`` stands for: a file name read from the system holds each byte that
    is not UTF-8 as a lone surrogate (PEP 383, ``surrogateescape``); other lone surrogates
    (never in a file name) become ``\\uXXXX`` text."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def printable(text: str) -> str:
    """``text`` with every lone surrogate written as an escape, so that it can be written as
    UTF-8 and stays valid in every format: a file name's byte that is not UTF-8 (``bad\\xffname.py``
    holds ``\\udcff``) becomes the four characters ``\\xff``, as Python's ``backslashreplace``
    writes it. Text without surrogates is returned unchanged."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return raw_bytes(text).decode("utf-8", "backslashreplace")
    return text


def encodable(text: str, encoding: str, style: str = "text") -> str:
    """``text`` with each character that ``encoding`` cannot hold escaped, so that a report
    is written whole to a stream of any encoding (``PYTHONIOENCODING=ascii``, a cp1252
    console) and stays valid in its format. ``style``: ``"json"`` writes JSON's own
    ``\\uXXXX`` escapes (a surrogate pair above U+FFFF; the value read back is the same
    text), ``"xml"`` character references (``&#8594;``), ``"text"`` Python's
    ``backslashreplace`` (``\\u2192``). Text the encoding holds, or an encoding Python does
    not know, is returned unchanged."""
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        pass
    except LookupError:
        return text
    else:
        return text
    errors = {"json": _JSON_ESCAPE, "xml": "xmlcharrefreplace"}.get(style, "backslashreplace")
    return text.encode(encoding, errors).decode(encoding)


def _json_escape(exc: UnicodeError) -> tuple[str, int]:
    """A codec error handler (:func:`codecs.register_error`): JSON's ``\\uXXXX`` escapes of
    the characters an encoding cannot hold (UTF-16 surrogate pairs above U+FFFF, RFC 8259 §7)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    escaped = []
    for char in exc.object[exc.start : exc.end]:
        for unit in char.encode("utf-16-be", "surrogatepass").hex(" ", 2).split():
            escaped.append(f"\\u{unit}")
    return "".join(escaped), exc.end


_JSON_ESCAPE = "ckptlint.json-escape"
codecs.register_error(_JSON_ESCAPE, _json_escape)


def find_repository_root(start: Path) -> Path:
    """The closest folder at or above ``start`` holding ``.git`` (a repository or worktree),
    else ``start`` itself."""
    start = Path(os.path.abspath(start))
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def relative_uri(path: str, root: Path) -> tuple[str, bool]:
    """``(uri, relative)``: ``path`` as a percent-encoded URI reference relative to ``root``
    (``sub dir/b c.py`` -> ``sub%20dir/b%20c.py``), or an absolute ``file://`` URI (and
    ``False``) when it lies outside ``root``."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path(os.path.abspath(root)))
    except ValueError:
        return "file://" + quote(raw_bytes(absolute.as_posix()), safe="/"), False
    return quote(raw_bytes(relative.as_posix()), safe="/"), True


#: The most bytes of a file read to show its text in a report (the largest file linted is a
#: 64 MiB notebook: ckptlint.lint.limits.MAX_NOTEBOOK_BYTES).
_MAX_SHOWN_BYTES = 64 * 2**20


def _read(path: str) -> bytes:
    """The bytes of the regular file ``path`` to show in a report. Raises ``OSError`` for a
    FIFO or device (never read) and a file over :data:`_MAX_SHOWN_BYTES`."""
    from ckptlint.text.reading import read_regular

    raw = read_regular(path, _MAX_SHOWN_BYTES)
    if len(raw) > _MAX_SHOWN_BYTES:
        raise OSError(f"{path}: too large to show")
    return raw
