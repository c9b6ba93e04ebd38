"""The PyTorch behaviour CKP002, CKP003, CKP302, CKP303 and CKP304 rely on, checked against
the installed torch (2.13.0+cpu in CI), each next to the linter's verdict on the same code."""

from __future__ import annotations

import contextlib
import logging
import tempfile
import warnings

import pytest

from ckptlint.testing import codes

torch = pytest.importorskip("torch")
from torch.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: E402 - after the skip without torch

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def x_in():
    return torch.randn(2, 3, requires_grad=True)


def fn(a, b=None, **kwargs):
    return torch.tanh(a) * 2


@pytest.mark.parametrize(
    ("options", "raises"),
    [
        ({"b": 1}, True),
        ({"use_reentrant": True, "b": 1}, True),
        ({"use_reentrant": True, "context_fn": lambda: (None, None)}, True),
        ({"use_reentrant": True, "debug": True}, True),
        ({"use_reentrant": True, "debug": 0}, True),
        ({"use_reentrant": True, "debug": None}, True),
        ({"use_reentrant": True, "debug": False}, False),
        ({"use_reentrant": True, "early_stop": True}, False),  # silently ignored
        ({"use_reentrant": True, "determinism_check": "bogus"}, False),  # not even validated
        ({"use_reentrant": False, "b": 1, "debug": True}, False),
    ],
)
def test_reentrant_argument_matrix(options: dict, raises: bool) -> None:
    if raises:
        with pytest.raises(ValueError):
            checkpoint(fn, x_in(), **options)
    else:
        checkpoint(fn, x_in(), **options).sum().backward()


def test_ckp002_bad_example_raises_and_its_fix_runs() -> None:
    assert "CKP002" in codes(IMPORT + "y = checkpoint(fn, x, b=1)\n")
    with pytest.raises(ValueError, match="Unexpected keyword arguments: b"):
        checkpoint(fn, x_in(), b=1)
    assert "CKP002" not in codes(IMPORT + "y = checkpoint(fn, x, b=1, use_reentrant=False)\n")
    checkpoint(fn, x_in(), b=1, use_reentrant=False).sum().backward()


def test_runtime_helper_reports_the_rejected_variant() -> None:
    from ckptlint.runtime import check_checkpoint_equivalent

    report = check_checkpoint_equivalent(
        fn, x_in(), kwargs={"b": 1}, variants=[{"use_reentrant": True}, {"use_reentrant": False}]
    )
    reentrant, non_reentrant = report.results
    # torch rejects keyword arguments under the reentrant variant (ValueError, asserted
    # above); the helper reports that variant as not applicable instead of as a difference
    assert reentrant.not_applicable and "Unexpected keyword arguments" in reentrant.not_applicable
    assert reentrant.ok and reentrant.calls == 0
    assert non_reentrant.error is None and non_reentrant.not_applicable is None


def test_checkpoint_sequential_facts() -> None:
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 3))
    x = x_in()
    with pytest.raises(RuntimeError, match="ambiguous"):
        checkpoint_sequential(m, 2, x, x)  # a second "input" binds to use_reentrant
    with pytest.raises(TypeError):
        checkpoint_sequential(m, 2, x, False, True)
    for keyword in ("context_fn", "debug", "early_stop", "determinism_check", "preserve_rng"):
        with pytest.raises(ValueError, match="Unexpected keyword arguments"):
            checkpoint_sequential(m, 2, x, use_reentrant=False, **{keyword: False})
    checkpoint_sequential(m, 2, x, use_reentrant=False, preserve_rng_state=True)


