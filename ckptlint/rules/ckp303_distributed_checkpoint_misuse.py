"""CKP303 distributed-checkpoint-misuse, on CPython's ``ast``.

Arguments are read as one list in source order, ``*``/``**`` arguments among the
positional ones (:func:`~ckptlint.checkpoint.sites.ast_options.ordered_arguments`). A
parameter's annotation is quoted with the parentheses written around it (as earlier releases
quoted it) (:func:`_annotation_text`)."""

from __future__ import annotations

import ast

from ckptlint.checkpoint.sites.ast_argument_kinds import ValueKind, classify_value, name_hint
from ckptlint.checkpoint.sites.ast_options import AstArg, argument_value, ordered_arguments
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.facts.saving import DCP_FUNCTIONS, DcpFunction, DcpOperation
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.semantic.ast_analysis import AstAnalysis
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_walk import dotted_name
from ckptlint.semantic.bindings import BindingKind


class DistributedCheckpointMisuse(Rule):
    """Flags ``torch.distributed.checkpoint`` (DCP) calls given the wrong objects.

    DCP's ``save``/``async_save``/``load`` (and the deprecated ``save_state_dict``/
    ``load_state_dict``) take a *state dict*: a module passed directly fails with
    ``AttributeError: '<Module>' object has no attribute 'items'`` (save) or ``'keys'``
    (load). ``load`` loads in place and returns ``None``, so using its return value is
    always a mistake. The path goes in the keyword-only ``checkpoint_id=``: a second
    positional argument is taken as ``storage_writer``/``storage_reader`` by DCP's
    ``_api_bc_check`` shim, and a path there fails with ``AttributeError`` (``'str' object has
    no attribute 'storage_meta'``, raised wrapped in a ``CheckpointException``, a
    ``BaseException``).
    (state_dict_saver.py, state_dict_loader.py, utils.py; torch 2.9, verified on 2.13.)
    """

    code = "CKP303"

    VALID = (
        """\
        import torch.distributed.checkpoint as dcp
        dcp.save({'model': model.state_dict()}, checkpoint_id=path)
        """,
        """\
        import torch.distributed.checkpoint as dcp
        dcp.load(state_dict, checkpoint_id=path)
        """,
        """\
        from torch.distributed import checkpoint as dcp
        sd = {'model': model}
        dcp.load(sd, checkpoint_id=path)
        """,
        """\
        import torch.distributed.checkpoint as dcp
        fut = dcp.async_save(state, checkpoint_id=path)
        """,
        """\
        import torch.distributed.checkpoint as dcp
        dcp.save(sd, dcp.FileSystemWriter(path))
        """,
        """\
        def save(model, path):
            pass
        x = save(model, path)
        """,
    )
    INVALID = (
        Invalid(
            """\
            import torch.distributed.checkpoint as dcp
            dcp.save(model, checkpoint_id=path)
            """,
            at=(2, 10),
            message="`dcp.save()` takes a state dict, but it is given `model`, named like a module (an `nn.Module`)",
        ),
        Invalid(
            """\
            from torch import nn
            import torch.distributed.checkpoint as dcp
            net = nn.Linear(2, 2)
            dcp.save(net, checkpoint_id=path)
            """,
            at=(4, 10),
            message="`dcp.save()` takes a state dict, but it is given `net`, a module (`nn.Linear(...)`)",
        ),
        Invalid(
            """\
            from torch.distributed.checkpoint import load
            state = load(sd, checkpoint_id=path)
            """,
            at=(2, 9),
            message="`load()` loads in place into the state dict it is given and returns None",
        ),
        Invalid(
            """\
            import torch.distributed.checkpoint as dcp
            dcp.save(sd, 'ckpt/step-10')
            """,
            at=(2, 14),
            message="`dcp.save()`: its second positional argument is taken as `storage_writer`, not as the checkpoint path",
        ),
    )

    def check(self, ctx: RuleContext) -> None:
        analysis = ctx.analysis
        model = analysis.model
        for call in ast_site_index(analysis).dcp_calls:
            function = _function(call, model)
            if function is None:
                continue
            callee = f"`{analysis.text_of(call.func)}()`"
            state = _argument(call, 0, "state_dict")
            if state is not None:
                value = argument_value(state)
                evidence = _module_evidence(value, analysis)
                if evidence is not None:
                    missing = "items" if function.operation is DcpOperation.SAVE else "keys"
                    ctx.report(
                        value,
                        f"{callee} takes a state dict, but it is given {evidence}: it fails with AttributeError "
                        f"(no attribute '{missing}'); pass `{{\"model\": {analysis.text_of(value)}.state_dict()}}` "
                        "or `get_state_dict(...)` from torch.distributed.checkpoint.state_dict",
                        guarded=call,
                    )
            storage = _argument(call, 1, "storage_writer" if function.operation is DcpOperation.SAVE else "storage_reader")
            if storage is not None and _pathish(argument_value(storage), model):
                role = "storage_writer" if function.operation is DcpOperation.SAVE else "storage_reader"
                where = "its second positional argument" if not isinstance(storage, ast.keyword) else f"`{role}=`"
                if function.keyword_only_path:
                    advice = "pass the path as `checkpoint_id=` (keyword-only)"
                else:
                    advice = (
                        f"pass a `FileSystem{'Writer' if role == 'storage_writer' else 'Reader'}(path)`, "
                        f"or use `{'save' if function.operation is DcpOperation.SAVE else 'load'}"
                        "(..., checkpoint_id=path)` (this function is deprecated)"
                    )
                ctx.report(
                    argument_value(storage),
                    f"{callee}: {where} is taken as `{role}`, not as the checkpoint path, and a path there "
                    f"fails with AttributeError (for `save`/`load` wrapped in CheckpointException); {advice}",
                    guarded=call,
                )
            if function.returns_none and _result_used(call, model):
                ctx.report(
                    call,
                    f"{callee} loads in place into the state dict it is given and returns None: its return "
                    "value is used here; read the loaded values from the dict you passed (then call "
                    "`model.load_state_dict(...)` or `set_state_dict(...)`)",
                    guarded=call,
                )


