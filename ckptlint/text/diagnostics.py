"""The records every rule produces: diagnostics, fixes and text edits.

All positions are 1-based ``(row, column)`` pairs with character columns, in every output.
The records are frozen dataclasses that convert to and from JSON-compatible dicts, so they
cross process boundaries and live in the cache. A rule's :class:`Fix` builds its edits when
they are first read (libcst parses only then); stored or sent, it carries them built when the
run wants them (:func:`want_edits`), else none (:attr:`Fix.built` false).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ckptlint.text.source import Position

__all__ = ["Applicability", "Diagnostic", "Edit", "EditBuilder", "EditsNotBuilt", "Fix", "edits_wanted", "want_edits"]


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


#: What builds a fix's edits when they are first read: the edits, or ``None`` where they
#: cannot be built (libcst refuses the code around an edited node).
EditBuilder = Callable[[], "tuple[Edit, ...] | None"]

#: Whether this process's run shows or applies edits (set by the command line from its
#: options, :func:`want_edits`): a fix whose edits are still to be built builds them when it
#: is stored (the result cache) or sent to another process; otherwise it is stored and sent
#: without them (:attr:`Fix.built` false), and nothing reads them.
_EDITS_WANTED = [False]


def want_edits(wanted: bool) -> None:
    """Say whether this run shows or applies the fixes' edits (``--fix``, ``--diff``, the
    formats that print them); read by :meth:`Fix.to_dict`, pickling and the result cache."""
    _EDITS_WANTED[0] = wanted


def edits_wanted() -> bool:
    """Whether this run shows or applies edits (:func:`want_edits`; ``False`` until told)."""
    return _EDITS_WANTED[0]


def _refused() -> None:
    """The builder of a fix whose edits could not be built (kept by copies of the fix)."""
    return None


class EditsNotBuilt(RuntimeError):
    """The edits of a fix stored or sent without them were read (a run that said it shows no
    edits, :func:`want_edits`, read them)."""


@dataclass(frozen=True, eq=False)
class Fix:
    """A set of edits that together repair one diagnostic.

    ``fallback``: another fix of the same finding, applied instead of this one when this one
    may not be (an unsafe fix without ``--unsafe-fixes``): CKP001's safe
    ``use_reentrant=True``, which keeps the variant PyTorch runs, beside the recommended but
    unsafe ``use_reentrant=False``. ``None`` for most fixes.

    The edits (third argument) are a tuple, or an :data:`EditBuilder` that builds them when
    :attr:`edits` is first read (a rule's fix: libcst parses only then), or ``None`` for a fix
    stored or sent before they were built (reading them raises :class:`EditsNotBuilt`).
    Applicability and message are known either way. Equal fixes have equal applicability,
    message, edits and fallback.
    """

    applicability: Applicability
    message: str
    _edits: tuple[Edit, ...] | EditBuilder | None
    fallback: Fix | None = None

    @property
    def edits(self) -> tuple[Edit, ...]:
        """The edits, built on first read; ``()`` where the builder could not build them
        (:attr:`refused`). Raises :class:`EditsNotBuilt` for a fix stored without them."""
        held = self._edits
        if isinstance(held, tuple):
            return held
        if held is None:
            raise EditsNotBuilt(f"the edits of the fix {self.message!r} were not built in this run")
        if held is _refused:
            return ()
        built = held()
        object.__setattr__(self, "_edits", _refused if built is None else built)
        return () if built is None else built

    @property
    def built(self) -> bool:
        """Whether the edits of this fix and of its fallback can be read (built, or buildable
        in this process)."""
        return self._edits is not None and (self.fallback is None or self.fallback.built)

    @property
    def refused(self) -> bool:
        """Whether the builder could not build the edits (builds them first)."""
        self.edits  # noqa: B018 - built on read
        return self._edits is _refused

    def resolved(self) -> Fix | None:
        """This fix with its edits and its fallback's built: ``None`` where its own could not
        be built, no fallback where the fallback's could not (a finding whose code libcst
        refuses offers no fix, as when every fix was built at once)."""
        if self.refused:
            return None
        fallback = self.fallback.resolved() if self.fallback is not None else None
        return self if fallback is self.fallback else replace(self, fallback=fallback)

    def moved(self, move: Callable[[Edit], Edit]) -> Fix:
        """This fix with each edit (and each of its fallback's) replaced by ``move(edit)``,
        built when the edits are read (a fix not built yet stays so)."""
        held = self._edits
        fallback = self.fallback.moved(move) if self.fallback is not None else None
        if held is None:
            return replace(self, fallback=fallback)
        return replace(self, _edits=lambda: None if self.refused else tuple(move(e) for e in self.edits), fallback=fallback)

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

    def _stored_edits(self) -> tuple[Edit, ...] | None:
        """The edits as stored or sent: built when this run wants them (:func:`edits_wanted`)
        or already built, else ``None``."""
        if isinstance(self._edits, tuple) or (self._edits is not None and edits_wanted()):
            return self.edits
        return None

    def __getstate__(self) -> dict[str, Any]:
        """What pickling sends (to a worker's parent): the edits as :meth:`_stored_edits`."""
        return {**self.__dict__, "_edits": self._stored_edits()}

    def __copy__(self) -> Fix:
        return self  # immutable; a copy keeps the builder (pickling's state would not)

    def __deepcopy__(self, memo: dict[int, Any]) -> Fix:
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fix):
            return NotImplemented
        mine, theirs = self._comparable(), other._comparable()
        return (self.applicability, self.message, mine, self.fallback) == (other.applicability, other.message, theirs, other.fallback)

    def __hash__(self) -> int:
        return hash((self.applicability, self.message))

    def _comparable(self) -> tuple[Edit, ...] | None:
        return None if self._edits is None else self.edits

    def to_dict(self) -> dict[str, Any]:
        """Ruff's fix record; a ``fallback`` key only when there is one. ``edits`` is ``None``
        for a fix whose edits this run does not build (:meth:`_stored_edits`)."""
        stored = self._stored_edits()
        data: dict[str, Any] = {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": None if stored is None else [edit.to_dict() for edit in sorted(stored, key=lambda e: (e.start, e.end))],
        }
        if self.fallback is not None:
            data["fallback"] = self.fallback.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        fallback = data.get("fallback")
        edits = data["edits"]
        return cls(
            Applicability(data["applicability"]),
            data["message"],
            None if edits is None else tuple(Edit.from_dict(e) for e in edits),
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
