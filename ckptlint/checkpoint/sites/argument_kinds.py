"""What an argument expression holds, as far as the source shows: a state dict, a dict, a
file path, an optimizer, an ``nn.Module``, ``torch.save``/``torch.load``.

Rules about confusing activation checkpointing with saving training state (CKP301) and
about ``torch.distributed.checkpoint`` given the wrong object (CKP303) ask these questions.
Two strengths of evidence are kept apart:

- :func:`classify_value` reads what the code *builds*: ``model.state_dict()``, a dict
  literal, ``os.path.join(...)``, ``torch.optim.AdamW(...)``, ``nn.Linear(...)``, an
  instance of a class of this module that subclasses ``nn.Module``, or a name every
  assignment of which builds one of these. This is reliable.
- :func:`name_hint` reads only the identifier (``optimizer``, ``ckpt_path``, ``model``).
  Rules use it only together with other evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from ckptlint.facts.saving import (
    MODULE_BASE_CLASSES,
    MODULE_FACTORIES,
    OPTIMIZER_PACKAGE,
    PATH_FACTORIES,
    SCHEDULER_PACKAGE,
    STATE_DICT_FACTORIES,
    TORCH_LOAD,
    TORCH_SAVE,
)
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.model import SemanticModel

__all__ = ["ValueGuess", "ValueKind", "classify_value", "identifier_of", "name_hint", "path_literal"]

_MAX_DEPTH = 4

#: File name endings of saved training state (torch.save, safetensors, pickles, archives).
CHECKPOINT_FILE_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".pkl", ".pickle", ".tar", ".npz", ".h5")


class ValueKind(str, Enum):
    STATE_DICT = "state dict"
    DICT = "dict"
    PATH = "path"
    OPTIMIZER = "optimizer"
    SCHEDULER = "learning-rate scheduler"
    MODULE = "module"
    SAVE_FUNCTION = "torch.save"
    LOAD_FUNCTION = "torch.load"


@dataclass(frozen=True)
class ValueGuess:
    """What an expression holds and why ckptlint thinks so.

    Attributes:
        kind: see :class:`ValueKind`.
        evidence: a short phrase for messages (``"a `state_dict()` call"``).
        node: the expression that was classified (for a name, the assigned value).
    """

    kind: ValueKind
    evidence: str
    node: cst.BaseExpression


def identifier_of(expr: cst.BaseExpression) -> str | None:
    """The last identifier of a ``Name``/``Attribute`` chain (``optimizer`` for
    ``self.optimizer``), or ``None``."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def path_literal(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is a string (plain, concatenated or f-string) whose literal text
    looks like a file path: it contains a path separator or ends with a checkpoint file
    suffix (``.pt``, ``.safetensors``...)."""
    text = _literal_text(expr)
    if text is None:
        return False
    return "/" in text or "\\" in text or text.lower().endswith(CHECKPOINT_FILE_SUFFIXES)


def _literal_text(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.ConcatenatedString):
        left, right = _literal_text(expr.left), _literal_text(expr.right)
        return None if left is None or right is None else left + right
    if isinstance(expr, cst.FormattedString):
        return "".join(
            part.value if isinstance(part, cst.FormattedStringText) else "{}" for part in expr.parts
        )
    return None


def classify_value(expr: cst.BaseExpression, model: SemanticModel, _depth: int = 0) -> ValueGuess | None:
    """What ``expr`` is built as, or ``None`` when the source does not say.

    Recognised: ``x.state_dict()`` and the DCP ``get_*state_dict`` helpers (STATE_DICT);
    dict literals, comprehensions and ``dict(...)`` (DICT); strings, f-strings,
    ``pathlib.Path(...)``, ``os.path.join(...)`` (PATH: any string counts here, callers
    decide whether that is enough); ``torch.optim.<Class>(...)`` (OPTIMIZER, or SCHEDULER
    under ``torch.optim.lr_scheduler``); ``torch.nn.<Class>(...)``, DDP/FSDP/``torch.compile``
    wrappers, ``X.from_pretrained(...)`` of a model class and instances of classes of this
    module that subclass ``nn.Module`` (MODULE); ``torch.save``/``torch.load`` themselves.
    A name is followed to its assignments in scope (all must agree; parameters and other
    bindings make it unknown).
    """
    if _depth > _MAX_DEPTH:
        return None
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        if isinstance(expr, cst.SimpleString) and not isinstance(expr.evaluated_value, str):
            return None  # bytes
        return ValueGuess(ValueKind.PATH, "a string", expr)
    if isinstance(expr, (cst.Dict, cst.DictComp)):
        return ValueGuess(ValueKind.DICT, "a dict literal", expr)
    if isinstance(expr, cst.Call):
        return _classify_call(expr, model)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        names = model.qualified_names(expr)
        if names & TORCH_SAVE:
            return ValueGuess(ValueKind.SAVE_FUNCTION, "`torch.save`", expr)
        if names & TORCH_LOAD:
            return ValueGuess(ValueKind.LOAD_FUNCTION, "`torch.load`", expr)
    if isinstance(expr, cst.Name):
        return _classify_name(expr, model, _depth)
    return None


def _classify_call(call: cst.Call, model: SemanticModel) -> ValueGuess | None:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "state_dict" and not call.args:
        return ValueGuess(ValueKind.STATE_DICT, "a `state_dict()` call", call)
    names = model.qualified_names(func)
    if names & STATE_DICT_FACTORIES:
        return ValueGuess(ValueKind.STATE_DICT, f"a `{identifier_of(func)}()` call", call)
    if "builtins.dict" in names:
        return ValueGuess(ValueKind.DICT, "a `dict(...)` call", call)
    if names & PATH_FACTORIES:
        return ValueGuess(ValueKind.PATH, f"a path (`{_dotted_tail(names & PATH_FACTORIES)}(...)`)", call)
    for name in sorted(names):
        if name.startswith(SCHEDULER_PACKAGE):
            return ValueGuess(ValueKind.SCHEDULER, f"a learning-rate scheduler (`{name}`)", call)
        if name.startswith(OPTIMIZER_PACKAGE) and name[len(OPTIMIZER_PACKAGE) :][:1].isupper():
            return ValueGuess(ValueKind.OPTIMIZER, f"an optimizer (`{name}`)", call)
    if _builds_module(call, names, model):
        return ValueGuess(ValueKind.MODULE, f"a module (`{_callee_text(func)}(...)`)", call)
    return None


def _builds_module(call: cst.Call, names: frozenset[str], model: SemanticModel) -> bool:
    if names & MODULE_FACTORIES:
        return True
    for name in names:
        if name.startswith("torch.nn.") and name.count(".") == 2 and name.rsplit(".", 1)[1][:1].isupper():
            return True
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
        owner = identifier_of(func.value) or ""
        return "Model" in owner or "For" in owner
    if isinstance(func, cst.Name):
        return any(_is_module_class(binding.node, model) for binding in model.bindings_of(func)
                   if binding.kind is BindingKind.CLASS)
    return False


def _is_module_class(node: cst.CSTNode, model: SemanticModel, _depth: int = 0) -> bool:
    """Whether the ``ClassDef`` ``node`` subclasses ``nn.Module`` (directly, or through
    other classes of this module)."""
    if not isinstance(node, cst.ClassDef) or _depth > _MAX_DEPTH:
        return False
    for base in node.bases:
        names = model.qualified_names(base.value)
        if names & MODULE_BASE_CLASSES:
            return True
        if isinstance(base.value, cst.Name):
            for binding in model.bindings_of(base.value):
                if binding.kind is BindingKind.CLASS and _is_module_class(binding.node, model, _depth + 1):
                    return True
    return False


def _classify_name(name: cst.Name, model: SemanticModel, depth: int) -> ValueGuess | None:
    bindings = model.bindings_of(name)
    if not bindings:
        return None
    guesses: list[ValueGuess] = []
    for binding in bindings:
        if binding.kind is not BindingKind.ASSIGNMENT or binding.value is None or binding.value is name:
            return None
        guess = classify_value(binding.value, model, depth + 1)
        if guess is None:
            return None
        guesses.append(guess)
    kinds = {g.kind for g in guesses}
    if len(kinds) != 1:
        return None
    return ValueGuess(guesses[0].kind, f"`{name.value}`, {guesses[0].evidence}", guesses[0].node)


_OPTIMIZER_NAME = re.compile(r"(?:^|_)optim(?:izer)?$")
_SCHEDULER_NAME = re.compile(r"(?:^|_)(?:lr_)?scheduler$")
_PATH_NAME = re.compile(r"(?:^|_)(?:path|dir|directory|file|filename|fname|folder)$")
_STATE_NAME = re.compile(r"(?:^|_)(?:state|states|state_dict|ckpt|checkpoint)$")
_MODULE_NAME = re.compile(r"(?:^|_)(?:model|module|net|network)$")


def name_hint(expr: cst.BaseExpression) -> ValueKind | None:
    """What the identifier of ``expr`` says it holds (weak evidence): ``optimizer``,
    ``g_optim`` -> OPTIMIZER; ``lr_scheduler`` -> SCHEDULER; ``ckpt_path``, ``save_dir``,
    ``filename`` -> PATH; ``state``, ``state_dict``, ``ckpt`` -> STATE_DICT; ``model``,
    ``self.module``, ``ddp_model`` -> MODULE. ``None`` for anything else."""
    identifier = identifier_of(expr)
    if identifier is None:
        return None
    lowered = identifier.lower()
    for pattern, kind in (
        (_OPTIMIZER_NAME, ValueKind.OPTIMIZER),
        (_SCHEDULER_NAME, ValueKind.SCHEDULER),
        (_PATH_NAME, ValueKind.PATH),
        (_STATE_NAME, ValueKind.STATE_DICT),
        (_MODULE_NAME, ValueKind.MODULE),
    ):
        if pattern.search(lowered):
            return kind
    return None


def _dotted_tail(names: frozenset[str]) -> str:
    return min(names)


def _callee_text(func: cst.BaseExpression) -> str:
    parts: list[str] = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    return ".".join(reversed(parts)) or "..."