def _function(call: ast.Call, model: AstModel) -> DcpFunction | None:
    for name in sorted(model.qualified_names(call.func)):
        found = DCP_FUNCTIONS.get(name)
        if found is not None:
            return found
    return None


def _argument(call: ast.Call, index: int, keyword: str) -> AstArg | None:
    """The argument at positional ``index`` (``None`` past a ``*``/``**`` one), else the one
    named ``keyword``."""
    arguments = ordered_arguments(call)
    positional = [arg for arg in arguments if not (isinstance(arg, ast.keyword) and arg.arg is not None)]
    if any(isinstance(arg, (ast.Starred, ast.keyword)) for arg in positional[: index + 1]):
        return None
    if len(positional) > index:
        return positional[index]
    return next((arg for arg in arguments if isinstance(arg, ast.keyword) and arg.arg == keyword), None)


def _module_evidence(expr: ast.expr, analysis: AstAnalysis) -> str | None:
    """A noun phrase saying why ``expr`` is a module, or ``None``."""
    model = analysis.model
    guess = classify_value(expr, model)
    if guess is not None:
        return guess.evidence if guess.kind is ValueKind.MODULE else None
    annotation = _parameter_annotation(expr, analysis)
    if annotation is not None:
        if "Module" in annotation or "Model" in annotation:
            return f"`{_plain(expr)}`, annotated `{annotation}`"
        return None  # annotated as something else (a dict, a Mapping, a state dict type...)
    if name_hint(expr) is ValueKind.MODULE:
        return f"`{_plain(expr)}`, named like a module (an `nn.Module`)"
    return None


def _parameter_annotation(expr: ast.expr, analysis: AstAnalysis) -> str | None:
    """The annotation text of the parameter ``expr`` names, if it is an annotated parameter."""
    if not isinstance(expr, ast.Name):
        return None
    bindings = analysis.model.bindings_of(expr)
    if len(bindings) != 1 or bindings[0].kind is not BindingKind.PARAMETER:
        return None
    param = bindings[0].node
    if not isinstance(param, ast.arg) or param.annotation is None:
        return None
    return _annotation_text(analysis, param, param.annotation)


def _annotation_text(analysis: AstAnalysis, param: ast.arg, annotation: ast.expr) -> str:
    """The annotation's text with the parentheses written around it (``ast`` leaves them out
    of its range): from the first ``(`` after the
    parameter's colon to the matching ``)`` after the annotation."""
    text = analysis.source.text
    start, end = analysis.offsets(annotation)
    name_start = analysis.offsets(param)[0]
    before = text[name_start:start]
    colon = before.find(":")
    opened = before.count("(", colon + 1)
    if colon < 0 or not opened or "#" in before:
        return text[start:end]
    first = name_start + before.index("(", colon + 1)
    closed = end
    for _ in range(opened):
        closed = text.index(")", closed) + 1
    return text[first:closed]


def _pathish(expr: ast.expr, model: AstModel) -> bool:
    guess = classify_value(expr, model)
    if guess is not None:
        return guess.kind is ValueKind.PATH
    return name_hint(expr) is ValueKind.PATH


def _result_used(call: ast.expr, model: AstModel) -> bool:
    parent = model.parent(call)
    if isinstance(parent, ast.Expr):
        return False
    if isinstance(parent, ast.Lambda):
        return False  # a callback's return value is the caller's business
    if isinstance(parent, ast.Await):
        return _result_used(parent, model)
    return True


def _plain(expr: ast.expr) -> str:
    return dotted_name(expr) or "..."
