"""The byte-level gate: decide from a file's bytes whether it can hold anything a rule
reports, before decoding or parsing it (parsing with libcst costs ~1,000x more).

The gate may say "yes" wrongly (the file is then parsed and nothing is found) but never
"no" wrongly for the APIs in :mod:`ckptlint.apis`. It answers yes when the file

- has ``CKP`` in it (a ``# noqa: CKPxxx`` that CKP901 judges), or names transformers'
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

__all__ = ["may_have_findings"]

_BOM = "\xef\xbb\xbf"  # the UTF-8 byte-order mark, decoded as latin-1
_ALWAYS = (b"CKP", b"gradient_checkpointing_enable", b"_composable")

# Modules whose import makes a checkpoint site (or a DCP call, CKP303) possible.
_MODULE = r"torch\s*\.\s*(?:utils\s*\.\s*checkpoint|distributed\s*\.\s*checkpoint(?:\s*\.\s*\w+)*|distributed\s*\.\s*algorithms\s*\.\s*_checkpoint(?:\s*\.\s*checkpoint_wrapper)?)"
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
_ATTRIBUTE_PATH = re.compile(r"(?:utils|distributed|_checkpoint)\s*\.\s*checkpoint\w*\s*[.(]")
_ALIAS = re.compile(r"(?P<name>[\w.]+)(?:\s+as\s+(?P<alias>\w+))?")


def _bound_names(text: str) -> tuple[set[str], list[tuple[int, int]], bool]:
    """Names bound by checkpoint-related imports, the spans of all import statements, and
    whether a star import from a checkpoint module was seen."""
    names: set[str] = set()
    spans: list[tuple[int, int]] = []
    star = False
    for match in _IMPORT_FROM.finditer(text):
        spans.append(match.span())
        module = match.group("module")
        relevant = bool(_CHECKPOINT_MODULE.match(module))
        parent = module in _PARENT_MODULES
        if not relevant and not parent:
            continue
        imported = match.group("names").strip("()\\ \t\n")
        if imported.strip() == "*":
            star = star or relevant
            continue
        for alias in _ALIAS.finditer(imported):
            name = alias.group("name")
            if relevant or "checkpoint" in name:
                names.add(alias.group("alias") or name)
    for match in _IMPORT.finditer(text):
        spans.append(match.span())
        for alias in _ALIAS.finditer(match.group("names")):
            name, bound = alias.group("name"), alias.group("alias")
            if bound and _CHECKPOINT_MODULE.match(name):
                names.add(bound)
            elif bound and name in _PARENT_MODULES:  # import torch.utils as tu: tu.checkpoint...
                names.update(f"{bound}.{child}" for child in _PARENT_MODULES[name])
    return names, spans, star


def may_have_findings(raw: bytes) -> bool:
    """``False`` only when no rule can report anything in a file with these bytes."""
    if b"checkpoint" not in raw:
        return b"CKP" in raw
    if any(marker in raw for marker in _ALWAYS):
        return True
    if b"TrainingArguments" in raw and b"gradient_checkpointing" in raw:
        return True
    text = raw.decode("latin-1")
    if text.startswith(_BOM):
        text = text[len(_BOM) :]  # else an import on the first line is not at a line start
    names, spans, star = _bound_names(text)
    if star:
        return True
    if not names and "torch" not in text:
        return False
    rest = _without(text, spans)
    if _ATTRIBUTE_PATH.search(rest):
        return True
    return any(re.search(rf"(?<![\w.]){re.escape(name)}\b", rest) for name in names)


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
