"""Jupyter notebooks (``.ipynb``): the code cells as one Python module, and back.

A notebook (nbformat 4, the JSON layout Jupyter writes) is linted as one module made of its
code cells in order, so that a region in cell 5 sees the class cell 2 defines (ruff does the
same). Each code cell is preceded by a marker comment line, ``# ckptlint-cell: N`` (``N``:
the cell's 1-based index among *all* cells of the notebook, markdown included, as ruff
counts), so that the cell of any row, and the cells' text after fixes, follow from the
concatenated text alone. IPython syntax that is not Python is masked line by line with a
``pass`` placeholder of the same indentation (``%time f()``, ``!pip install x``,
``files = !ls``, ``obj?``), as are whole cells under a cell magic whose body is not Python
(``%%bash``); the bodies of ``%%time``, ``%%timeit``, ``%%capture``... are linted. Masked
lines are restored when the notebook is written back.

Writing back (:meth:`Notebook.dumps`) changes only the ``source`` of code cells whose text
changed; outputs, metadata, cell ids and key order are kept, and the JSON is written with the
indentation, ``ensure_ascii`` choice and final newline found in the file, so an unchanged
notebook serialises to the same bytes (Jupyter writes ``json.dumps(nb, sort_keys=True,
indent=1, ensure_ascii=False)`` plus ``"\\n"``: nbformat 5.x, ``nbformat/v4/nbjson.py``).
Reading uses :mod:`json` directly (nbformat's reader converts and validates, ~0.3 s of
imports); :func:`validate` runs nbformat's schema validation on a written notebook.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ckptlint.text.source import SourceDecodeError, SourceFile, location_label, split_lines

if TYPE_CHECKING:
    from ckptlint.text.diagnostics import Diagnostic

__all__ = [
    "CELL_MARKER",
    "Notebook",
    "NotebookError",
    "NotebookSource",
    "cell_label",
    "code_bytes",
    "is_notebook",
    "localize",
    "notebook_source",
    "source_from_text",
    "validate",
]

NOTEBOOK_SUFFIX = ".ipynb"
CELL_MARKER = "# ckptlint-cell: "
_MARKER_LINE = re.compile(r"^# ckptlint-cell: (\d+)$", re.MULTILINE)
_MASK = "pass  # ckptlint-ipython: "
_MASK_LINE = re.compile(r"^([ \t]*)pass  # ckptlint-ipython: (\d+)$")

#: Cell magics whose body is Python (IPython's ``%%time`` family); other cell magics
#: (``%%bash``, ``%%html``, ``%%writefile``...) make the whole cell non-Python.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3", "tensorboard"})

# A line IPython rewrites: a line or shell escape, a help request, or an assignment from one.
_ESCAPE = re.compile(r"^[ \t]*(?:[%!]|\?\??\w)")
_HELP_SUFFIX = re.compile(r"^[ \t]*[\w.\[\]()]+\?\??[ \t]*$")
_ASSIGN_ESCAPE = re.compile(r"^[ \t]*[\w.,\[\] ()]+=[ \t]*[%!]")


class NotebookError(SourceDecodeError):
    """The bytes are not a notebook ckptlint can read (not JSON, not nbformat 4, cells of
    the wrong shape); the message is one line."""


def is_notebook(path: str) -> bool:
    """Whether ``path`` names a Jupyter notebook (by its suffix, as ruff decides)."""
    return path.lower().endswith(NOTEBOOK_SUFFIX)


def _cell_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        if not all(isinstance(part, str) for part in source):
            raise NotebookError("a cell's source is not text")
        return "".join(source)
    if not isinstance(source, str):
        raise NotebookError("a cell's source is not text")
    return source


def _mask_cell(text: str, masked: list[str]) -> str:
    """``text`` with its IPython-only lines replaced by placeholders; the originals are
    appended to ``masked`` (the placeholder holds the index)."""
    lines = text.split("\n")
    first = lines[0].lstrip() if lines else ""
    whole = False
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        whole = name not in PYTHON_CELL_MAGICS
    out = []
    continued: str | None = None  # the indentation of a masked line ending in a backslash
    for i, line in enumerate(lines):
        if i == len(lines) - 1 and i > 0 and line == "":
            out.append(line)  # the empty tail after the cell's final newline: nothing to mask
            break
        body = line.rstrip("\r")
        ipython = _is_ipython(body) and not _continues_statement(out)
        if whole or continued is not None or (i == 0 and first.startswith("%%")) or ipython:
            if whole:
                indent = ""
            elif continued is not None:
                indent = continued  # a continuation line of `!pip install a \`
            else:
                indent = body[: len(body) - len(body.lstrip(" \t"))]
            out.append(f"{indent}{_MASK}{len(masked)}" + line[len(body) :])
            masked.append(body)
            continued = indent if body.endswith("\\") and not whole else None
        else:
            out.append(line)
    return "\n".join(out)


def _continues_statement(lines: list[str]) -> bool:
    """Whether the text of ``lines`` ends inside a statement (open brackets, a multi-line
    string): a next line starting with ``%`` or ``!`` is then Python (``% b)``), not IPython."""
    import io
    import tokenize

    if not lines:
        return False
    text = "\n".join(lines) + "\n"
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text).readline):
            pass
    except tokenize.TokenError:
        return True  # EOF in a multi-line statement or string
    except (SyntaxError, ValueError):
        return False
    return text.rstrip("\r\n").endswith("\\")


def _is_ipython(line: str) -> bool:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return False
    return bool(_ESCAPE.match(line) or _HELP_SUFFIX.match(line) or _ASSIGN_ESCAPE.match(line))


@dataclass
class Notebook:
    """A parsed notebook and how its file was written.

    Attributes:
        data: the JSON object (key order as read).
        indent: the JSON indentation (``None``: one line); ensure_ascii: whether non-ASCII
            characters were escaped; final_newline: whether the file ended with ``"\\n"``.
        python: whether the notebook's language is Python (else nothing is linted).
        masked: the original text of each masked IPython line, by placeholder index.
        upper_escapes: whether the file writes ``\\uXXXX`` escapes with upper-case hex digits
            (``\\u001B`` in outputs, as Colab and older Jupyter versions do; Python's
            ``json`` writes ``\\u001b``); ``None``: read from ``original`` when the notebook
            is written (only a fix needs it: scanning every escape of a notebook whose outputs
            hold megabytes of images took most of the time of a run that only read it).
    """

    data: dict[str, Any]
    indent: int | str | None = 1
    ensure_ascii: bool = False
    final_newline: bool = True
    python: bool = True
    masked: list[str] = field(default_factory=list)
    original: str | None = field(default=None, repr=False)
    upper_escapes: bool | None = None

    @classmethod
    def loads(cls, text: str) -> Notebook:
        """Parse a notebook's text. Raises :class:`NotebookError` (one line) for text that is
        not JSON, not nbformat 4, or holds cells of the wrong shape."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = f"{exc.msg} at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "too deeply nested"
            raise NotebookError(f"is not a valid notebook (invalid JSON: {reason})") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise NotebookError("is not a valid notebook (no list of cells)")
        major = data.get("nbformat")
        if major != 4:
            raise NotebookError(f"is not a valid notebook (nbformat {major!r}; only nbformat 4 is read)")
        for cell in data["cells"]:
            if not isinstance(cell, dict):
                raise NotebookError("is not a valid notebook (a cell is not an object)")
            if not isinstance(cell.get("cell_type"), str):  # nbformat 4 requires it of every cell
                raise NotebookError("is not a valid notebook (a cell has no `cell_type`)")
        metadata = data.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
        language = (metadata.get("language_info") or {}).get("name") or (metadata.get("kernelspec") or {}).get("language")
        lines = text.split("\n", 2)
        indent: int | str | None = None
        if len(lines) > 1:
            second = lines[1]
            leading = second[: len(second) - len(second.lstrip(" \t"))]
            indent = len(leading) if leading and set(leading) == {" "} else (leading or None)
        return cls(
            data=data,
            indent=indent,
            ensure_ascii=text.isascii(),
            final_newline=text.endswith("\n"),
            python=language is None or str(language).lower() in ("python", "python3", "ipython", "ipython3"),
            original=text,
        )

    @cached_property
    def code_text(self) -> str:
        """The code cells as one module: a marker line, then the masked cell text ending in
        a newline, for each code cell in order."""
        parts: list[str] = []
        if not self.python:
            return ""
        for number, cell in enumerate(self.data["cells"], start=1):
            if cell.get("cell_type") != "code":
                continue
            text = _mask_cell(_cell_text(cell), self.masked)
            if text and not text.endswith("\n"):
                text += "\n"
            parts.append(f"{CELL_MARKER}{number}\n{text}")
        return "".join(parts)

    def dumps(self, code_text: str) -> str:
        """The notebook's JSON text with the code cells taken from ``code_text`` (text made
        by :attr:`code_text`, possibly fixed). Raises :class:`ValueError` when ``code_text``
        lost a cell marker or a masked line (nothing is written then)."""
        cells = split_cells(code_text)
        data = self.data
        replaced: dict[int, str] = {}
        for number, text in cells.items():
            cell = data["cells"][number - 1] if 0 < number <= len(data["cells"]) else None
            if cell is None or cell.get("cell_type") != "code":
                raise ValueError(f"cell {number} is not a code cell of this notebook")
            restored = self._unmask(text)
            original = _cell_text(cell)
            if not original.endswith("\n") and restored.endswith("\n"):
                restored = restored[:-1]
            if restored != original:
                replaced[number - 1] = restored
        expected = sum(1 for c in data["cells"] if c.get("cell_type") == "code") if self.python else 0
        if len(cells) != expected:
            raise ValueError(f"{expected - len(cells)} code cell(s) lost their marker line")
        if not replaced and self.original is not None:
            return self.original
        if replaced:
            data = dict(data)
            data["cells"] = [
                _with_source(cell, replaced[i]) if i in replaced else cell for i, cell in enumerate(self.data["cells"])
            ]
        return self._serialise(data)

    def _serialise(self, data: dict[str, Any]) -> str:
        """``data`` as JSON in this file's style (indentation, separators of a one-line
        file, ASCII escapes, final newline)."""
        separators = None
        if self.indent is None and self.original is not None and '": ' not in self.original:
            separators = (",", ":")
        text = json.dumps(data, indent=self.indent, ensure_ascii=self.ensure_ascii, separators=separators)
        if self.upper_escapes is None:
            self.upper_escapes = _upper_escapes(self.original or "")
        if self.upper_escapes:
            text = _ESCAPE_HEX.sub(lambda m: m.group(1) + "\\u" + m.group(2).upper(), text)
        return text + "\n" if self.final_newline else text

    def round_trips(self) -> bool:
        """Whether serialising the unchanged data gives back the file's text exactly (the
        style was recognised; a changed notebook is then written in the same style)."""
        return self._serialise(self.data) == self.original

    def _unmask(self, text: str) -> str:
        lines = text.split("\n")
        for i, line in enumerate(lines):
            match = _MASK_LINE.match(line.rstrip("\r"))
            if match is not None:
                index = int(match.group(2))
                if index >= len(self.masked):
                    raise ValueError(f"unknown masked IPython line {index}")
                lines[i] = self.masked[index] + line[len(line.rstrip("\r")) :]
        return "\n".join(lines)


