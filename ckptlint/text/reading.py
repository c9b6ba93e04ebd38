"""What is read from a path: a Python file's decoded text, or a Jupyter notebook's code cells.

Kept apart from :mod:`ckptlint.text.source` (which knows nothing of notebooks) so that the
notebook module, which builds on ``SourceFile``, is imported only for ``.ipynb`` paths.
"""

from __future__ import annotations

from ckptlint.text.source import SourceFile, decode_source

__all__ = ["gate_bytes", "load_source"]


def load_source(raw: bytes, path: str) -> SourceFile:
    """:func:`decode_source`, or for a Jupyter notebook (``.ipynb``) its code cells as one
    module (:func:`ckptlint.text.notebook.notebook_source`). Raises :class:`SourceDecodeError`."""
    if path.lower().endswith(".ipynb"):
        from ckptlint.text.notebook import notebook_source

        return notebook_source(raw, path)
    return decode_source(raw, path)


def gate_bytes(raw: bytes, path: str) -> bytes:
    """What the byte-level gate reads for ``path``: the bytes themselves, or a notebook's
    code cells (its JSON quotes every line, which the gate's line patterns do not see)."""
    if path.lower().endswith(".ipynb"):
        from ckptlint.text.notebook import code_bytes

        return code_bytes(raw)
    return raw
