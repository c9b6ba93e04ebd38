"""BatchNorm layers that a backbone keeps in eval mode while it trains (CKP203).

OpenMMLab backbones (mmdet / mmseg / mmpose / mmaction ``ResNet`` and its family, mmcv's
``cnn.ResNet``, ``HRNet``) override ``train`` so that a switch freezes normalisation::

    def train(self, mode=True):
        super().train(mode)
        if mode and self.norm_eval:          # mmcv.cnn.ResNet: `if self.bn_eval:`
            for m in self.modules():
                if isinstance(m, _BatchNorm):
                    m.eval()

With the switch on, every BatchNorm below the backbone runs in eval mode: it normalises with
its running statistics and never updates them, so a recomputation cannot update them twice.
The blocks that checkpoint themselves (``Bottleneck.forward``: ``cp.checkpoint(_inner_forward,
x)`` under ``with_cp``) are built by such a backbone, usually from ``arch_settings`` in the
same module.

:func:`frozen_batchnorms` answers, for a site, which running-statistics layers (by
``LayerFact.name``) are frozen that way *by default*: the class the site's method belongs to
is the backbone itself, or every class of its module that names it (or names a subclass of it
in the same module, or subclasses such a class there) freezes BatchNorm in ``train`` (its own or
inherited from a class of the tree) under ``self.<flag>`` tests whose value, followed to the
``__init__`` parameter default of the nearest class that sets it, is ``True``. A reference from
anywhere else in the module (a module-level table, a function) is a user that is not known
to freeze, and nothing is exempt. Users in other modules are not seen.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.analyses.class_users import class_users
from ckptlint.checkpoint.evaluator.class_summary import self_parameter
from ckptlint.checkpoint.evaluator.denotations import ClassInfo
from ckptlint.checkpoint.sites.options import NOT_LITERAL, literal_value
from ckptlint.facts.torch_facts import batchnorm_instances
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.checkpoint.evaluator.regions import RegionBuilder
    from ckptlint.checkpoint.sites.site import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["Freeze", "frozen_batchnorms", "parent_freeze"]


@dataclass(frozen=True)
class Freeze:
    """BatchNorm frozen in training by a backbone's ``train`` override.

    Attributes:
        layers: the layers frozen (``LayerFact.name``: ``"nn.BatchNorm2d"``).
        owners: the classes whose ``train`` freezes them (``"ResNet"``).
        flags: the switches, ``self.<flag>`` (``"norm_eval"``), each ``True`` by default.
    """

    layers: frozenset[str]
    owners: tuple[str, ...]
    flags: tuple[str, ...]


def frozen_batchnorms(builder: RegionBuilder, site: CheckpointSite, analysis: ModuleAnalysis) -> Freeze | None:
    """The BatchNorm layers that the backbone owning ``site``'s class keeps in eval mode in
    training with its default settings, or ``None`` (see the module docstring)."""
    cls = builder.enclosing_class(analysis, site.call)
    if cls is None:
        return None
    if analysis.covered is not None:
        # Who builds the class is a question about the whole module, which a partial parse
        # (ckptlint.checkpoint.sites.site_statements) may not hold: ask the project for the whole
        # parse; it replaces this one and the rules run again on it (ckptlint.semantic.project).
        path = analysis.source.path
        if builder.project is not None and os.path.isabs(path):
            builder.project.analysis_for_file(Path(path))
        return None
    known: dict[cst.ClassDef, Freeze | None] = analysis.derived.setdefault("frozen_batchnorms", {})  # type: ignore[assignment]
    if cls.node not in known:
        known[cls.node] = _frozen_for(builder, analysis, cls)
    return known[cls.node]


def _frozen_for(builder: RegionBuilder, analysis: ModuleAnalysis, cls: ClassInfo) -> Freeze | None:
    own = _freeze(builder, cls)
    if own is not None:
        return own  # the backbone checkpoints its own stages
    users, complete = class_users(builder, analysis, cls)
    if not users or not complete:
        return None
    freezes = [_freeze(builder, user) for user in users]
    if any(f is None for f in freezes):
        return None
    layers = frozenset.intersection(*(f.layers for f in freezes))  # type: ignore[union-attr]
    if not layers:
        return None
    owners = tuple(dict.fromkeys(o for f in freezes for o in f.owners))  # type: ignore[union-attr]
    flags = tuple(dict.fromkeys(g for f in freezes for g in f.flags))  # type: ignore[union-attr]
    return Freeze(layers, owners, flags)


def parent_freeze(builder: RegionBuilder, parent: ClassInfo) -> Freeze | None:
    """What the ``train`` of ``parent`` (a class that builds blocks, its own or inherited from a
    class of the tree) keeps in eval mode with its default settings, or ``None``."""
    return _freeze(builder, parent)


# ------------------------------------------------------------------ what train() does
def _freeze(builder: RegionBuilder, cls: ClassInfo) -> Freeze | None:
    """What ``cls``'s ``train`` (its own or a base class's of the tree) freezes by default."""
    found = builder.method(cls, "train")
    if found is None:
        return None
    train, owner = found
    self_name = self_parameter(train)
    params = list(train.params.params)
    if self_name is None or not isinstance(train.body, cst.IndentedBlock):
        return None
    mode = params[1].name.value if len(params) > 1 else None
    statements = list(train.body.body)
    start = next((i for i, s in enumerate(statements) if _calls_super_train(s)), None)
    if start is None:
        return None
    for statement in statements[start + 1 :]:
        for tests, kinds in _freezing_loops(statement, self_name, []):
            flags: list[str] = []
            if all(_on_by_default(builder, cls, test, self_name, mode, flags) for test in tests) and flags:
                layers = frozenset().union(*(batchnorm_instances(q) for q in _qualified(owner.analysis, kinds)))
                if layers:
                    return Freeze(layers, (cls.name,), tuple(flags))
    return None


def _calls_super_train(statement: cst.CSTNode) -> bool:
    """``super().train(mode)`` / ``super(ResNet, self).train(mode)`` as a statement."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        call = small.value if isinstance(small, cst.Expr) else None
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            continue
        receiver = call.func.value
        if call.func.attr.value == "train" and isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name):
            if receiver.func.value == "super":
                return True
    return False