#: A ``\\uXXXX`` escape in JSON text (not an escaped backslash followed by ``u``): the
#: backslashes before it, the four hex digits.
_ESCAPE_HEX = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")


def _upper_escapes(text: str) -> bool:
    """Whether every ``\\uXXXX`` escape of ``text`` that has a hex letter writes it upper-case
    (and there is at least one)."""
    if "\\u" not in text:
        return False
    lettered = [m.group(2) for m in _ESCAPE_HEX.finditer(text) if not m.group(2).isdigit()]
    return bool(lettered) and all(h == h.upper() for h in lettered)


def _with_source(cell: dict[str, Any], text: str) -> dict[str, Any]:
    """A copy of ``cell`` with ``text`` as its source, in the form the cell had (a list of
    lines each keeping its ``"\\n"``, or one string)."""
    new = dict(cell)
    if isinstance(cell.get("source"), list):
        new["source"] = re.findall(r"[^\n]*\n|[^\n]+$", text)
    else:
        new["source"] = text
    return new


def split_cells(code_text: str) -> dict[int, str]:
    """Cell number -> that cell's (masked) text, cut from a text made by
    :attr:`Notebook.code_text`."""
    markers = list(_MARKER_LINE.finditer(code_text))
    cells: dict[int, str] = {}
    for k, match in enumerate(markers):
        start = match.end() + 1
        end = markers[k + 1].start() if k + 1 < len(markers) else len(code_text)
        cells[int(match.group(1))] = code_text[start:end]
    return cells


