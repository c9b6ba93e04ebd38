"""Which top-level statements of a linted module can hold what a rule reports, decided from
its ``ast`` index (:mod:`ckptlint.semantic.index`) before libcst parses anything.

Every rule reads checkpoint sites (:func:`ckptlint.checkpoint.sites.sites.site_index`: calls of
an API, ``torch.utils.checkpoint`` called as a function, ``torch.distributed.checkpoint``
calls) or home-made implementations (``autograd.Function`` classes with a ``backward``),
and what those reach. libcst parses only the statements chosen here and everything they
need (:meth:`ModuleIndex.select`: the statements binding or mutating every name they look
up, every import), so that a model file whose checkpointing sits in one class of forty is
not parsed whole.

A statement is chosen when it spells something a site is made of, by identifier (names,
attribute and keyword names; strings and comments are not read):

- an identifier from the API table (:mod:`ckptlint.facts.apis`): the last part of an API's
  qualified name (``checkpoint``, ``checkpoint_seq``, ``CheckpointWithoutOutput``...), a
  method API (``_gradient_checkpointing_func``), a switch (``gradient_checkpointing_enable``,
  the ``gradient_checkpointing`` keyword), a ``TrainingArguments`` base;
- a name bound by an import that can denote an API or a home-made implementation: of an
  API or of a module whose dotted name mentions checkpointing, or a name whose last part
  reads like one (what :class:`~ckptlint.checkpoint.sites.reach.Recogniser` follows into other
  modules: ``checkpoint``, ``ckpt``, ``recompute``, ``apply``; ``...Arguments``,
  ``...Args``, ``...Config`` for ``TrainingArguments`` subclasses);
- ``X.apply`` on a module-level or imported ``X`` (a home-made implementation's ``apply``);
- a ``backward`` function defined in it (a home-made implementation's), and, in a module with
  a star import, an identifier that reads like a checkpoint function.

and, repeatedly, when it uses what a chosen statement defines: a name a chosen assignment
or function binds (an alias ``ckpt = cp.checkpoint``, a wrapper or helper function), a
chosen class whose header (bases, keywords, decorators) or ``backward`` makes its *calls*
sites (a ``TrainingArguments`` subclass, a home-made implementation), and the subclasses of
every chosen class (a method it inherits may hold a site). A class that merely holds a
site in a method does not make its users chosen: constructing it is not a site.

This is a superset by construction of what the site finder reads, checked by the tests:
the findings, positions and fixes of every test program, shared case and property-test
program are those of a whole parse (``CKPTLINT_WHOLE_PARSE=1``), and so were those of the
41-repository benchmark corpus when this was written.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from ckptlint.facts.apis import (
    API_BY_QUALIFIED_NAME,
    HF_ENABLE_METHODS,
    INSTANCE_METHOD_APIS,
    METHOD_APIS,
    TRAINING_ARGUMENTS_BASES,
    UTILS_CHECKPOINT_MODULE,
)

if TYPE_CHECKING:
    from ckptlint.semantic.index import ModuleIndex

__all__ = ["site_statements"]

#: Last parts of imported names that the site finder follows into other modules (the
#: Recogniser's ``_FOLLOWED`` and ``_ARGUMENTS_LIKE``, and the gate's checkpoint-like names).
_FOLLOWED_IMPORT = re.compile(r"(?i)checkpoint|ckpt|recompute|^apply$|(?:Arguments|Args|Config)$")
_CHECKPOINT_LIKE = re.compile(r"(?i)checkpoint|ckpt|recompute|^apply$")
#: Identifiers of a gradient hook that re-runs the model (``enable_grad`` in the hook,
#: ``register_hook`` where it is registered: :mod:`ckptlint.checkpoint.sites.hook_recompute`).
_HOOK_RECOMPUTE = frozenset({"register_hook", "enable_grad"})


@lru_cache(maxsize=1)
def _api_identifiers() -> frozenset[str]:
    """Identifiers that make a statement a candidate wherever they appear."""
    words: set[str] = {"checkpoint", "gradient_checkpointing", "TrainingArguments", "Seq2SeqTrainingArguments"}
    words.add("activation_checkpointing")  # transformers 5.24's TrainingArguments switch
    words |= set(METHOD_APIS) | set(HF_ENABLE_METHODS)
    for qualified in [*API_BY_QUALIFIED_NAME, *TRAINING_ARGUMENTS_BASES, *INSTANCE_METHOD_APIS, UTILS_CHECKPOINT_MODULE]:
        parts = qualified.split(".")
        words.add(parts[-2] if parts[-1] == "apply" and len(parts) > 1 else parts[-1])
    for method, _ in INSTANCE_METHOD_APIS.values():
        words.add(method)
    return frozenset(words)


@lru_cache(maxsize=1)
def _api_names() -> frozenset[str]:
    return frozenset(API_BY_QUALIFIED_NAME) | TRAINING_ARGUMENTS_BASES | frozenset(INSTANCE_METHOD_APIS)


def _import_denotes_api(full: str) -> bool:
    """Whether a name imported as ``full`` (``"torch.utils.checkpoint.checkpoint"``,
    ``".utils.ckpt"``) may be an API, a module of APIs, or what the site finder follows."""
    if full in _api_names() or "checkpoint" in full.lower():
        return True
    return bool(_FOLLOWED_IMPORT.search(full.rsplit(".", 1)[-1]))


def site_statements(index: ModuleIndex) -> frozenset[int]:
    """Indices of the statements of ``index`` that can hold a checkpoint site or a home-made
    implementation, or define what one uses (see the module docstring). Import statements
    are not included (:meth:`ModuleIndex.select` takes every one)."""
    statements = index.statements
    api = _api_identifiers()
    imported_api: set[str] = set()
    for statement in statements:
        for bound, full in statement.imported:
            if _import_denotes_api(full):
                imported_api.add(bound)
    chosen: set[int] = set()
    calls_are_sites: set[int] = set()  # chosen classes whose calls can be sites
    for i, statement in enumerate(statements):
        if statement.kind == "import":
            continue
        ids = statement.identifiers
        home_made = "backward" in statement.defined  # an autograd.Function's backward, at any depth
        hook = not ids.isdisjoint(_HOOK_RECOMPUTE)  # a gradient hook that re-runs the model, its registration
        if (
            not ids.isdisjoint(api)
            or not ids.isdisjoint(imported_api)
            or not statement.apply_receivers.isdisjoint(statement.mentions)
            or home_made
            or hook
            or (index.star_import and any(_CHECKPOINT_LIKE.search(name) for name in ids))
        ):
            chosen.add(i)
            if statement.kind == "class" and (
                home_made or not statement.header.isdisjoint(api) or not statement.header.isdisjoint(imported_api)
            ):
                calls_are_sites.add(i)
    _spread(index, chosen, calls_are_sites)
    return frozenset(chosen)


def _spread(index: ModuleIndex, chosen: set[int], calls_are_sites: set[int]) -> None:
    """Add to ``chosen``, until nothing changes, the statements that use what a chosen
    statement defines (see the module docstring)."""
    statements = index.statements
    flows: set[str] = set()  # names whose uses are candidates
    classes: set[str] = set()  # names of chosen classes: their subclasses are candidates
    pending = list(chosen)
    while pending:
        for i in pending:
            statement = statements[i]
            if statement.kind == "class":
                classes |= statement.binds
                if i in calls_are_sites:
                    flows |= statement.binds
            elif statement.kind != "import":
                flows |= statement.binds
        pending = []
        for i, statement in enumerate(statements):
            if i in chosen or statement.kind == "import":
                continue
            uses = not statement.mentions.isdisjoint(flows)
            subclass = statement.kind == "class" and not statement.bases.isdisjoint(classes | flows)
            if uses or subclass:
                chosen.add(i)
                pending.append(i)
                if statement.kind == "class" and not statement.bases.isdisjoint(flows):
                    calls_are_sites.add(i)  # a subclass of a TrainingArguments subclass...
