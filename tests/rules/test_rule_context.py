"""What :class:`~ckptlint.rules.base.RuleContext` does for every rule: where a finding is
reported (``once``, ``code=``, a keyword at its name), the conditions it states (across
functions of a region, in a helper of another module), and fixes whose edits are built only
when read (none where libcst refuses the statement)."""

from __future__ import annotations

import ast
import copy
import json
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from ckptlint.rules import ALL_RULES, RuleContext
from ckptlint.rules import edits as rule_edits
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.project import AstProject, Project
from ckptlint.text.diagnostics import Applicability, Diagnostic, Edit, EditsNotBuilt, Fix
from ckptlint.text.source import SourceFile


def _context(text: str, code: str = "", path: str = "m.py", module: str = "m") -> tuple[RuleContext, list[Diagnostic]]:
    analysis = parse_ast(SourceFile(path, text), module)
    assert analysis is not None
    found: list[Diagnostic] = []
    ctx = RuleContext(analysis, None, found.append)
    ctx.code = code
    return ctx, found


def test_once_and_the_code_given() -> None:
    """``report(once=True)`` skips a node this rule reported; ``code=`` names another code."""
    ctx, found = _context("import torch\nx = torch.ones(1)\n", "CKP202")
    node = ctx.analysis.tree.body[1]
    assert isinstance(node, ast.Assign)
    ctx.report(node.value, "a", once=True)
    ctx.report(node.value, "b", once=True)
    ctx.report(node.value, "c", once=True, code="CKP201")
    assert [(d.code, d.message, d.start, d.end, d.noqa_row) for d in found] == [
        ("CKP202", "a", (2, 5), (2, 18), 2),
        ("CKP201", "c", (2, 5), (2, 18), 2),
    ]


def test_a_keyword_is_reported_at_its_name() -> None:
    """``ast`` has no node for a keyword's name: a report at an ``ast.keyword`` covers the name
    (``**kw`` covers the whole argument)."""
    ctx, found = _context("f(x, use_reentrent=False, **kw)\n")
    call = ctx.analysis.tree.body[0].value
    assert isinstance(call, ast.Call)
    for keyword in call.keywords:
        ctx.report(keyword, "m")
    assert [(d.start, d.end) for d in found] == [((1, 6), (1, 19)), ((1, 27), (1, 31))]


def test_a_fix_is_built_when_read_and_left_out_where_libcst_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finding's fix has its applicability and message at once and its edits only when
    read; where :mod:`ckptlint.rules.edits` finds no libcst node the edits are none and
    :meth:`~ckptlint.text.diagnostics.Fix.resolved` drops the fix (the finding stays)."""
    calls: list[object] = []

    def refuse(*args: object) -> object:
        calls.append(args)
        raise rule_edits.NoCstNode("refused")

    text = "from torch.utils import checkpoint\ny = checkpoint(f, x, use_reentrant=False)\n"
    ctx, found = _context(text, "CKP302")
    monkeypatch.setattr("ckptlint.rules.ckp302_checkpoint_module_called.replace_node", refuse)
    ALL_RULES["CKP302"]().check(ctx)
    ((d),) = found
    assert (d.code, d.start) == ("CKP302", (2, 5))
    assert d.fix is not None and d.fix.applicability is Applicability.SAFE and calls == []
    assert d.fix.resolved() is None and len(calls) == 1
    assert d.fix.edits == () and d.fix.refused and len(calls) == 1  # built once
    built = ctx.fix_from(Applicability.SAFE, "m", lambda: Edit((1, 1), (1, 1), "x"))
    assert built.resolved() is built and built.edits == (Edit((1, 1), (1, 1), "x"),)


def test_a_helper_of_another_module_states_its_own_tests(tmp_path: Path) -> None:
    """A helper imported from another module that checkpoints only under a test of its own
    (PixArt's ``auto_grad_checkpoint``): the finding at the call states that test, read in the
    helper's module."""
    package = tmp_path / "pkg"
    package.mkdir()
    files = {
        "__init__.py": "",
        "utils.py": (
            "from torch.utils.checkpoint import checkpoint\n"
            "def auto_ckpt(module, *args, **kwargs):\n"
            "    if getattr(module, 'grad_checkpointing', False):\n"
            "        return checkpoint(module, *args, **kwargs)\n"
            "    return module(*args, **kwargs)\n"
        ),
        "model.py": "from .utils import auto_ckpt\ndef forward(block, x):\n    return auto_ckpt(block, x)\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    path = package / "model.py"
    project = AstProject(Project())
    project.track(tmp_path)
    analysis = parse_ast(SourceFile(str(path), path.read_text(encoding="utf-8")), "pkg.model")
    assert analysis is not None
    found: list[Diagnostic] = []
    ctx = RuleContext(analysis, project, found.append)
    ctx.code = "CKP001"
    ALL_RULES["CKP001"]().check(ctx)
    assert [d.message.split("; ")[-1] for d in found] == [
        "this code runs only when `getattr(module, 'grad_checkpointing', False)` (inside `auto_ckpt()`)"
    ]


def _lazy_fix(calls: list[int]) -> Fix:
    def build() -> tuple[Edit, ...]:
        calls.append(1)
        return (Edit((1, 1), (1, 2), "y"),)

    return Fix(Applicability.SAFE, "m", build)


@pytest.mark.parametrize("wanted", [False, True], ids=["plain run", "edits shown"])
def test_a_fix_crosses_a_pipe_and_the_cache_with_its_edits_only_when_the_run_wants_them(
    monkeypatch: pytest.MonkeyPatch, wanted: bool
) -> None:
    monkeypatch.setattr("ckptlint.text.diagnostics._EDITS_WANTED", [wanted])
    calls: list[int] = []
    fix = _lazy_fix(calls)
    sent = pickle.loads(pickle.dumps(fix))
    stored = Fix.from_dict(json.loads(json.dumps(fix.to_dict())))
    assert (sent.applicability, sent.message, stored.message) == (Applicability.SAFE, "m", "m")
    assert sent.built is stored.built is wanted and len(calls) == int(wanted)
    if wanted:
        assert sent.edits == stored.edits == (Edit((1, 1), (1, 2), "y"),)
    else:
        with pytest.raises(EditsNotBuilt):
            sent.edits  # noqa: B018
        assert fix.edits == (Edit((1, 1), (1, 2), "y"),)  # in this process, built when read
    assert copy.deepcopy(fix) is fix


def test_moving_a_fix_keeps_it_unbuilt() -> None:
    calls: list[int] = []
    fix = replace(_lazy_fix(calls), fallback=_lazy_fix(calls))
    moved = fix.moved(lambda e: Edit((e.start[0] + 1, e.start[1]), (e.end[0] + 1, e.end[1]), e.content))
    assert calls == [] and moved.built
    assert moved.edits == (Edit((2, 1), (2, 2), "y"),) and moved.fallback is not None
    assert moved.fallback.edits == (Edit((2, 1), (2, 2), "y"),) and len(calls) == 2
    refused = Fix(Applicability.SAFE, "m", lambda: None)
    assert refused.moved(lambda e: e).resolved() is None
