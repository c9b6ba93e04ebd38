"""The calls of a function, when the linted module shows all of them: the switch one call up.

torchvision's DenseNet checkpoints in a method of its own, ``call_checkpoint_bottleneck``,
that ``forward`` calls only ``if self.memory_efficient and self.any_requires_grad(...)``:
the checkpoint runs only under that test, although no ``if`` is around it in its function.
:func:`calls_of` gives the calls whose tests :mod:`~ckptlint.checkpoint.sites.guards` reads
as the function's own, or ``None`` when the module cannot show every call:

- a method: every call is ``self.<name>(...)`` in a method of the same class (a call on
  another receiver, ``super()``, a subclass or another object, is unknown); ``forward`` and
  dunder methods are called by ``nn.Module.__call__`` and Python, never listed;
- a function defined in another function (its callers are in that function's text);
- a module-level function whose name starts with ``_`` (a public one may be imported and
  called by any module, which a file's findings never read: see Locality in ARCHITECTURE).

The name must occur in the file's text only at its ``def`` and at those calls (a word match
over the whole text, the parts a partial parse left out included): a reference that is not a
call (a callback, ``getattr(self, "name")``, a second definition, a mention in a comment)
makes the callers unknown, and a call inside the function itself (recursion) too.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.semantic.syntax import last_name
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["calls_of"]

#: Methods that Python or ``nn.Module.__call__`` call: their callers are never all in the module.
_CALLED_BY_THE_RUNTIME = frozenset({"forward", "_call_impl", "_wrapped_call_impl"})


def calls_of(analysis: ModuleAnalysis, function: cst.FunctionDef) -> list[cst.Call] | None:
    """Every call of ``function`` (of ``analysis``), when the module shows all of them and
    there is at least one (see the module docstring); else ``None``."""
    name = function.name.value
    owner = _owner(analysis, function)
    if owner is None or name in _CALLED_BY_THE_RUNTIME or (name.startswith("__") and name.endswith("__")):
        return None
    if isinstance(owner, cst.Module) and not name.startswith("_"):
        return None
    calls = _calls_by_name(analysis).get(name, [])
    namesakes = _namesakes(analysis, owner, name) if isinstance(owner, cst.ClassDef) else []
    if namesakes is None:
        return None
    if namesakes:  # the calls inside those classes call their own method
        calls = [c for c in calls if not any(_self_call(analysis, c, other) for other in namesakes)]
    if not calls or _occurrences(analysis, name) != len(_calls_by_name(analysis).get(name, [])) + 1 + len(namesakes):
        return None
    model = analysis.model
    for call in calls:
        if any(ancestor is function for ancestor in model.ancestors(call)):
            return None
        if isinstance(owner, cst.ClassDef) and not _self_call(analysis, call, owner):
            return None
        if not isinstance(owner, cst.ClassDef) and not isinstance(call.func, cst.Name):
            return None
    return calls


def _namesakes(analysis: ModuleAnalysis, owner: cst.ClassDef, name: str) -> list[cst.ClassDef] | None:
    """The other classes of the module that define a method ``name`` in their own body
    (nanotron's ``_checkpointed_forward`` in both its MoE and decoder layers): a
    ``self.name(...)`` inside one of them calls its own method. ``None`` when one of them is
    a base or a subclass of ``owner`` by name (then ``self.name`` may mean either)."""
    found: list[cst.ClassDef] = []
    for node in _classes_by_method(analysis).get(name, []):
        if node is owner:
            continue
        bases = {last_name(b.value) for b in (*owner.bases, *node.bases)}
        if {node.name.value, owner.name.value} & bases:
            return None
        found.append(node)
    return found


def _owner(analysis: ModuleAnalysis, function: cst.FunctionDef) -> cst.CSTNode | None:
    """The class, function or module whose body defines ``function`` (``None`` when it is
    nested in another statement: an ``if``, a ``try``, which may define it twice)."""
    parent = analysis.model.parent(function)
    if isinstance(parent, cst.IndentedBlock):
        parent = analysis.model.parent(parent)
    return parent if isinstance(parent, (cst.ClassDef, cst.FunctionDef, cst.Module)) else None


def _self_call(analysis: ModuleAnalysis, call: cst.Call, cls: cst.ClassDef) -> bool:
    """Whether ``call`` is ``<first parameter>.name(...)`` in a method of ``cls`` (a lambda or
    nested function between them keeps the receiver the same name)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
        return False
    method = None
    for ancestor in analysis.model.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef):
            method = ancestor
        elif isinstance(ancestor, cst.ClassDef):
            break
    else:
        return False
    if ancestor is not cls or method is None or not method.params.params:
        return False
    return method.params.params[0].name.value == func.value.value


def _classes_by_method(analysis: ModuleAnalysis) -> dict[str, list[cst.ClassDef]]:
    """The module's classes by the names of the methods their own bodies define, built once
    per module."""
    cached = analysis.derived.get("classes_by_method")
    if isinstance(cached, dict):
        return cached
    index: dict[str, list[cst.ClassDef]] = {}
    for node in iter_tree(analysis.module):
        if isinstance(node, cst.ClassDef):
            for method in dict.fromkeys(s.name.value for s in node.body.body if isinstance(s, cst.FunctionDef)):
                index.setdefault(method, []).append(node)
    analysis.derived["classes_by_method"] = index
    return index


def _calls_by_name(analysis: ModuleAnalysis) -> dict[str, list[cst.Call]]:
    """The module's calls by the last name of what they call (``f(...)``, ``x.f(...)``),
    built once per module."""
    cached = analysis.derived.get("calls_by_name")
    if isinstance(cached, dict):
        return cached
    index: dict[str, list[cst.Call]] = {}
    for node in iter_tree(analysis.module):
        if isinstance(node, cst.Call):
            func = node.func
            name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
            if name is not None:
                index.setdefault(name, []).append(node)
    analysis.derived["calls_by_name"] = index
    return index


def _occurrences(analysis: ModuleAnalysis, name: str) -> int:
    return word_occurrences(analysis.derived, analysis.source.text, name)


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
