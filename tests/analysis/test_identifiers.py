"""The quick test of whether a text may name an identifier (``ckptlint.text.identifiers``),
which lets analyses skip walking modules that cannot name what they look for."""

from __future__ import annotations

import ast

from ckptlint.text.identifiers import may_name


def test_a_text_names_what_it_spells() -> None:
    assert may_name("x.register_hook(h)\n", ("register_hook",))
    assert may_name("y = ConvModule(1, 2, 3)\n", ("build_norm_layer", "ConvModule"))
    assert not may_name("x.register_forward_hook(h)\n", ("register_hook",))
    assert not may_name("s = 'é'\n", ("register_hook",))
    assert may_name(None, ("register_hook",))


def test_an_identifier_is_read_normalised() -> None:
    text = "x.\uff52egister_hook(h)\n"  # a fullwidth r: ``ast`` reads ``register_hook``
    assert ast.parse(text).body[0].value.func.attr == "register_hook"  # type: ignore[attr-defined]
    assert may_name(text, ("register_hook",))
