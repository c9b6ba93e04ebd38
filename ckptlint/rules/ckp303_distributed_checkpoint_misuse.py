"""CKP303 distributed-checkpoint-misuse."""

from __future__ import annotations

import libcst as cst

from ckptlint.checkpoint.sites.argument_kinds import ValueKind, classify_value, name_hint
from ckptlint.checkpoint.sites.sites import site_index
from ckptlint.facts.saving import DCP_FUNCTIONS, DcpFunction, DcpOperation
from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.model import SemanticModel, dotted_name


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
        model = ctx.analysis.model
        for call in site_index(ctx.analysis).dcp_calls:
            function = _function(call, model)
            if function is None:
                continue
            callee = f"`{ctx.analysis.text_of(call.func)}()`"
            state = _argument(call, 0, "state_dict")
            if state is not None:
                evidence = _module_evidence(state.value, model)
                if evidence is not None:
                    missing = "items" if function.operation is DcpOperation.SAVE else "keys"
                    ctx.report(
                        state.value,
                        f"{callee} takes a state dict, but it is given {evidence}: it fails with AttributeError "
                        f"(no attribute '{missing}'); pass `{{\"model\": {_text(ctx, state.value)}.state_dict()}}` "
                        "or `get_state_dict(...)` from torch.distributed.checkpoint.state_dict",
                        guarded=call,
                    )
            storage = _argument(call, 1, "storage_writer" if function.operation is DcpOperation.SAVE else "storage_reader")
            if storage is not None and _pathish(storage.value, model):
                role = "storage_writer" if function.operation is DcpOperation.SAVE else "storage_reader"
                where = "its second positional argument" if storage.keyword is None else f"`{role}=`"
                if function.keyword_only_path:
                    advice = "pass the path as `checkpoint_id=` (keyword-only)"
                else:
                    advice = (
                        f"pass a `FileSystem{'Writer' if role == 'storage_writer' else 'Reader'}(path)`, "
                        f"or use `{'save' if function.operation is DcpOperation.SAVE else 'load'}"
                        "(..., checkpoint_id=path)` (this function is deprecated)"
                    )
                ctx.report(
                    storage.value,
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


def _function(call: cst.Call, model: SemanticModel) -> DcpFunction | None:
    for name in sorted(model.qualified_names(call.func)):
        found = DCP_FUNCTIONS.get(name)
        if found is not None:
            return found
    return None


def _argument(call: cst.Call, index: int, keyword: str) -> cst.Arg | None:
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional[: index + 1]):
        return None
    if len(positional) > index:
        return positional[index]
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == keyword), None)


def _module_evidence(expr: cst.BaseExpression, model: SemanticModel) -> str | None:
    """A noun phrase saying why ``expr`` is a module, or ``None``: built as one (see
    :func:`~ckptlint.checkpoint.sites.argument_kinds.classify_value`), or, when nothing else is known about it,
    named like one (``model``, ``self.module``, ``ddp_model``)."""
    guess = classify_value(expr, model)
    if guess is not None:
        return guess.evidence if guess.kind is ValueKind.MODULE else None
    annotation = _parameter_annotation(expr, model)
    if annotation is not None:
        if "Module" in annotation or "Model" in annotation:
            return f"`{_plain(expr)}`, annotated `{annotation}`"
        return None  # annotated as something else (a dict, a Mapping, a state dict type...)
    if name_hint(expr) is ValueKind.MODULE:
        return f"`{_plain(expr)}`, named like a module (an `nn.Module`)"
    return None


def _parameter_annotation(expr: cst.BaseExpression, model: SemanticModel) -> str | None:
    """The annotation text of the parameter ``expr`` names, if it is an annotated parameter."""
    if not isinstance(expr, cst.Name):
        return None
    bindings = model.bindings_of(expr)
    if len(bindings) != 1 or bindings[0].kind is not BindingKind.PARAMETER:
        return None
    param = bindings[0].node
    if not isinstance(param, cst.Param) or param.annotation is None:
        return None
    return model.module.code_for_node(param.annotation.annotation)


def _pathish(expr: cst.BaseExpression, model: SemanticModel) -> bool:
    guess = classify_value(expr, model)
    if guess is not None:
        return guess.kind is ValueKind.PATH
    return name_hint(expr) is ValueKind.PATH


def _result_used(call: cst.Call, model: SemanticModel) -> bool:
    parent = model.parent(call)
    if isinstance(parent, cst.Expr):
        return False
    if isinstance(parent, cst.Lambda):
        return False  # a callback's return value is the caller's business
    if isinstance(parent, cst.Await):
        return _result_used(parent, model)  # type: ignore[arg-type]
    return True


def _plain(expr: cst.BaseExpression) -> str:
    return dotted_name(expr) or "..."


def _text(ctx: RuleContext, expr: cst.BaseExpression) -> str:
    return ctx.analysis.text_of(expr)
