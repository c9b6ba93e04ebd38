"""Output formats. Each lives in its own module and is loaded only when used.

A renderer takes the diagnostics and an :class:`~ckptlint.output.base.OutputContext` and
returns the text to print (or write to ``--output-file``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ckptlint.output.base import OutputContext, Renderer
    from ckptlint.text.diagnostics import Diagnostic

__all__ = ["FORMATS", "SHOWS_EDITS", "escape_style", "renderer"]

#: format name -> module of ckptlint.output that defines ``render``.
FORMATS: dict[str, str] = {
    "concise": "concise",
    "full": "full",
    "json": "json_format",
    "json-lines": "json_lines",
    "github": "github",
    "gitlab": "gitlab",
    "sarif": "sarif",
    "junit": "junit",
}

#: The formats whose text holds the fixes' edits (a diff, or the edits' records): a run in
#: one of them builds every finding's edits (:func:`ckptlint.text.diagnostics.want_edits`).
SHOWS_EDITS = frozenset({"full", "json", "json-lines", "sarif"})

#: How a format's text escapes what the output stream cannot encode
#: (:func:`ckptlint.output.base.encodable`); any other format: ``"text"``.
_ESCAPES: dict[str, str] = {"json": "json", "json-lines": "json", "gitlab": "json", "sarif": "json", "junit": "xml"}


def escape_style(name: str | None) -> str:
    """``"json"``, ``"xml"`` or ``"text"``: how the text of format ``name`` is escaped for a
    stream whose encoding cannot hold all of it."""
    return _ESCAPES.get(name or "", "text")


def renderer(name: str) -> Renderer:
    """The ``render`` function of format ``name``, given diagnostics whose positions in
    notebooks are made relative to their cell first. Raises ``KeyError`` for an unknown one."""
    module = importlib.import_module(f"ckptlint.output.{FORMATS[name]}")
    render = module.render

    def localized(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> str:
        return render(ctx.localize(diagnostics), ctx)

    return localized
