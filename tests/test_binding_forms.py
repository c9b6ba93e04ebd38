"""Every binding form is seen by every rule family: one answer to "what value does this
target get" (``ckptlint.semantic.assignments``), whatever rule asks.

The matrix: each form that binds a layer to ``self.layer`` (or to a name later stored there)
x each region rule family (CKP101 randomness with ``nn.Dropout``, CKP203 running statistics
with ``nn.BatchNorm1d``, CKP202 a side effect in the recomputed forward); each form that
stores the re-run callable on ``ctx`` or reads it back in a home-made ``autograd.Function``
x CKP104/CKP105; and a ``functools.partial(checkpoint, ...)`` that a helper returns and the
class keeps on ``self``.
"""

from __future__ import annotations

import json

import pytest

from ckptlint.testing import lint

LAYER_PROGRAM = '''\
import contextlib

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Counting(nn.Module):
    """Counts its calls: a write to module state that recomputation repeats."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x


def build(d):
    return "layer", LAYER


class Inner(nn.Module):
CLASS_BODY
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
BINDING

    def forward(self, x):
FORWARD


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inner = Inner(d)

    def forward(self, x):
        return x + checkpoint(self.inner, x, use_reentrant=False, preserve_rng_state=False)
'''

CALL_LAYER = "        return self.layer(self.fc(x))"

#: form -> (class body, ``__init__`` lines after ``self.fc``, ``forward`` body); ``LAYER`` is
#: the layer under test.
LAYER_FORMS: dict[str, tuple[str, str, str]] = {
    "plain": ("", "        self.layer = LAYER", CALL_LAYER),
    "tuple": ("", "        self.proj, self.layer = nn.Linear(d, d), LAYER", CALL_LAYER),
    "list": ("", "        [self.layer, self.proj] = [LAYER, nn.Linear(d, d)]", CALL_LAYER),
    "nested-tuple": ("", "        self.proj, (self.act, self.layer) = nn.Linear(d, d), (nn.ReLU(), LAYER)", CALL_LAYER),
    "starred-before": ("", "        *rest, self.layer = nn.Linear(d, d), nn.ReLU(), LAYER", CALL_LAYER),
    "starred-after": ("", "        self.layer, *rest = LAYER, nn.Linear(d, d), nn.ReLU()", CALL_LAYER),
    "position-of-call": ("", "        self.name, self.layer = build(d)", CALL_LAYER),
    "chained": ("", "        self.layer = self.spare = LAYER", CALL_LAYER),
    "annotated": ("", "        self.layer: nn.Module = LAYER", CALL_LAYER),
    "augmented": (
        "",
        "        self.layers = nn.ModuleList()\n        self.layers += [LAYER]",
        "        for layer in self.layers:\n            x = layer(x)\n        return self.fc(x)",
    ),
    "walrus": ("", "        if (layer := LAYER) is not None:\n            self.layer = layer", CALL_LAYER),
    "with-as": ("", "        with contextlib.nullcontext(LAYER) as layer:\n            self.layer = layer", CALL_LAYER),
    "for-target": ("", "        for layer in (LAYER,):\n            self.layer = layer", CALL_LAYER),
    "for-attribute-target": ("", "        for self.layer in [LAYER]:\n            pass", CALL_LAYER),
    "setattr": ("", '        setattr(self, "layer", LAYER)', CALL_LAYER),
    "class-attribute": ("    layer = LAYER\n", "", CALL_LAYER),
    "local-tuple-in-forward": (
        "",
        "        self.layer = LAYER",
        "        fc, layer = self.fc, self.layer\n        return layer(fc(x))",
    ),
}

#: rule family -> (code, the layer, a word its message must name: the finding is read from the
#: layer, not a guess about code ckptlint could not see)
LAYER_FAMILIES: dict[str, tuple[str, str, str]] = {
    "randomness": ("CKP101", "nn.Dropout(0.1)", "nn.Dropout at line"),
    "running-statistics": ("CKP203", "nn.BatchNorm1d(d)", "BatchNorm1d"),
    "side-effect": ("CKP202", "Counting()", "calls"),
}


def _layer_program(form: str, layer: str) -> str:
    class_body, binding, forward = LAYER_FORMS[form]
    return (
        LAYER_PROGRAM.replace("CLASS_BODY\n", class_body)
        .replace("BINDING\n", binding + "\n" if binding else "")
        .replace("FORWARD", forward)
        .replace("LAYER", layer)
    )


@pytest.mark.parametrize("family", sorted(LAYER_FAMILIES))
@pytest.mark.parametrize("form", sorted(LAYER_FORMS))
def test_layer_bound_in_any_form_is_seen_by_every_family(form: str, family: str) -> None:
    code, layer, named = LAYER_FAMILIES[family]
    found = [d for d in lint(_layer_program(form, layer), code) if d.code == code]
    assert [d.code for d in found] == [code]
    assert named in found[0].message, found[0].message


@pytest.mark.parametrize("form", sorted(LAYER_FORMS))
def test_harmless_layer_bound_in_any_form_is_clean(form: str) -> None:
    """The same programs with ``nn.Identity()``: no finding of any family, so the findings
    above come from the layer the form binds (an unresolved layer makes CKP101 hedge)."""
    program = _layer_program(form, "nn.Identity()").replace("Counting()", "nn.Identity()")
    assert [d.code for d in lint(program, ["CKP101", "CKP202", "CKP203"])] == []


