"""The records every rule produces: diagnostics, fixes and text edits.

All positions are 1-based ``(row, column)`` pairs with character columns, in every output.
The records are plain frozen dataclasses that convert to and from JSON-compatible dicts, so
they cross process boundaries and live in the cache unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ckptlint.text.source import Position

__all__ = ["Applicability", "Diagnostic", "Edit", "Fix"]


class Applicability(str, Enum):
    """How a fix may be applied (ruff's terms).

    ``SAFE`` fixes keep the program's meaning and run under ``--fix``; ``UNSAFE`` fixes may
    change behaviour and need ``--unsafe-fixes``; ``DISPLAY_ONLY`` fixes are shown, never
    applied.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the text between ``start`` (inclusive) and ``end`` (exclusive) by ``content``.

    An insertion has ``start == end``; a deletion has empty ``content``.
    """

    start: Position
    end: Position
    content: str

    def to_dict(self) -> dict[str, Any]:
        """Ruff's edit record: ``content``, ``location`` and ``end_location``."""
        return {
            "content": self.content,
            "location": {"row": self.start[0], "column": self.start[1]},
            "end_location": {"row": self.end[0], "column": self.end[1]},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edit:
        loc, end = data["location"], data["end_location"]
        return cls((loc["row"], loc["column"]), (end["row"], end["column"]), data["content"])


@dataclass(frozen=True)
class Fix:
    """A set of edits that together repair one diagnostic.

    ``fallback``: another fix of the same finding, applied instead of this one when this one
    may not be (an unsafe fix without ``--unsafe-fixes``): CKP001's safe
    ``use_reentrant=True``, which keeps the variant PyTorch runs, beside the recommended but
    unsafe ``use_reentrant=False``. ``None`` for most fixes.
    """

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]
    fallback: Fix | None = None

    def applies(self, unsafe: bool) -> bool:
        """Whether this fix itself runs under ``--fix`` (and ``--unsafe-fixes`` when
        ``unsafe``); see :meth:`chosen` for the fix that runs."""
        if self.applicability is Applicability.SAFE:
            return True
        return unsafe and self.applicability is Applicability.UNSAFE

    def chosen(self, unsafe: bool) -> Fix | None:
        """The fix ``--fix`` applies (with ``--unsafe-fixes`` when ``unsafe``): this one, else
        its :attr:`fallback` when that applies, else ``None``."""
        if self.applies(unsafe):
            return self
        if self.fallback is not None and self.fallback.applies(unsafe):
            return self.fallback
        return None

    def alternatives(self) -> tuple[Fix, ...]:
        """This fix and its fallback (without their fallbacks), in that order."""
        first = replace(self, fallback=None)
        return (first,) if self.fallback is None else (first, replace(self.fallback, fallback=None))

    def to_dict(self) -> dict[str, Any]:
        """Ruff's fix record; a ``fallback`` key only when there is one."""
        data: dict[str, Any] = {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [edit.to_dict() for edit in sorted(self.edits, key=lambda e: (e.start, e.end))],
        }
        if self.fallback is not None:
            data["fallback"] = self.fallback.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        fallback = data.get("fallback")
        return cls(
            Applicability(data["applicability"]),
            data["message"],
            tuple(Edit.from_dict(e) for e in data["edits"]),
            cls.from_dict(fallback) if fallback else None,
        )


@dataclass(frozen=True)
class Diagnostic:
    """One finding of one rule.

    Attributes:
        code: the rule code, e.g. ``"CKP001"``.
        message: one sentence (or two) saying what is wrong and what to do.
        path: the file the finding is in, as the user named it (or as discovered).
        start, end: the reported range, 1-based, ``end`` exclusive in the column.
        fix: the fix, if the rule has one for this case.
        noqa_row: the line whose ``# noqa`` suppresses this finding (defaults to the start).
        cell: for a Jupyter notebook, the 1-based cell the finding is in, with ``start``,
            ``end``, ``noqa_row`` and the fix's edits relative to that cell; set only for
            output (:func:`ckptlint.text.notebook.localize`). Linting, noqa, fixes and the cache
            use rows of the notebook's code cells joined, with ``cell`` left ``None``.
    """

    code: str
    message: str
    path: str
    start: Position
    end: Position
    fix: Fix | None = None
    noqa_row: int | None = field(default=None, compare=False)
    cell: int | None = field(default=None, compare=False)

    @property
    def sort_key(self) -> tuple[str, int, Position, str, str]:
        return (self.path, self.cell or 0, self.start, self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "start": list(self.start),
            "end": list(self.end),
            "fix": self.fix.to_dict() if self.fix else None,
            "noqa_row": self.noqa_row,
            **({"cell": self.cell} if self.cell is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(
            code=data["code"],
            message=data["message"],
            path=data["path"],
            start=tuple(data["start"]),
            end=tuple(data["end"]),
            fix=Fix.from_dict(data["fix"]) if data["fix"] else None,
            noqa_row=data.get("noqa_row"),
            cell=data.get("cell"),
        )
