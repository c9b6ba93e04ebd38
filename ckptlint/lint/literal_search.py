"""Exact, fast searches of bytes for the gate's patterns (:mod:`ckptlint.lint.gate`).

Python's ``re`` (CPython 3.11) has no fast path for an expression that begins with ``\\b``,
an alternation or ``^``: it tries the expression at every position, about 20 MB/s on this
project's machine, so gating 206 MB of real code with the gate's expressions took 9 s of the
11 s that gating took at all. Each search here first finds a literal part of the pattern
with ``bytes.find`` (a memchr-based search, GB/s) and checks the rest of the pattern around
each occurrence, and answers exactly what the regular expression it names would: the gate's
tests compare both on every test program, on generated text and on a real corpus.

Character classes are those of a *bytes* pattern: ``\\w`` is ``[a-zA-Z0-9_]`` and ``\\s`` is
``[ \\t\\n\\r\\f\\v]`` (Python's ``re`` documentation, "Regular Expression Syntax": for 8-bit
patterns only ASCII characters match).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["AliasLineSearch", "KeywordSearch", "OwnerCallSearch", "WordSearch"]

#: ``\w`` of a bytes pattern, as byte values.
WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
#: ``\s`` of a bytes pattern, as byte values.
SPACE_BYTES = frozenset(b" \t\n\r\x0c\x0b")
_BLANK = frozenset(b" \t")  # [ \t]

#: Literal parts shared by many of the gate's words: one ``find`` of each serves them all.
_SHARED_ANCHORS = (b"checkpoint", b"Checkpoint", b"Config")


def _is_word(text: bytes) -> bool:
    return bool(text) and all(b in WORD_BYTES for b in text)


class WordSearch:
    """Whether one of ``words`` occurs as a whole word: ``re.search(rb"\\b(?:w1|w2|...)\\b",
    raw) is not None``. Every word must be non-empty and made of ``\\w`` characters
    (``ValueError`` otherwise), so ``\\b`` before it means "no word character before" and
    after it "no word character after"."""

    def __init__(self, words: Iterable[str]) -> None:
        groups: dict[bytes, list[tuple[bytes, int]]] = {}
        for word in sorted(set(words)):
            encoded = word.encode()
            if not _is_word(encoded):
                raise ValueError(f"not a word of \\w characters: {word!r}")
            anchor = next((a for a in _SHARED_ANCHORS if a in encoded), encoded)
            groups.setdefault(anchor, []).append((encoded, encoded.index(anchor)))
        self._groups = sorted(groups.items())

    def search(self, raw: bytes) -> bool:
        size = len(raw)
        for anchor, group in self._groups:
            at = raw.find(anchor)
            while at >= 0:
                for word, offset in group:
                    start = at - offset
                    end = start + len(word)
                    if (
                        start >= 0
                        and raw.startswith(word, start)
                        and (start == 0 or raw[start - 1] not in WORD_BYTES)
                        and (end == size or raw[end] not in WORD_BYTES)
                    ):
                        return True
                at = raw.find(anchor, at + 1)
        return False


class OwnerCallSearch:
    """Whether ``owner.checkpoint(`` or ``owner.apply(`` occurs for one of ``owners``, with any
    whitespace around the dot and before the parenthesis: ``re.search(rb"\\b(?:o1|o2|...)\\s*\\.
    \\s*(?:checkpoint|apply)\\s*\\(", raw) is not None``. Owners are words of ``\\w`` characters
    (``ValueError`` otherwise); the owner that matches is then the whole run of word characters
    that ends before the whitespace and the dot."""

    _TAILS = (b"checkpoint", b"apply")

    def __init__(self, owners: Iterable[str]) -> None:
        encoded = {o.encode() for o in owners}
        bad = [o for o in encoded if not _is_word(o)]
        if bad:
            raise ValueError(f"not words of \\w characters: {sorted(bad)!r}")
        self._owners = frozenset(encoded)

    def search(self, raw: bytes) -> bool:
        size = len(raw)
        for tail in self._TAILS:
            at = raw.find(tail)
            while at >= 0:
                after = at + len(tail)
                while after < size and raw[after] in SPACE_BYTES:
                    after += 1
                if after < size and raw[after] == 0x28 and self._owner_before(raw, at):  # "("
                    return True
                at = raw.find(tail, at + 1)
        return False

    def _owner_before(self, raw: bytes, at: int) -> bool:
        i = at - 1
        while i >= 0 and raw[i] in SPACE_BYTES:
            i -= 1
        if i < 0 or raw[i] != 0x2E:  # "."
            return False
        i -= 1
        while i >= 0 and raw[i] in SPACE_BYTES:
            i -= 1
        end = i + 1
        while i >= 0 and raw[i] in WORD_BYTES:
            i -= 1
        return raw[i + 1 : end] in self._owners


class AliasLineSearch:
    """Whether a line reads ``name = dotted.path.checkpoint`` (with an optional comment):
    ``re.search(rb"^[ \\t]*\\w+[ \\t]*=[ \\t]*[\\w.]+\\.checkpoint[ \\t]*(?:#.*)?$", raw,
    re.MULTILINE) is not None``. Only lines holding ``.checkpoint`` can match, and nothing in
    the expression matches a line break, so each such line is matched alone."""

    _ANCHOR = b".checkpoint"
    _LINE = re.compile(rb"[ \t]*\w+[ \t]*=[ \t]*[\w.]+\.checkpoint[ \t]*(?:#.*)?")

    def search(self, raw: bytes) -> bool:
        at = raw.find(self._ANCHOR)
        checked = -1
        while at >= 0:
            start = raw.rfind(b"\n", 0, at) + 1
            if start != checked:
                checked = start
                end = raw.find(b"\n", at)
                if self._LINE.fullmatch(raw, start, len(raw) if end < 0 else end) is not None:
                    return True
            at = raw.find(self._ANCHOR, at + 1)
        return False


class KeywordSearch:
    """Whether ``word`` followed by ``[ \\t]*=`` occurs with no word character before it:
    ``re.search(rb"\\bWORD[ \\t]*=", raw) is not None`` for a ``word`` of ``\\w`` characters
    (``ValueError`` otherwise)."""

    def __init__(self, word: str) -> None:
        self._word = word.encode()
        if not _is_word(self._word):
            raise ValueError(f"not a word of \\w characters: {word!r}")

    def search(self, raw: bytes) -> bool:
        word, size = self._word, len(raw)
        at = raw.find(word)
        while at >= 0:
            if at == 0 or raw[at - 1] not in WORD_BYTES:
                i = at + len(word)
                while i < size and raw[i] in _BLANK:
                    i += 1
                if i < size and raw[i] == 0x3D:  # "="
                    return True
            at = raw.find(word, at + 1)
        return False
