"""A subscript's top-level commas read from its row (``ckptlint.semantic.ast_subscripts``):
the row answers where it can tell and positions agree, the tokenizer otherwise."""

from __future__ import annotations

import ast

import pytest

from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_subscripts import TextCommas, comma_brackets, module_commas, subscript_elements


def _subscript(text: str) -> tuple[AstModel, ast.Subscript]:
    model = AstModel.build(ast.parse(text), "m", text=text)
    return model, next(n for n in ast.walk(model.module) if isinstance(n, ast.Subscript))


@pytest.mark.parametrize(
    ("source", "read"),
    [
        ("x[a, b]", True),
        ("x[(a), b]", True),
        ("x[((a)), b]", True),
        ("x[(a, b)]", False),
        ("x[((a), b)]", False),
        ("x[ ( a ,b)]", False),
        ("'é'[(a, b)]", False),
        ("x[a,]", None),  # one element: the comma is not looked for
        ("x[(a  # (\n), b]", None),
        ("f'{x[a, b]}'", None),  # the tokenizer may read an f-string as one string
    ],
)
def test_the_row_tells_whether_the_brackets_hold_a_comma(source: str, read: bool | None) -> None:
    model, subscript = _subscript(f"y = {source}\n")
    commas = module_commas(model)
    assert isinstance(commas, TextCommas)
    assert commas.read_from_row(subscript.slice) is read  # type: ignore[arg-type]


def test_the_tokenizer_decides_only_where_positions_disagree(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(TextCommas, "tokenized", lambda self: asked.append(self.text) or comma_brackets(self.text))
    model, subscript = _subscript("y = x[(a), b] + x[(c, d)]\n")
    assert [ast.unparse(e) for e in subscript_elements(model, subscript)] == ["a", "b"]
    assert not asked
    model, subscript = _subscript("y = x[(a), (b)]\n")
    assert [ast.unparse(e) for e in subscript_elements(model, subscript)] == ["a", "b"]
    assert asked == ["y = x[(a), (b)]\n"]