HOME_MADE_PROGRAM = '''\
import contextlib

import torch


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
STORE
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        with torch.no_grad():
            output_tensors = run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with torch.enable_grad():
            shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
RERUN
        grads = torch.autograd.grad(output_tensors, ctx.input_tensors + ctx.input_params, output_grads, allow_unused=True)
        return (None, None) + grads


def checkpoint(func, inputs, params, flag):
    if flag:
        args = tuple(inputs) + tuple(params)
        return CheckpointFunction.apply(func, len(inputs), *args)
    return func(*inputs)
'''

PLAIN_STORE = "        ctx.run_function = run_function"
PLAIN_RERUN = "            output_tensors = ctx.run_function(*shallow_copies)"

#: form -> (how ``forward`` stores the callable on ``ctx``, how ``backward`` runs it again)
CTX_FORMS: dict[str, tuple[str, str]] = {
    "plain": (PLAIN_STORE, PLAIN_RERUN),
    "tuple-store": ("        ctx.run_function, ctx.length = run_function, length", PLAIN_RERUN),
    "list-store": ("        [ctx.length, ctx.run_function] = [length, run_function]", PLAIN_RERUN),
    "starred-store": ("        *_, ctx.run_function = length, run_function", PLAIN_RERUN),
    "nested-store": ("        ctx.length, (ctx.run_function,) = length, (run_function,)", PLAIN_RERUN),
    "chained-store": ("        ctx.run_function = ctx.fn = run_function", PLAIN_RERUN),
    "annotated-store": ("        ctx.run_function: object = run_function", PLAIN_RERUN),
    "setattr-store": ('        setattr(ctx, "run_function", run_function)', PLAIN_RERUN),
    "walrus-store": ("        if (fn := run_function) is not None:\n            ctx.run_function = fn", PLAIN_RERUN),
    "tuple-read": (
        PLAIN_STORE,
        "            run, inputs = ctx.run_function, shallow_copies\n            output_tensors = run(*inputs)",
    ),
    "chained-read": (
        PLAIN_STORE,
        "            run = again = ctx.run_function\n            output_tensors = run(*shallow_copies)",
    ),
    "walrus-read": (PLAIN_STORE, "            output_tensors = (run := ctx.run_function)(*shallow_copies)"),
    "with-as-read": (
        PLAIN_STORE,
        "            with contextlib.nullcontext(ctx.run_function) as run:\n"
        "                output_tensors = run(*shallow_copies)",
    ),
    "for-read": (
        PLAIN_STORE,
        "            for run in (ctx.run_function,):\n                output_tensors = run(*shallow_copies)",
    ),
}


@pytest.mark.parametrize("form", sorted(CTX_FORMS))
def test_home_made_recompute_with_ctx_in_any_form_is_recognised(form: str) -> None:
    store, rerun = CTX_FORMS[form]
    program = HOME_MADE_PROGRAM.replace("STORE", store).replace("RERUN", rerun)
    found = [(d.code, d.message) for d in lint(program, ["CKP104", "CKP105"])]
    assert [code for code, _ in found] == ["CKP104", "CKP105"]
    assert all("CheckpointFunction" in message for _, message in found), found


HELPER_PARTIAL = '''\
import functools

from torch import nn
from torch.utils.checkpoint import checkpoint


def make_ckpt():
    return functools.partial(checkpoint, OPTIONS)


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(dim, dim), nn.Dropout(0.1))
        self.ckpt = make_ckpt()

    def forward(self, x):
        return self.ckpt(self.block, x)
'''


def _sites(run_cli, write, source: str) -> list[tuple[int, dict, str]]:
    write("net.py", source)
    result = run_cli("--show-sites", "--output-format", "json", "--isolated", "--no-cache", "net.py")
    return [(s["location"]["row"], s["options"], s["region"]["status"]) for s in json.loads(result.stdout)]


def test_partial_returned_by_a_helper_and_kept_on_self_is_a_site(run_cli, write) -> None:
    source = HELPER_PARTIAL.replace("OPTIONS", "use_reentrant=False, preserve_rng_state=False")
    options = {"preserve_rng_state": False, "use_reentrant": False}
    # the partial itself (its callable unknown there) and the call through self.ckpt, which
    # has the partial's options and a region: the block
    assert _sites(run_cli, write, source) == [(8, options, "unknown"), (18, options, "resolved")]
    found = [d.message for d in lint(source, "CKP101")]
    assert len(found) == 1 and "checkpoint at <string>.py:18" in found[0] and "nn.Dropout at line 14" in found[0], found


def test_partial_returned_by_a_method_without_use_reentrant_reports_ckp001(run_cli, write) -> None:
    source = (
        HELPER_PARTIAL.replace("OPTIONS", "preserve_rng_state=True")
        .replace("self.ckpt = make_ckpt()", "self.ckpt = self._make_ckpt()")
        .replace("    def forward", "    def _make_ckpt(self):\n        return make_ckpt()\n\n    def forward")
    )
    # the call through self.ckpt is a site with the partial's options: use_reentrant missing
    # (the reentrant default runs), reported once, at the partial that leaves it out
    options = {"preserve_rng_state": True, "use_reentrant": True}
    assert _sites(run_cli, write, source) == [(8, options, "unknown"), (21, options, "resolved")]
    assert [(d.start[0], d.code) for d in lint(source, "CKP001")] == [(8, "CKP001")]