def test_composable_checkpoint_facts() -> None:
    from torch.distributed._composable import checkpoint as composable

    with pytest.raises(NotImplementedError):
        composable(torch.nn.Linear(2, 2), use_reentrant=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        composable(torch.nn.Linear(2, 2), foo=1)
    composable(torch.nn.Linear(2, 2), use_reentrant=False, debug=True)


def test_misspelled_options_facts() -> None:
    with pytest.raises(ValueError, match="Unexpected keyword arguments: use_reentrent"):
        checkpoint(fn, x_in(), use_reentrent=False)
    seen = {}

    def spy(a, **kwargs):
        seen.update(kwargs)
        return a * 2

    checkpoint(spy, x_in(), use_reentrant=False, preserve_rng=False)
    assert seen == {"preserve_rng": False}  # swallowed by the function; the option kept its default


def test_module_called_fact() -> None:
    from torch.utils import checkpoint as module

    with pytest.raises(TypeError, match="'module' object is not callable"):
        module(fn, x_in())  # type: ignore[operator]


def test_no_grad_facts() -> None:
    calls = []

    def counted(a):
        calls.append(1)
        return a.sin()

    for use_reentrant in (True, False):
        calls.clear()
        with torch.no_grad():
            y = checkpoint(counted, x_in(), use_reentrant=use_reentrant)
        assert len(calls) == 1 and not y.requires_grad
        calls.clear()
        with torch.no_grad(), torch.enable_grad():
            y = checkpoint(counted, x_in(), use_reentrant=use_reentrant)
        y.sum().backward()
        assert len(calls) == 2  # forward + recomputation


def test_dcp_facts() -> None:
    import torch.distributed.checkpoint as dcp

    model = torch.nn.Linear(2, 2)
    with tempfile.TemporaryDirectory() as folder:
        with pytest.raises(AttributeError, match="items"):
            dcp.save(model, checkpoint_id=f"{folder}/a", no_dist=True)
        dcp.save({"model": model.state_dict()}, checkpoint_id=f"{folder}/b", no_dist=True)
        state = {"model": model.state_dict()}
        assert dcp.load(state, checkpoint_id=f"{folder}/b", no_dist=True) is None
        with pytest.raises(AttributeError, match="keys"):
            dcp.load(model, checkpoint_id=f"{folder}/b", no_dist=True)
        with pytest.raises(BaseException) as info:  # CheckpointException is a BaseException
            dcp.save(state, f"{folder}/c", no_dist=True)  # type: ignore[misc]
        ((error, _),) = info.value.failures.values()
        assert isinstance(error, AttributeError) and "storage_meta" in str(error)
        with pytest.raises(AttributeError):
            dcp.load_state_dict(state, f"{folder}/b", no_dist=True)  # a path as storage_reader


def _fix_applicability(source: str) -> str:
    from ckptlint.api import lint_source

    (found,) = lint_source(source, select=["CKP001"])
    assert found.fix is not None and "use_reentrant=True" not in "".join(e.content for e in found.fix.edits)
    return found.fix.applicability.value


@pytest.mark.parametrize("context", ["no_grad", "inference_mode", "set_grad_enabled(False)"])
def test_ckp001_safe_fix_where_grad_is_off_runs_the_same(context: str) -> None:
    """CKP001's fix is safe under a grad-off context: both variants run the function once
    (same calls, same values, nothing recorded), so ``use_reentrant=False`` changes nothing."""
    spelled = context if "(" in context else f"{context}()"
    source = f"import torch\n{IMPORT}with torch.{spelled}:\n    y = checkpoint(block, x)\n"
    assert _fix_applicability(source) == "safe"
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 2))
    x = x_in()
    results = {}
    for use_reentrant in (True, False):
        calls: list[int] = []
        handle = block.register_forward_hook(lambda *_, seen=calls: seen.append(1))
        torch.manual_seed(1)
        with eval(f"torch.{spelled}"):
            y = checkpoint(block, x, use_reentrant=use_reentrant)
        handle.remove()
        assert not y.requires_grad
        results[use_reentrant] = (y, len(calls))
    assert torch.equal(results[True][0], results[False][0])
    assert results[True][1] == results[False][1] == 1


@pytest.mark.parametrize("options", [{"b": 1}, {"context_fn": lambda: (torch.no_grad(), torch.no_grad())}, {"debug": True}])
def test_ckp001_safe_fix_where_the_reentrant_variant_raises(options: dict) -> None:
    """CKP001's fix is safe where the omitted (reentrant) variant raises at the call whatever
    the inputs: the code never ran there, and with ``use_reentrant=False`` it runs."""
    spelled = ", ".join(f"{k}={'make' if callable(v) else v!r}" for k, v in options.items())
    assert _fix_applicability(f"{IMPORT}y = checkpoint(fn, x, {spelled})\n") == "safe"
    with pytest.raises(ValueError):
        checkpoint(fn, x_in(), **options)
    if "context_fn" in options:
        options = {"context_fn": lambda: (contextlib.nullcontext(), contextlib.nullcontext())}
    logging.disable(logging.CRITICAL)  # debug=True logs the recorded operators
    try:
        checkpoint(fn, x_in(), use_reentrant=False, **options).sum().backward()
    finally:
        logging.disable(logging.NOTSET)


def test_ckp001_fix_stays_unsafe_where_the_variants_differ() -> None:
    """Without a grad-requiring positional input the reentrant variant leaves the parameters
    inside without gradient and the non-reentrant one does not: the fix changes behaviour."""
    assert _fix_applicability(f"{IMPORT}y = checkpoint(block, x)\n") == "unsafe"
    block = torch.nn.Linear(3, 2)
    grads = {}
    for use_reentrant in (True, False):
        block.zero_grad(set_to_none=True)
        y = checkpoint(block, torch.randn(2, 3), use_reentrant=use_reentrant)
        if y.requires_grad:  # reentrant: False, nothing to call backward on
            y.sum().backward()
        grads[use_reentrant] = block.weight.grad
    assert grads[True] is None and grads[False] is not None
