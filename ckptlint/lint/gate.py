"""The byte-level gate: decide from a file's bytes whether it can hold anything a rule
reports, before decoding or parsing it (a byte search is far cheaper than a parse and an
analysis).

The gate may say "yes" wrongly (the file is then parsed and nothing is found) but never
"no" wrongly for the APIs in :mod:`ckptlint.facts.apis`. It answers yes when the file

- has a rule code (``CKP`` and a digit: a ``# noqa: CKPxxx`` that CKP901 judges; not
  ``CHECKPOINT`` constants, which spell ``CKP`` too), or names transformers'
  switches (``gradient_checkpointing_enable``, ``TrainingArguments`` with
  ``gradient_checkpointing``), or the composable checkpoint (``_composable``);
- imports a checkpoint module or API (``torch.utils.checkpoint``,
  ``torch.distributed.checkpoint``, ``checkpoint_wrapper``) **and uses what it binds**:
  a name bound by such an import (``checkpoint``, ``cp``, ``dcp``...) appears again outside
  import statements, or an attribute path like ``utils.checkpoint.`` does. Dead imports
  (about half of the files importing ``torch.utils.checkpoint`` in diffusers) and files that
  merely say "checkpoint" (``load_checkpoint``, comments) are skipped.

A file the gate skips can still be *reached* by a region of another file; the project
loader parses it then.
"""

from __future__ import annotations

import re

from ckptlint.facts.apis import gate_names
from ckptlint.lint.literal_search import AliasLineSearch, KeywordSearch, OwnerCallSearch, WordSearch
from ckptlint.text.reading import gate_bytes

__all__ = ["file_may_have_findings", "may_have_findings"]

# Names learnt from the API table (ckptlint.facts.apis.gate_names): any of these words makes the
# file worth parsing; ``owner.checkpoint(`` for an owner module of a library's checkpoint.
_TABLE_WORDS, _TABLE_OWNERS = gate_names()
# What the searches below answer, as regular expressions (the specification; the tests compare
# them on every test program and on generated text). Python's ``re`` tries an expression that
# starts with ``\b``, an alternation or ``^`` at every position (~20 MB/s: 9 s of the 11 s
# that gating 206 MB of real code took); the searches find a literal part first with
# ``bytes.find`` (memchr-fast) and check the rest around each occurrence, with the same answer.
_WORDS = re.compile(rb"\b(?:" + b"|".join(re.escape(w.encode()) for w in sorted(_TABLE_WORDS)) + rb")\b")
_OWNER_CALL = re.compile(
    rb"\b(?:" + b"|".join(re.escape(w.encode()) for w in sorted(_TABLE_OWNERS)) + rb")\s*\.\s*(?:checkpoint|apply)\s*\("
)
_words = WordSearch(_TABLE_WORDS).search
# the words a file without "checkpoint" can hold
_other_words = WordSearch(w for w in _TABLE_WORDS if "checkpoint" not in w).search
_OTHER_WORD_BYTES = tuple(sorted(w.encode() for w in _TABLE_WORDS if "checkpoint" not in w))
_owner_call = OwnerCallSearch(_TABLE_OWNERS).search
# A name imported from any module (a re-export or a home-made helper of the linted tree)
# that reads like a checkpoint function: ``from .nn import checkpoint``,
# ``from ..core.gradient import gradient_checkpoint_forward``.
_CHECKPOINT_LIKE = re.compile(
    r"(?i)^(?:(?!(?:load|save|resume|restore|get|find|latest|last|remove|delete|download|upload|convert|export|import)_)\w*checkpoint"
    r"|ckpt\w*|\w*checkpoint_?function|\w*checkpoint_\w*(?:forward|fn|func))$"
)

_BOM = "\xef\xbb\xbf"  # the UTF-8 byte-order mark, decoded as latin-1