@dataclass(frozen=True)
class NotebookSource(SourceFile):
    """A notebook as a :class:`~ckptlint.text.source.SourceFile`: ``text`` is the code cells
    joined (see the module docs); :meth:`encode` gives the notebook file's bytes for a
    (fixed) text, so every writer of fixed files writes notebooks unchanged.

    ``notebook`` is ``None`` for a source rebuilt from text alone (the output formats'
    positions need only the markers)."""

    notebook: Notebook | None = None

    @cached_property
    def cell_rows(self) -> list[tuple[int, int]]:
        """``(row of the marker line, cell number)`` for each code cell, in order."""
        return [(self.position(m.start())[0], int(m.group(1))) for m in _MARKER_LINE.finditer(self.text)]

    def cell_of(self, row: int) -> tuple[int, int] | None:
        """``(cell number, row in the cell)`` of 1-based ``row`` of :attr:`text`, both
        1-based, or ``None`` on a marker line or before the first cell."""
        found = None
        for marker_row, number in self.cell_rows:
            if marker_row < row:
                found = (number, row - marker_row)
            elif marker_row == row:
                return None
            else:
                break
        return found

    def cell_source(self, number: int) -> SourceFile | None:
        """The text of code cell ``number`` as written (IPython lines shown as they are in
        the cell when the notebook is known, else as linted: masked)."""
        text = split_cells(self.text).get(number)
        if text is None:
            return None
        if self.notebook is not None:
            try:
                text = self.notebook._unmask(text)
            except ValueError:
                pass  # a text from another version of the notebook: keep the masked lines
        return SourceFile(self.path, text)

    def cell_diff(self, fixed_text: str, shown: str) -> str:
        """``--diff`` for a notebook: a unified diff of each code cell that ``fixed_text``
        changes, headed ``a/NAME:cell N`` / ``b/NAME:cell N`` (ruff's layout), IPython lines
        shown as written."""
        import difflib

        unmask = self.notebook._unmask if self.notebook is not None else (lambda text: text)
        before, after = split_cells(self.text), split_cells(fixed_text)
        out = []
        for number in sorted(set(before) | set(after)):
            old, new = unmask(before.get(number, "")), unmask(after.get(number, ""))
            if old == new:
                continue
            diff = difflib.unified_diff(
                split_lines(old, keepends=True),
                split_lines(new, keepends=True),
                fromfile=f"a/{shown}:cell {number}",
                tofile=f"b/{shown}:cell {number}",
            )
            out.append("".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in diff))
        return "".join(out)

    def encode(self, text: str) -> bytes:
        """The notebook's bytes with its code cells replaced by those of ``text``. Raises
        :class:`NotebookWriteError` (an ``OSError``) when the cells cannot be put back."""
        if self.notebook is None:
            raise NotebookWriteError(f"{self.path}: cannot write a notebook rebuilt from text")
        try:
            return self.notebook.dumps(text).encode("utf-8")
        except ValueError as exc:
            raise NotebookWriteError(f"the fixed cells cannot be put back ({exc})") from None


