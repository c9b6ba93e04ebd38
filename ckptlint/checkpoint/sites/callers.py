"""The calls of a function, when the linted module shows all of them: the switch one call up.

torchvision's DenseNet checkpoints in a method of its own, ``call_checkpoint_bottleneck``,
that ``forward`` calls only ``if self.memory_efficient and self.any_requires_grad(...)``:
the checkpoint runs only under that test, although no ``if`` is around it in its function.
:func:`~ckptlint.checkpoint.sites.ast_callers.calls_of` gives the calls whose tests
:mod:`~ckptlint.checkpoint.sites.ast_guards` reads
as the function's own, or ``None`` when the module cannot show every call:

- a method: every call is ``self.<name>(...)`` in a method of the same class (a call on
  another receiver, ``super()``, a subclass or another object, is unknown); ``forward`` and
  dunder methods are called by ``nn.Module.__call__`` and Python, never listed;
- a function defined in another function (its callers are in that function's text);
- a module-level function whose name starts with ``_`` (a public one may be imported and
  called by any module, which a file's findings never read: see Locality in ARCHITECTURE).

The name must occur in the file's text only at its ``def`` and at those calls (a word match
over the whole text): a reference that is not a
call (a callback, ``getattr(self, "name")``, a second definition, a mention in a comment)
makes the callers unknown, and a call inside the function itself (recursion) too.

Holds the word match over the file's text (``word_occurrences``), used by
:mod:`ckptlint.checkpoint.sites.ast_callers`, which finds the calls.
"""

from __future__ import annotations

import re

__all__ = []


def word_occurrences(derived: dict[str, object], text: str, name: str) -> int:
    """How many times ``name`` occurs as a word in ``text``, a module's whole text, counted
    once per name and module and kept in ``derived`` (the module's memo): every node of a
    function asks for its callers, and searching the text again each time was most of the
    time conditions took (diffusers: 185 s of CPU)."""
    counts = derived.setdefault("word_occurrences", {})
    assert isinstance(counts, dict)
    found = counts.get(name)
    if found is None:
        found = counts[name] = len(re.findall(rf"(?<![\w]){re.escape(name)}(?![\w])", text))
    return found