# Modules whose import makes a checkpoint site (or a DCP call, CKP303) possible.
_MODULE = (
    r"torch\s*\.\s*(?:utils\s*\.\s*checkpoint|distributed\s*\.\s*checkpoint(?:\s*\.\s*\w+)*"
    r"|distributed\s*\.\s*algorithms\s*\.\s*_checkpoint(?:\s*\.\s*checkpoint_wrapper)?)"
)
_IMPORT_FROM = re.compile(
    r"^[ \t]*from(?:[ \t]|\\\n)+(?P<module>[\w.]+)(?:[ \t]|\\\n)+import(?:[ \t]|\\\n)+"
    r"(?P<names>\([^)]*\)|[^\n#;]*(?:\\\n[^\n#;]*)*)",
    re.MULTILINE,
)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+(?P<names>[^\n#;]*(?:\\\n[^\n#;]*)*)", re.MULTILINE)
_CHECKPOINT_MODULE = re.compile(rf"^{_MODULE}$")
# Parent modules, with the path from each to a checkpoint module.
_PARENT_MODULES = {
    "torch.utils": ("checkpoint",),
    "torch.distributed": ("checkpoint", "algorithms._checkpoint"),
    "torch.distributed.algorithms": ("_checkpoint",),
}
_ALIAS = re.compile(r"(?P<name>[\w.]+)(?:\s+as\s+(?P<alias>\w+))?")


_CKP_CODE = re.compile(rb"CKP\d")
_ATTRIBUTE_TAIL = re.compile(r"checkpoint\w*\s*[.(]")
_ATTRIBUTE_OWNERS = ("utils", "distributed", "_checkpoint")


def _import_line_starts(text: str) -> list[int]:
    """Offsets of the lines that hold the word ``import``, or start the backslash-continued
    line that does (found with ``str.find``, far faster than a multi-line regular
    expression scanning every position)."""
    starts: list[int] = []
    find = text.find
    at = find("import")
    while at >= 0:
        line = text.rfind("\n", 0, at) + 1
        while line >= 2 and text[line - 2] == "\\":  # the previous line ends with a backslash
            line = text.rfind("\n", 0, line - 1) + 1
        if not starts or starts[-1] != line:
            starts.append(line)
        at = find("import", at + 6)
    return starts


def _bound_names(text: str) -> tuple[set[str], list[tuple[int, int]], bool]:
    """Names bound by checkpoint-related imports, the spans of all import statements, and
    whether a star import from a checkpoint module was seen."""
    names: set[str] = set()
    spans: list[tuple[int, int]] = []
    star = False
    covered = -1
    for line in _import_line_starts(text):
        if line < covered:
            continue  # inside a statement already read (a parenthesised name list)
        match = _IMPORT_FROM.match(text, line)
        if match is not None:
            spans.append(match.span())
            covered = match.end()
            module = match.group("module")
            relevant = bool(_CHECKPOINT_MODULE.match(module))
            parent = module in _PARENT_MODULES
            if not relevant and not parent:
                if match.group("names").strip("()\\ \t\n") == "*":
                    names.add("checkpoint")  # a star import of the tree may re-export one
                for alias in _ALIAS.finditer(match.group("names").strip("()\\ \t\n")):
                    if _CHECKPOINT_LIKE.match(alias.group("name")):
                        names.add(alias.group("alias") or alias.group("name"))
                continue
            imported = match.group("names").strip("()\\ \t\n")
            if imported.strip() == "*":
                star = star or relevant
                continue
            for alias in _ALIAS.finditer(imported):
                name = alias.group("name")
                if relevant or "checkpoint" in name:
                    names.add(alias.group("alias") or name)
            continue
        match = _IMPORT.match(text, line)
        if match is not None:
            spans.append(match.span())
            covered = match.end()
            for alias in _ALIAS.finditer(match.group("names")):
                name, bound = alias.group("name"), alias.group("alias")
                if bound and _CHECKPOINT_MODULE.match(name):
                    names.add(bound)
                elif bound and name in _PARENT_MODULES:  # import torch.utils as tu: tu.checkpoint...
                    names.update(f"{bound}.{child}" for child in _PARENT_MODULES[name])
    return names, spans, star


def _has_attribute_path(text: str) -> bool:
    """Whether ``utils.checkpoint...(`` / ``distributed.checkpoint....`` /
    ``_checkpoint.checkpoint_wrapper(`` (any spacing around the dot) occurs in ``text``."""
    find = text.find
    at = find("checkpoint")
    while at >= 0:
        if _ATTRIBUTE_TAIL.match(text, at):
            i = at - 1
            while i >= 0 and text[i].isspace():
                i -= 1
            if i >= 0 and text[i] == ".":
                i -= 1
                while i >= 0 and text[i].isspace():
                    i -= 1
                if text.endswith(_ATTRIBUTE_OWNERS, 0, i + 1):
                    return True
        at = find("checkpoint", at + 10)
    return False


def _uses_name(text: str, name: str) -> bool:
    """Whether ``name`` occurs in ``text`` as a whole word not preceded by a dot."""
    pattern = re.compile(rf"{re.escape(name)}\b")  # a literal prefix: searched fast
    for match in pattern.finditer(text):
        start = match.start()
        if start == 0:
            return True
        before = text[start - 1]
        if not (before.isalnum() or before == "_" or before == "."):
            return True
    return False


# ``ckpt = utils.checkpoint``: an alias of a checkpoint function of another module.
_ALIAS_ASSIGNMENT = re.compile(rb"^[ \t]*\w+[ \t]*=[ \t]*[\w.]+\.checkpoint[ \t]*(?:#.*)?$", re.MULTILINE)
# ``Args(gradient_checkpointing=True)``: a TrainingArguments subclass from another module.
_GC_KEYWORD = re.compile(rb"\bgradient_checkpointing[ \t]*=")
_alias_assignment = AliasLineSearch().search
_gc_keyword = KeywordSearch("gradient_checkpointing").search
_ac_keyword = KeywordSearch("activation_checkpointing").search  # transformers 5.24's name of the switch


# ``def backward(ctx, ...)``: a subclass of an ``autograd.Function`` of another module.
_CTX_BACKWARD = re.compile(rb"def[ \t]+backward[ \t]*\([ \t]*ctx\b")


def _home_made(raw: bytes) -> bool:
    """A ``torch.autograd.Function`` that may re-run a stored callable in ``backward``
    (CKP104/CKP105 judge the implementation), a subclass of one that overrides ``backward``, or
    a gradient hook that may re-run the model (:mod:`ckptlint.checkpoint.sites.ast_hook_recompute`,
    CKP105)."""
    return (
        b"enable_grad" in raw
        and b"backward" in raw
        and (b"Function" in raw or b"register_hook" in raw or _CTX_BACKWARD.search(raw) is not None)
    )


def file_may_have_findings(raw: bytes, path: str) -> bool:
    """:func:`may_have_findings` for the file at ``path``: a notebook's code cells
    (:func:`~ckptlint.text.reading.gate_bytes`), after a test of its raw bytes that needs no
    JSON parsing. Every word the gate looks for is made of ASCII letters, digits and ``_``,
    which JSON (and every notebook writer) keeps as they are inside strings, so a notebook
    whose bytes hold none of them has none in its cells either."""
    if path.lower().endswith(".ipynb"):
        if not (b"checkpoint" in raw or b"CKP" in raw or b"enable_grad" in raw or _other_words_anywhere(raw)):
            return False
        return may_have_findings(gate_bytes(raw, path))
    return may_have_findings(raw)


def _other_words_anywhere(raw: bytes) -> bool:
    return any(word in raw for word in _OTHER_WORD_BYTES)


def may_have_findings(raw: bytes) -> bool:
    """``False`` only when no rule can report anything in a file with these bytes."""
    if _home_made(raw):
        return True
    if b"checkpoint" not in raw:
        if _other_words(raw):
            return True
        return b"CKP" in raw and _CKP_CODE.search(raw) is not None
    if _words(raw) or _owner_call(raw):
        return True
    if _alias_assignment(raw) or _gc_keyword(raw) or _ac_keyword(raw):
        return True
    if b"gradient_checkpointing_enable" in raw or b"_composable" in raw:
        return True
    if b"CKP" in raw and _CKP_CODE.search(raw) is not None:
        return True
    if b"TrainingArguments" in raw and b"gradient_checkpointing" in raw:
        return True
    text = raw.decode("latin-1")
    text = text.removeprefix(_BOM)  # else an import on the first line is not at a line start
    if "\r" in text:  # old-Mac (CR-only) and mixed line endings: lines are found by "\n"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    names, spans, star = _bound_names(text)
    if star:
        return True
    if not names and "torch" not in text:
        return False
    rest = _without(text, spans)
    if _has_attribute_path(rest):
        return True
    return any(_uses_name(rest, name) for name in names)


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    out: list[str] = []
    cursor = 0
    for start, end in sorted(spans):
        if start < cursor:
            continue
        out.append(text[cursor:start])
        cursor = end
    out.append(text[cursor:])
    return "\n".join(out)
