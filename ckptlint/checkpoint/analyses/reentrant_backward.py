"""Whether backward can ever reach a reentrant checkpoint, and so recompute anything.

The reentrant variant of ``torch.utils.checkpoint.checkpoint`` is an ``autograd.Function``
(``CheckpointFunction``, torch/utils/checkpoint.py 2.9, unchanged in 2.13): its ``forward``
runs the function under ``no_grad`` and returns what it returned, and the function runs again
only in its ``backward``. ``Function.apply`` tracks only the tensors of that result, the
result itself or the elements of a tuple, and only when a tensor among the positional inputs
requires grad. So backward never reaches the checkpoint, and nothing is recomputed, when

- the function returns something else in every path: a list, dict or set (displays and
  comprehensions), ``None`` (a bare ``return`` or none at all), a literal; or
- no positional input can be a tensor: each is a display (a tuple too), a comprehension or a
  literal (torch warns "None of the inputs have requires_grad=True").

Checked on torch 2.13: a BatchNorm in a function over a list of branches updates its running
statistics once per branch with ``use_reentrant=True`` (the outputs do not require grad),
twice with ``use_reentrant=False``. The non-reentrant variant hooks saved tensors instead and
recomputes whatever the function returns; other libraries' implementations are not judged.
A name is followed to the bindings that reach its read (:func:`~ckptlint.semantic.reaching.reaching`):
all must be plain assignments of such values. Anything else (a call, a parameter, a decorated
function, a generator) may be a tensor: the site is judged as usual.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ckptlint.checkpoint.evaluator.class_summary import find_method
from ckptlint.checkpoint.evaluator.denotations import FunctionValue, InstanceValue
from ckptlint.checkpoint.evaluator.region import Frame, Region
from ckptlint.checkpoint.sites.site import CheckpointSite, SiteForm
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.model import SemanticModel
from ckptlint.semantic.reaching import reaching

__all__ = ["may_skip_backward", "never_backward"]

#: Expressions that build a value that is never a tensor.
_CONTAINERS = (cst.List, cst.ListComp, cst.Dict, cst.DictComp, cst.Set, cst.SetComp, cst.GeneratorExp, cst.Lambda)
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_CONSTANTS = frozenset({"None", "True", "False"})

#: Names followed through assignments before a value counts as unknown.
_MAX_DEPTH = 4


def may_skip_backward(site: CheckpointSite[Any, Any, Any, Any]) -> bool:
    """Whether ``site`` is a call of torch's checkpoint that runs the reentrant variant: the
    only sites :func:`never_backward` can answer ``True`` for (a cheap test before the region
    is built). It reads the site's record only, so sites found on ``ast`` are asked too."""
    return (
        site.api.kind is ApiKind.FUNCTION
        and site.api.fixed_reentrancy is None
        and site.runs_reentrant is True
        and site.form in (SiteForm.CALL, SiteForm.BOUND_CALL, SiteForm.PARTIAL)
    )


def never_backward(site: CheckpointSite, region: Region) -> bool:
    """Whether backward never reaches the reentrant checkpoint ``site`` (see the module
    docstring): no positional input can be a tensor, or every callable it may checkpoint
    returns no tensor and no tuple in every path that runs. ``region`` is the site's region."""
    if not may_skip_backward(site):
        return False
    model = region.analysis.model
    if site.form is SiteForm.CALL and not site.hidden_arguments and all(
        not arg.star and _never_tensor(arg.value, model, tuples=True) for arg in site.inputs
    ):
        return True
    if not region.resolved or not region.entries:
        return False
    frames = [frame for frame in region.frames if frame.depth == 0]
    for value in region.entries:
        if isinstance(value, InstanceValue):
            method = find_method(value.info, "forward")
            if method is None:
                return False
            node: cst.FunctionDef | cst.Lambda = method[0]
        elif isinstance(value, FunctionValue):
            node = value.node
        else:
            return False  # a torch layer, a torch function, a container: a tensor comes back
        mine = [frame for frame in frames if frame.function is node]
        if not mine or not all(_returns_untracked(frame) for frame in mine):
            return False
    return True


def _returns_untracked(frame: Frame) -> bool:
    """Whether every value ``frame``'s function returns, in the code that runs, is neither a
    tensor nor a tuple."""
    function = frame.function
    model = frame.analysis.model
    if isinstance(function, cst.Lambda):
        return _never_tensor(function.body, model, tuples=False)
    if function.decorators:
        return False  # a wrapper may return anything
    for node in frame.nodes():
        if isinstance(node, (cst.Yield, cst.Await)):
            return False
        if isinstance(node, cst.Return) and node.value is not None and not _never_tensor(node.value, model, tuples=False):
            return False
    return True


def _never_tensor(expr: cst.BaseExpression, model: SemanticModel, *, tuples: bool, depth: int = 0) -> bool:
    """Whether ``expr`` builds a value that is never a tensor (nor, unless ``tuples``, a
    tuple): a list, dict or set display or comprehension, a literal, ``None``, a name all of
    whose reaching bindings assign such a value, a conditional expression of two of them."""
    if isinstance(expr, _CONTAINERS + _LITERALS):
        return True
    if isinstance(expr, cst.Tuple):
        return tuples
    if isinstance(expr, cst.IfExp):
        return _never_tensor(expr.body, model, tuples=tuples, depth=depth) and _never_tensor(
            expr.orelse, model, tuples=tuples, depth=depth
        )
    if not isinstance(expr, cst.Name) or depth >= _MAX_DEPTH:
        return False
    if expr.value in _CONSTANTS:
        return True
    if expr not in model.scopes:
        return False
    bindings = reaching(model, expr)
    return bool(bindings) and all(
        binding.kind is BindingKind.ASSIGNMENT
        and binding.value is not None
        and binding.value is not expr
        and _never_tensor(binding.value, model, tuples=tuples, depth=depth + 1)
        for binding in bindings
    )
