"""Whether backward can ever reach a reentrant checkpoint (:mod:`ckptlint.checkpoint.analyses.reentrant_backward`
tells when it cannot), for a site and its
:class:`~ckptlint.checkpoint.evaluator.ast_region.AstRegion`.

Every literal is a ``Constant`` (``True``, ``False`` and ``None`` too; ``...`` is not taken for
a literal), an f-string is a ``JoinedStr``, ``yield from`` is a ``YieldFrom``, and a ``*``
input is a ``Starred``.
"""

from __future__ import annotations

import ast

from ckptlint.checkpoint.analyses.reentrant_backward import may_skip_backward
from ckptlint.checkpoint.evaluator.ast_class_summary import find_method
from ckptlint.checkpoint.evaluator.ast_region import AstFrame, AstRegion, FrameFunction
from ckptlint.checkpoint.evaluator.denotations import FunctionValue, InstanceValue
from ckptlint.checkpoint.sites.ast_site_builders import AstSite
from ckptlint.checkpoint.sites.site import SiteForm
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_reaching import reaching
from ckptlint.semantic.bindings import BindingKind

__all__ = ["may_skip_backward", "never_backward"]

#: Expressions that build a value that is never a tensor (displays, comprehensions, lambdas
#: and literals).
_NEVER_TENSORS = (
    ast.List, ast.ListComp, ast.Dict, ast.DictComp, ast.Set, ast.SetComp, ast.GeneratorExp, ast.Lambda, ast.JoinedStr,
)

#: Names followed through assignments before a value counts as unknown.
_MAX_DEPTH = 4


def never_backward(site: AstSite, region: AstRegion) -> bool:
    """Whether backward never reaches the reentrant checkpoint ``site``: no positional
    input can be a tensor, or every callable it may checkpoint returns no tensor and no tuple
    in every path that runs. ``region`` is the site's region."""
    if not may_skip_backward(site):
        return False
    model = region.analysis.model
    if site.form is SiteForm.CALL and not site.hidden_arguments and all(
        isinstance(arg, ast.expr) and not isinstance(arg, ast.Starred) and _never_tensor(arg, model, tuples=True)
        for arg in site.inputs
    ):
        return True
    if not region.resolved or not region.entries:
        return False
    frames = [frame for frame in region.frames if frame.depth == 0]
    for value in region.entries:
        node: FrameFunction
        if isinstance(value, InstanceValue):
            method = find_method(value.info, "forward")  # an ``ast`` class summary
            if method is None:
                return False
            node = method[0]
        elif isinstance(value, FunctionValue):
            node = value.node
        else:
            return False  # a torch layer, a torch function, a container: a tensor comes back
        mine = [frame for frame in frames if frame.function is node]
        if not mine or not all(_returns_untracked(frame) for frame in mine):
            return False
    return True


def _returns_untracked(frame: AstFrame) -> bool:
    """Whether every value ``frame``'s function returns, in the code that runs, is neither a
    tensor nor a tuple."""
    function = frame.function
    model = frame.analysis.model
    if isinstance(function, ast.Lambda):
        return _never_tensor(function.body, model, tuples=False)
    if function.decorator_list:
        return False  # a wrapper may return anything
    for node in frame.nodes():
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(node, ast.Return) and node.value is not None and not _never_tensor(node.value, model, tuples=False):
            return False
    return True


def _never_tensor(expr: ast.expr, model: AstModel, *, tuples: bool, depth: int = 0) -> bool:
    """Whether ``expr`` builds a value that is never a tensor (nor, unless ``tuples``, a
    tuple): a display or comprehension, a literal, ``None``, a name all of whose reaching
    bindings assign such a value, a conditional expression of two of them."""
    if isinstance(expr, _NEVER_TENSORS):
        return True
    if isinstance(expr, ast.Constant):
        if expr.value is None or isinstance(expr.value, bool):  # True, False, None
            return depth < _MAX_DEPTH
        return expr.value is not Ellipsis
    if isinstance(expr, ast.Tuple):
        return tuples
    if isinstance(expr, ast.IfExp):
        return _never_tensor(expr.body, model, tuples=tuples, depth=depth) and _never_tensor(
            expr.orelse, model, tuples=tuples, depth=depth
        )
    if not isinstance(expr, ast.Name) or depth >= _MAX_DEPTH or expr not in model.parents:
        return False
    bindings = reaching(model, expr)
    return bool(bindings) and all(
        binding.kind is BindingKind.ASSIGNMENT
        and binding.value is not None
        and binding.value is not expr
        and _never_tensor(binding.value, model, tuples=tuples, depth=depth + 1)
        for binding in bindings
    )
