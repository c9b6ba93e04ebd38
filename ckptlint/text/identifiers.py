"""Whether a Python text may hold an identifier, without parsing it: a quick, exact test that
lets an analysis skip a walk of a module whose tree cannot name what it looks for."""

from __future__ import annotations

import unicodedata

__all__ = ["may_name"]


def may_name(text: str | None, names: tuple[str, ...]) -> bool:
    """Whether ``text`` may spell one of ``names`` (ASCII identifiers) as an identifier or
    part of one: ``False`` only when none of them can appear in its tree, where ``ast``
    NFKC-normalises identifiers (``ｒegister_hook`` is ``register_hook``); ``True`` for an
    unknown text (``None``)."""
    if text is None or any(name in text for name in names):
        return True
    if text.isascii():
        return False
    normal = unicodedata.normalize("NFKC", text)
    return any(name in normal for name in names)