class NotebookWriteError(OSError):
    """A fixed text whose cells cannot be put back into the notebook (a marker or masked
    line was lost); writers report it like a failed write."""


def notebook_source(raw: bytes, path: str) -> NotebookSource:
    """Read the bytes of a notebook. Raises :class:`NotebookError` (a
    :class:`~ckptlint.text.source.SourceDecodeError`) with a one-line reason."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    notebook = Notebook.loads(text)
    return NotebookSource(path=path, text=notebook.code_text, notebook=notebook)


def source_from_text(path: str, text: str) -> NotebookSource:
    """A :class:`NotebookSource` for positions only, from a code text (e.g. after fixes)."""
    return NotebookSource(path=path, text=text)


def localize(diagnostic: Diagnostic, source: NotebookSource) -> Diagnostic:
    """``diagnostic`` (rows of ``source``'s joined cells) with ``cell`` set and its rows,
    ``noqa_row`` and fix edits made relative to that cell (1-based); unchanged when its
    start is not in a cell."""
    from dataclasses import replace

    from ckptlint.text.diagnostics import Edit

    where = source.cell_of(diagnostic.start[0])
    if where is None:
        return diagnostic
    cell, row = where
    shift = diagnostic.start[0] - row

    def moved(position: tuple[int, int]) -> tuple[int, int]:
        return (max(1, position[0] - shift), position[1])

    def moved_edit(e: Edit) -> Edit:
        return Edit(moved(e.start), moved(e.end), e.content)

    fix = diagnostic.fix.moved(moved_edit) if diagnostic.fix is not None else None  # edits built when read
    noqa_row = diagnostic.noqa_row - shift if diagnostic.noqa_row is not None else None
    return replace(
        diagnostic,
        message=_localize_message(diagnostic.message, source),
        start=moved(diagnostic.start),
        end=moved(diagnostic.end),
        fix=fix,
        noqa_row=noqa_row,
        cell=cell,
    )


def _localize_message(message: str, source: NotebookSource) -> str:
    """The rows a message names, made relative to their cell: ``nb.ipynb:81`` (a site the
    rule names, see :func:`ckptlint.checkpoint.evaluator.ast_region.site_label`) -> ``nb.ipynb:cell 6:19``,
    and ``line 81`` (CKP101, CKP002, CKP201: "reassigned at line 81") -> ``line 19 of cell 6``."""
    import os

    name = os.path.basename(source.path)

    def cell_row(match: re.Match[str]) -> str:
        where = source.cell_of(int(match.group(1)))
        return match.group(0) if where is None else location_label(name, where[1], cell=where[0])

    def cell_line(match: re.Match[str]) -> str:
        where = source.cell_of(int(match.group(1)))
        return match.group(0) if where is None else f"line {where[1]} of cell {where[0]}"

    if f"{name}:" in message:
        message = re.sub(rf"(?<![\w./-]){re.escape(name)}:(\d+)", cell_row, message)
    return _LINE_MENTION.sub(cell_line, message)


#: ``line 81`` in a message: a row of the linted file (the joined cells, for a notebook).
_LINE_MENTION = re.compile(r"(?<![\w,])line (\d+)\b")


def cell_label(diagnostic: Diagnostic) -> str:
    """``"cell 3:"`` for a finding in a notebook cell (what ``concise`` puts between the path
    and the row, as ruff does), else ``""``."""
    return f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""


def code_bytes(raw: bytes) -> bytes:
    """The code cells of a notebook's bytes (what the byte-level gate should read), or
    ``raw`` itself when they are not a readable notebook."""
    try:
        return notebook_source(raw, "").text.encode("utf-8")
    except (NotebookError, ValueError):
        return raw


def validate(text: str) -> None:
    """Validate notebook JSON ``text`` against nbformat's schema (nbformat 5.x,
    ``nbformat.validate``). Raises ``nbformat.ValidationError`` (or ``ValueError`` for
    text that is not JSON)."""
    import nbformat

    nbformat.validate(nbformat.reads(text, as_version=nbformat.NO_CONVERT))
