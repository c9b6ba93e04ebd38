"""Fingerprints of findings that survive unrelated edits (SARIF ``partialFingerprints``,
GitLab ``fingerprint``).

A fingerprint hashes the rule code, the repository-relative path and the reported code
without whitespace and without trailing commas before a closing bracket, plus an occurrence
index among findings that share all three. It holds no line or column number, so inserting
lines above a finding, re-indenting it or reflowing a call over several lines (as a formatter
does, magic trailing comma included) keeps its fingerprint; editing the reported code itself
(or moving the file) makes it a new finding. This follows the idea of GitHub's
``primaryLocationLineHash`` (a hash of the line's text plus an occurrence index).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from ckptlint.output.base import OutputContext, relative_uri
from ckptlint.text.diagnostics import Diagnostic

__all__ = ["fingerprints", "reported_text"]

_SPACE = re.compile(r"\s+")
_TRAILING_COMMA = re.compile(r",(?=[)\]}])")


def reported_text(diagnostic: Diagnostic, ctx: OutputContext) -> str:
    """The reported range's source (the whole reported line for an empty range) without
    whitespace and trailing commas; ``""`` when the file cannot be read."""
    source = ctx.source(diagnostic.path, diagnostic.cell)
    if source is None:
        return ""
    try:
        start, end = source.offset(diagnostic.start), source.offset(diagnostic.end)
    except ValueError:
        return ""
    text = source.text[start:end] if end > start else source.line(diagnostic.start[0])
    return _TRAILING_COMMA.sub("", _SPACE.sub("", text))


def fingerprints(diagnostics: Sequence[Diagnostic], ctx: OutputContext) -> list[str]:
    """``"<32 hex digits>:<occurrence>"`` for each diagnostic, in the given order.

    The occurrence counts earlier diagnostics (by position) with the same code, path and
    reported text, starting at 1.
    """
    keyed = []
    for d in diagnostics:
        path, _ = relative_uri(d.path, ctx.repository_root)
        digest = hashlib.sha256("\0".join((d.code, path, reported_text(d, ctx))).encode("utf-8")).hexdigest()[:32]
        keyed.append(digest)
    order = sorted(range(len(diagnostics)), key=lambda i: diagnostics[i].sort_key)
    seen: dict[str, int] = {}
    occurrence = [0] * len(diagnostics)
    for i in order:
        seen[keyed[i]] = seen.get(keyed[i], 0) + 1
        occurrence[i] = seen[keyed[i]]
    return [f"{digest}:{n}" for digest, n in zip(keyed, occurrence, strict=True)]