def _freezing_loops(
    statement: cst.CSTNode, self_name: str, tests: list[cst.BaseExpression]
) -> list[tuple[list[cst.BaseExpression], cst.BaseExpression]]:
    """``for m in self.modules(): if isinstance(m, T): m.eval()`` reached through the bodies
    (never the ``else``) of ``if`` statements: ``(the tests on the way, T)`` for each."""
    found: list[tuple[list[cst.BaseExpression], cst.BaseExpression]] = []
    if isinstance(statement, cst.If):
        for inner in _block(statement.body):
            found += _freezing_loops(inner, self_name, [*tests, statement.test])
    elif isinstance(statement, cst.For) and isinstance(statement.target, cst.Name) and _modules_of(statement.iter, self_name):
        variable = statement.target.value
        for inner in _block(statement.body):
            kinds = _isinstance_eval(inner, variable)
            if kinds is not None:
                found.append((tests, kinds))
    return found


def _block(body: cst.BaseSuite) -> list[cst.CSTNode]:
    return list(body.body) if isinstance(body, cst.IndentedBlock) else []


def _modules_of(expr: cst.BaseExpression, self_name: str) -> bool:
    """``self.modules()``."""
    return (
        isinstance(expr, cst.Call)
        and not expr.args
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "modules"
        and isinstance(expr.func.value, cst.Name)
        and expr.func.value.value == self_name
    )


def _isinstance_eval(statement: cst.CSTNode, variable: str) -> cst.BaseExpression | None:
    """``T`` of ``if isinstance(m, T): ... m.eval() ...`` (``m.eval()`` a statement of the body)."""
    if not isinstance(statement, cst.If) or not isinstance(statement.test, cst.Call):
        return None
    test = statement.test
    if not (isinstance(test.func, cst.Name) and test.func.value == "isinstance" and len(test.args) == 2):
        return None
    if not (isinstance(test.args[0].value, cst.Name) and test.args[0].value.value == variable):
        return None
    for inner in _block(statement.body):
        if not isinstance(inner, cst.SimpleStatementLine):
            continue
        for small in inner.body:
            call = small.value if isinstance(small, cst.Expr) else None
            if (
                isinstance(call, cst.Call)
                and not call.args
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "eval"
                and isinstance(call.func.value, cst.Name)
                and call.func.value.value == variable
            ):
                return test.args[1].value
    return None


def _qualified(analysis: ModuleAnalysis, kinds: cst.BaseExpression) -> set[str]:
    """The qualified names of the classes ``isinstance`` tests (a tuple: each element)."""
    elements = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    names: set[str] = set()
    model = analysis.model
    for element in elements:
        if element in model.scopes or isinstance(element, cst.Attribute):
            names |= set(model.qualified_names(element))
    return names


def _on_by_default(
    builder: RegionBuilder, cls: ClassInfo, test: cst.BaseExpression, self_name: str, mode: str | None, flags: list[str]
) -> bool:
    """Whether ``test`` is true in training (``mode`` true) with ``cls``'s default settings:
    a conjunction of ``mode`` and ``self.<flag>`` whose default is ``True`` (each flag is
    added to ``flags``)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _on_by_default(builder, cls, test.left, self_name, mode, flags) and _on_by_default(
            builder, cls, test.right, self_name, mode, flags
        )
    if isinstance(test, cst.Name) and mode is not None and test.value == mode:
        return True
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == self_name:
        flag = test.attr.value
        if _flag_default(builder, cls, flag) is True:
            flags.append(flag)
            return True
    return False


def _flag_default(builder: RegionBuilder, cls: ClassInfo, flag: str) -> object:
    """The value ``self.<flag>`` has in an instance of ``cls`` built with default arguments:
    ``self.<flag> = <param>`` assigned in ``__init__`` (by ``cls`` or a base of the tree),
    with the default of the nearest ``__init__`` in the method order that takes ``<param>`` or
    passes ``<param>=<literal>`` on; :data:`NOT_LITERAL` when it is set anywhere else in a
    module (``model.backbone.norm_eval = False``), from something else, or not known."""
    order = builder.mro(cls)
    params: set[str] = set()
    for info in order:
        for value, method, path in info.attributes.get(flag, ()):
            if method is None or method.name.value != "__init__" or not isinstance(value, cst.Name) or path:
                return NOT_LITERAL
            if builder.assigned_outside(info.analysis, flag, method):
                return NOT_LITERAL
            params.add(value.value)
    if len(params) != 1:
        return NOT_LITERAL
    (param,) = params
    for info in order:
        init = info.methods.get("__init__")
        if init is None:
            continue
        for candidate in (*init.params.params, *init.params.kwonly_params):
            if candidate.name.value == param:
                if candidate.default is None:
                    return NOT_LITERAL
                return literal_value(candidate.default, info.analysis.model)
        for node in iter_tree(init.body):
            if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == param:
                return literal_value(node.value, info.analysis.model)
    return NOT_LITERAL
