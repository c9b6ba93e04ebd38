"""libcst's logical lines read on ``ast`` (``ckptlint.semantic.ast_lines``): which bodies
follow their colon, and which simple statements share a line, whatever the physical rows."""

from __future__ import annotations

import ast

from ckptlint.semantic.ast_lines import body_on_header, starts_logical_line, statement_lines
from ckptlint.semantic.ast_model import AstModel

TEXT = (
    "def f():\n"
    "    # a comment ending in a backslash \\\n"
    "    return 1\n"
    "class C:\n"
    "    @dec\n"
    "    def g(self): pass\n"
    "if x: pass\n"
    "else: y = 1; z = 2\n"
    "while x:\n"
    "    a = 'x;'; \\\n"
    "      b = 1\n"
    "    c = 2\n"
    "def h(a,\n"
    "      b\n"
    "): c = 1; \\\n"
    "  d = 2\n"
    "class D: \\\n"
    "    x = 1\n"
)


def _model(text: str = TEXT, *, with_text: bool = True) -> AstModel:
    return AstModel.build(ast.parse(text), "m", text=text if with_text else None)


def test_bodies_after_the_colon_on_the_headers_logical_line() -> None:
    model = _model()
    body = model.module.body
    assert [body_on_header(model, s.body) for s in body] == [False, False, True, False, True, True]
    assert body_on_header(model, body[2].orelse) and not body_on_header(model, [])


def test_statements_joined_by_a_semicolon_and_a_backslash_are_one_line() -> None:
    model = _model()
    body = model.module.body
    assert [[type(s).__name__ for s in line] for line in statement_lines(model, body[3].body)] == [["Assign", "Assign"], ["Assign"]]
    assert [len(line) for line in statement_lines(model, body[4].body)] == [2]
    assert starts_logical_line(model, body[1].body[0])  # a decorated def starts its line


def test_without_its_text_a_model_reads_physical_rows() -> None:
    model = _model(with_text=False)
    body = model.module.body
    assert [body_on_header(model, s.body) for s in body] == [False, False, True, False, False, False]
    assert [len(line) for line in statement_lines(model, body[3].body)] == [1, 1, 1]
    assert "logical_line_starts" in model.memo


def test_plain_rows_are_judged_without_the_tokenizer() -> None:
    text = "def f():\n    a = 1\n    if a: return a\n    b = 2; c = 3\n"
    model = _model(text)
    body = model.module.body[0].body  # type: ignore[attr-defined]
    assert [len(line) for line in statement_lines(model, body)] == [1, 1, 2]
    assert body_on_header(model, body[1].body)
    assert "logical_line_starts" not in model.memo


def test_rows_the_tokenizer_decides() -> None:
    # after a backslash, after a multi-line header or string, a lone carriage return
    for text, lines in [
        ("a = 1; \\\n  b = 2\nc = 3\n", [2, 1]),
        ('x = """\n"""; y = 1\nz = 2\n', [2, 1]),
        ("a = 1\rb = 2; c = 3\n", [3]),  # the tokenizer reads one row here
    ]:
        model = _model(text)
        assert [len(line) for line in statement_lines(model, model.module.body)] == lines, text
        assert "logical_line_starts" in model.memo


def test_a_row_opens_a_logical_line_after_indentation_only() -> None:
    from ckptlint.text.ast_logical_lines import ast_rows, opens_row

    rows = ast_rows("if x:\r\n\f  y = 1; z = 2 \\\r\n  + 3\r\n")
    assert rows is not None
    assert opens_row(rows, 1, 0) and opens_row(rows, 2, 3)
    assert not opens_row(rows, 2, 10)  # after ``;``
    assert not opens_row(rows, 3, 2)  # after a backslash
    assert ast_rows("a = 1\rb = 2\n") is None  # ``ast`` counts a lone CR as a line break
