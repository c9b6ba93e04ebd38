"""The conditions findings state, read on CPython's ``ast`` (ckptlint.checkpoint.sites.ast_guards,
ast_switch_defaults, ast_callers, ast_helper_bindings), recorded while they were libcst's
(guards, switch_defaults, callers, helper_sites): for every site (direct and helper calls), its
``site_condition`` and the condition a finding states (``helper_parts`` joined), for every
call of the module and every statement inside a function, ``node_condition`` and the
condition with the parameters given; on the rule examples, the test cases, the shared cases as
recorded, the programs of the condition tests and hand-written programs (if/else, early
exits, loops, ``except`` handlers, guarded ``def``\\ s, callers, helpers with flags,
constructor switches, inherited switches, argparse flags, config fields, in the module and in
other modules of a tree). Golden answers: ``__snapshots__/test_ast_conditions.ambr`` and
``__digests__/conditions_test_programs.json``."""

from __future__ import annotations

import ast
import functools
import sys
import textwrap
from pathlib import Path

import pytest
from goldens import case_params, check_suite, example_params, parses, read_case, render

from ckptlint.checkpoint.sites import ast_guards
from ckptlint.checkpoint.sites.ast_guards import node_condition, site_condition
from ckptlint.checkpoint.sites.ast_helper_sites import helper_sites
from ckptlint.checkpoint.sites.ast_sites import direct_sites
from ckptlint.semantic.ast_analysis import AstAnalysis, parse_ast
from ckptlint.semantic.project import AstProject, Project
from ckptlint.text.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]


def _undecorated(node: ast.AST) -> bool:
    return not getattr(node, "decorator_list", None)


def _readings(analysis: AstAnalysis, kind: str, one: object) -> tuple[str, str]:
    """For a site, ``site_condition`` and the condition a finding states (``condition_parts``
    joined with ``helper_parts``); for another node, ``node_condition`` and the condition with
    the function's parameters given by its caller."""
    if kind == "site":
        stated = ast_guards.joined(ast_guards.condition_parts(analysis, one.call), ast_guards.helper_parts(analysis, one))  # type: ignore[attr-defined]
        return ast_guards.site_condition(analysis, one), ast_guards.format_condition(stated)  # type: ignore[arg-type]
    given = ast_guards.condition_parts(analysis, one, parameters_given=True)  # type: ignore[arg-type]
    return ast_guards.node_condition(analysis, one), ast_guards.format_condition(given)  # type: ignore[arg-type]


def _answers_of(analysis: AstAnalysis) -> list[tuple]:
    """``(kind, where, readings)`` of every site (by its call's range), every call and every
    undecorated statement inside a function (by where it starts), in that order."""
    found = direct_sites(analysis.model)
    sites = {analysis.range(site.call): site for site in [*found, *helper_sites(analysis.model, found).sites]}
    calls = {analysis.range(n): n for n in ast.walk(analysis.tree) if isinstance(n, ast.Call)}
    statements = {
        analysis.start(n): n
        for n in ast.walk(analysis.tree)
        if isinstance(n, ast.stmt) and _undecorated(n) and analysis.model.enclosing(n, ast.FunctionDef, ast.AsyncFunctionDef)
    }
    items = [("site", key[0], sites[key]) for key in sorted(sites)]
    items += [("call", key[0], calls[key]) for key in sorted(calls)]
    items += [("statement", key, statements[key]) for key in sorted(statements)]
    return [(kind, where, _readings(analysis, kind, one)) for kind, where, one in items]


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> list[tuple]:
    analysis = parse_ast(SourceFile("<compared>", text), module_name)
    assert analysis is not None
    found = _answers_of(analysis)
    analysis.release()
    return found


def _golden(text: str, module_name: str = "pkg.mod") -> str:
    """The readings that state a condition, one line each (a node stating none is left out)."""
    return render([item for item in _answers(text, module_name) if item[2] != ("", "")])


def _counts(text: str) -> tuple[int, int]:
    """Sites and readings that state a condition."""
    found = _answers(text)
    return sum(kind == "site" for kind, _, _ in found), sum(bool(readings[0]) for _, _, readings in found)


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(text) == snapshot


def test_rule_examples_hold_conditions() -> None:
    found = [_counts(p.values[1]) for p in example_params()]
    assert sum(sites for sites, _ in found) >= 100
    assert sum(stated for _, stated in found) >= 5


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(read_case(path), "pkg.cases." + path.stem) == snapshot


_LIBCST_TESTS = (
    "rules/test_conditions.py",
    "rules/test_condition_sources.py",
    "rules/test_callers_namesakes.py",
    "rules/test_path_conditions.py",
    "analysis/test_helper_sites.py",
)


def _libcst_condition_tests_programs() -> list[str]:
    """The programs of the condition tests (once libcst's): every string of them that defines a
    function, dedented, when it parses (a test module gone gives none)."""
    texts: list[str] = []
    for name in _LIBCST_TESTS:
        if not (ROOT / "tests" / name).is_file():
            continue
        tree = ast.parse((ROOT / "tests" / name).read_text(encoding="utf-8"))
        texts += [
            textwrap.dedent(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value
        ]
    return [text for text in dict.fromkeys(texts) if parses(text)]


_PROGRAMS_OF_TESTS = _libcst_condition_tests_programs()


def test_programs_of_the_libcst_condition_tests(request: pytest.FixtureRequest) -> None:
    check_suite(request, "conditions_test_programs", _PROGRAMS_OF_TESTS, _golden)
    assert len(_PROGRAMS_OF_TESTS) >= 35
    assert sum(_counts(text)[1] for text in _PROGRAMS_OF_TESTS) >= 100


PROGRAMS = {
    "branches, exits, loops and handlers": """
        import torch.utils.checkpoint as cp
        from torch.utils.checkpoint import checkpoint

        def run(block, x, use_cp=False, keep=None, *, fast=True):
            if not use_cp:
                return block(x)
            if x is None: return x
            if keep:
                y = 1
            elif fast and (x.dim() > 2 or x.is_cuda):
                y = checkpoint(block, x)
            else:
                y = cp.checkpoint(block, x) if x.requires_grad else block(x)
            for i in range(3):
                if i == 0:
                    continue
                y = checkpoint(block, y)
                while y.sum() > 0:
                    if y.mean() < 0: break
                    y = checkpoint(block, y)
            try:
                import apex
            except (ImportError, ModuleNotFoundError):
                y = checkpoint(block, y)
            try: a = 1; b = 2
            except ValueError: y = checkpoint(block, y)
            try:
                a = 1; b = 2
            except: y = checkpoint(block, y)
            try:
                a = 1
                b = 2
            except Exception as error:
                y = checkpoint(block, y)
            if not (keep and fast):
                y = checkpoint(block, y)
            if (use_cp or keep) and not fast:
                y = checkpoint(block, y)
            return y
    """,
    "a very long test is cut": """
        from torch.utils.checkpoint import checkpoint
        def f(block, x):
            if block.some_rather_long_attribute_name and block.another_rather_long_attribute_name(x, x, x, x, x) > 0:
                return checkpoint(block, x)
    """,
    "guarded defs and loops that rebind": """
        import torch
        from torch.utils.checkpoint import checkpoint

        class Net(torch.nn.Module):
            def __init__(self, gradient_checkpointing=False):
                self.gradient_checkpointing = gradient_checkpointing

            def forward(self, x):
                if torch.is_grad_enabled() and self.gradient_checkpointing:
                    def layer_(x):
                        return checkpoint(self.block, x)
                    x = layer_(x)
                for i in range(2):
                    if i == 0:
                        def first(y):
                            return checkpoint(self.block, y)
                    x = first(x)
                for self.k in range(2):
                    if self.k:
                        def second(y):
                            return checkpoint(self.block, y)
                return x
    """,
    "callers one call up": """
        import torch.nn as nn
        import torch.utils.checkpoint as cp

        class Dense(nn.Module):
            def __init__(self, memory_efficient=False):
                self.memory_efficient = memory_efficient

            def call_checkpoint_bottleneck(self, x):
                return cp.checkpoint(self.f, x)

            def _twice(self, x):
                return self.call_checkpoint_bottleneck(x)

            def forward(self, x):
                if self.memory_efficient and x.requires_grad:
                    x = self._twice(x)
                if self.memory_efficient:
                    x = self._twice(x)
                return x

        class Other(nn.Module):
            def _twice(self, x):
                return x

        def _private(block, x):
            return cp.checkpoint(block, x)

        def _in_dicts(block, x):
            return cp.checkpoint(block, x)

        def dicts(block, x, a, b):  # libcst's walk meets the first value before the second key
            return {1: _in_dicts(block, x) if a and b else 0, _in_dicts(block, x) if b and a else 0: 2}

        def public(block, x, flag=False):
            if flag:
                return _private(block, x)
            def inner(y):
                return cp.checkpoint(block, y)
            if x.is_cuda:
                return inner(x)
            return x
    """,
    "switches of a class": """
        import argparse
        from dataclasses import dataclass, field
        from typing import Optional
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        parser = argparse.ArgumentParser()
        parser.add_argument("--use-checkpoint", action="store_true")
        parser.add_argument("--no-cp", dest="cp", action="store_false")
        parser.add_argument("--mode", default="fast")
        parser.add_argument("--level", default=-1)
        parser.add_argument("--twice", default=1)
        parser.add_argument("--twice", default=2)
        parser.add_argument("--later", default=False)
        parser.set_defaults(later=True)
        parser.add_argument("--joined", default="a" "b")
        args = parser.parse_args()

        @dataclass
        class Config:
            gradient_checkpointing: bool = False
            ratio: float = field(default=0.0)
            name: str = "x"

        class Derived(Config):
            extra: int = 0

        class Block(nn.Module):
            def __init__(self, with_cp=False, mode="a", config: Optional[Config] = None, opts=None):
                self.with_cp = with_cp
                self.mode = mode
                self.config = config
                self.opts = opts
                self.grad_checkpointing = False
                self.later = False
                self.made = Derived()

            def set_grad_checkpointing(self, enable=True):
                self.grad_checkpointing = enable

            def forward(self, x, args=None, cfg: Config | None = None, depth=0):
                if self.with_cp and self.mode == "b":
                    x = checkpoint(self.f, x)
                if self.grad_checkpointing:
                    x = checkpoint(self.f, x)
                if self.config.gradient_checkpointing and self.config.ratio > 0:
                    x = checkpoint(self.f, x)
                if cfg.name != "y" and self.made.extra and self.made.gradient_checkpointing:
                    x = checkpoint(self.f, x)
                if self.opts.use_checkpoint and depth > 1:
                    x = checkpoint(self.f, x)
                return x

        def main(opt):
            local = parser.parse_args()
            if args.use_checkpoint and not args.cp and args.mode == "slow" and args.level < 0:
                checkpoint(f, 1)
            if args.twice and args.later and args.joined:
                checkpoint(f, 1)
            if local.use_checkpoint or opt.use_checkpoint:
                checkpoint(f, 1)
            config = Config()
            if config.gradient_checkpointing:
                checkpoint(f, 1)
    """,
    "inherited switches": """
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        class Base(nn.Module):
            def __init__(self, dim, with_cp=False, *, use_ckpt=True):
                self.with_cp = with_cp
                self.use_ckpt = use_ckpt

        class Plain(Base):
            def forward(self, x):
                if self.with_cp and self.use_ckpt:
                    return checkpoint(self.f, x)

        class Passes(Base):
            def __init__(self, dim, **kwargs):
                super().__init__(dim, **kwargs)

            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)

        class Chooses(Base):
            def __init__(self, dim, **kwargs):
                kwargs.setdefault("with_cp", True)
                super().__init__(dim, **kwargs)

            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)

        class Positional(Base):
            def __init__(self, dim):
                super().__init__(dim, True)

            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)

        class MentionsInText(Base):
            def __init__(self, dim, **kwargs):
                print(f"{dim:>{4}} with_cp")
                super().__init__(dim, **kwargs)

            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)

        class MentionsInString(Base):
            def __init__(self, dim, **kwargs):
                print("with_cp" f"{dim}")
                super().__init__(dim, **kwargs)

            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)

        class Deeper(Plain):
            def forward(self, x):
                if self.with_cp: return checkpoint(self.f, x)

        class OneLine: with_cp = False
    """,
    "helpers with flags": """
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        def auto_grad_checkpoint(module, *args, use_cp=False, **kwargs):
            if getattr(module, "grad_checkpointing", False) and use_cp:
                return checkpoint(module, *args, **kwargs)
            return module(*args, **kwargs)

        def flipped(block, x, use_cp=False):
            use_cp = not use_cp
            if use_cp:
                return checkpoint(block, x)

        def recursive(block, x, use_cp=False):
            if use_cp:
                return checkpoint(block, x)
            return recursive(block, x, True)

        class Net(nn.Module):
            def __init__(self, with_cp=False):
                self.with_cp = with_cp

            def forward(self, x, flag=None):
                x = auto_grad_checkpoint(self.block, x, use_cp=self.with_cp)
                x = auto_grad_checkpoint(self.block, x, use_cp=True)
                x = auto_grad_checkpoint(self.block, x, use_cp=x.requires_grad)
                x = auto_grad_checkpoint(self.block, x, **flag)
                x = flipped(self.block, x, self.with_cp)
                x = recursive(self.block, x, self.with_cp)
                if self.training:
                    x = auto_grad_checkpoint(self.block, x, use_cp=flag)
                return x
    """,
    "corners": """
        import sys
        import torch.nn as nn
        from dataclasses import dataclass
        from torch.utils.checkpoint import checkpoint

        @dataclass
        class Flat: use_cp: bool = False

        class Net(nn.Module):
            def __init__(self, with_cp=False, /, fast=False, *, deep: "bool" = None):
                self.with_cp = with_cp
                self.fast = fast
                self.deep = deep
                self.cfg = Flat()
                if fast: self.extra = True
            def __init_subclass__(cls): pass

            async def forward(self, x, y=None, /, z=False):
                if self.with_cp and self.fast and self.deep:
                    x = checkpoint(self.f, x)
                if y and z:
                    x = checkpoint(self.f, x)
                if self.cfg.use_cp:
                    x = checkpoint(self.f, x)
                match x:
                    case 1:
                        if self.fast: return x
                        x = checkpoint(self.f, x)
                    case _ if z:
                        x = checkpoint(self.f, x)
                with open("f") as z:
                    if not z: return
                    x = checkpoint(self.f, x)
                f = lambda q: checkpoint(self.f, q) if q else q
                async for i in x:
                    if i:
                        def g(v, flag=False):
                            if flag:
                                return checkpoint(self.f, v)
                        x = g(x)
                    setattr(self, "fast", 1)
                else:
                    x = checkpoint(self.f, x)
                if sys.version_info >= (3, 8):
                    x = checkpoint(self.f, x)
                return x

            @property
            def _dec(self):
                return checkpoint(self.f, 1)

            def use(self):
                if self.fast:
                    return self._dec

        def _outer(block, x, flag=False):
            def _inner(v):
                return checkpoint(block, v)
            if flag:
                return _inner(x)
            return _inner(x) if x else None
    """,
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_programs(name: str, snapshot) -> None:
    text = textwrap.dedent(PROGRAMS[name])
    assert _golden(text) == snapshot
    assert _counts(text)[1] > 0


#: Layouts where libcst reads logical lines and raw string tokens (``ast``: physical rows and
#: evaluated strings): a ``try`` body joined by ``;`` and a backslash, a class body after a
#: backslash, a parameter's name spelled in parts or through an escape in ``__init__``.
LAYOUTS = {
    "a try body joined by a semicolon and a backslash": r"""
        from torch.utils.checkpoint import checkpoint
        def run(f, x):
            try:
                a(); \
                b()
            except ValueError:
                return checkpoint(f, x)
    """,
    "a class body after a backslash": r"""
        from torch.utils.checkpoint import checkpoint
        class Cfg: \
            use_checkpoint = False
        class B:
            def __init__(self, config: Cfg):
                self.config = config
            def forward(self, x):
                if self.config.use_checkpoint:
                    return checkpoint(self.f, x)
    """,
    "a switch's name in a concatenated string of a **kwargs __init__": r"""
        from torch.utils.checkpoint import checkpoint
        class Base:
            def __init__(self, with_cp=False):
                self.with_cp = with_cp
        class Child(Base):
            def __init__(self, **kwargs):
                print("with_" "cp")
                super().__init__(**kwargs)
            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)
    """,
    "a switch's name through an escape in a **kwargs __init__": r"""
        from torch.utils.checkpoint import checkpoint
        class Base:
            def __init__(self, with_cp=False):
                self.with_cp = with_cp
        class Child(Base):
            def __init__(self, **kwargs):
                print("with\x5fcp", b"with\x5fcp")
                super().__init__(**kwargs)
            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)
    """,
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_logical_lines_and_string_tokens(name: str, snapshot) -> None:
    text = textwrap.dedent(LAYOUTS[name])
    assert _golden(text) == snapshot
    assert _counts(text)[1] > 0


def test_an_nfkc_identifier(snapshot) -> None:
    """``ast`` normalises identifiers as Python does (PEP 3131; libcst kept the spelling)."""
    text = """
        from torch.utils.checkpoint import checkpoint
        class B:
            def __init__(self, W_cp=False):
                self.W_cp = with_cp
            def forward(self, x):
                if self.with_cp:
                    return checkpoint(self.f, x)
    """  # the spelling put in below: the suite's programs (test_ast_evaluator_leaves) skip it
    assert _golden(textwrap.dedent(text).replace("W_cp", "\uff57ith_cp")) == snapshot


_TEXT_CORNERS = """
from torch.utils.checkpoint import checkpoint
class N:
    def __init__(self, with_cp=False, \u00f1ame="\u00e9"):
        self.with_cp = with_cp
        self.\u00f1ame = \u00f1ame
    def forward(self, x):
        if (self.with_cp) and (x  # \u00e7a
                and x.y):
            return checkpoint(self.f, x)
        if self.\u00f1ame == "\u00fc" and 0 < x < 1:
            return checkpoint(self.f, x)
        if (y := self.g(x)) and not (self.with_cp or x):
            return checkpoint(self.f, x)
        else:
            if x: return checkpoint(self.f, x)
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_texts_with_comments_parentheses_and_other_alphabets(newline: str, snapshot) -> None:
    text = _TEXT_CORNERS.replace("\n", newline)
    assert _golden(text) == snapshot
    sites, stated = _counts(text)
    assert sites == 4 and stated >= 10


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* is Python 3.11 syntax")
def test_an_except_star_handler_is_no_condition(snapshot) -> None:
    """An ``except*`` handler (another node in libcst) does not state its ``try`` block."""
    text = textwrap.dedent(
            """
            from torch.utils.checkpoint import checkpoint
            def f(block, x):
                try:
                    x = 1
                except* ValueError:
                    if x:
                        x = checkpoint(block, x)
            """
    )
    assert _golden(text) == snapshot
    sites, stated = _counts(text)
    assert sites == 1 and stated >= 1


def _conditions(text: str, module_name: str = "pkg.mod") -> dict[int, str]:
    analysis = parse_ast(SourceFile("m.py", textwrap.dedent(text)), module_name)
    assert analysis is not None
    sites = direct_sites(analysis.model)
    return {analysis.start(s.call)[0]: site_condition(analysis, s) for s in [*sites, *helper_sites(analysis.model, sites).sites]}


def test_what_the_conditions_say() -> None:
    """A few texts spelled out (the golden answers record the rest)."""
    found = _conditions(PROGRAMS["switches of a class"])
    assert found[44] == (
        "; this code runs only when `self.with_cp` is true (it defaults to `False`) and "
        '`self.mode == "b"` (`self.mode` defaults to `"a"`)'
    )
    assert found[46].endswith("(it defaults to `False`; set by `set_grad_checkpointing()`)")
    assert found[58] == (
        "; this code runs only when `args.use_checkpoint` is true (it defaults to `False`) and "
        '`args.mode == "slow"` (`args.mode` defaults to `"fast"`) and `args.level < 0` (`args.level` '
        "defaults to `-1`) and `not args.cp`"
    )
    assert found[60] == "; this code runs only when `args.twice` and `args.later` and `args.joined`"  # no one default
    handlers = _conditions(PROGRAMS["branches, exits, loops and handlers"])
    assert handlers[25].endswith("and `import apex` raises `ImportError` or `ModuleNotFoundError`")
    assert handlers[27].endswith("and the `try` block at line 26 raises `ValueError`")  # `try: a; b`: two statements
    assert handlers[30].endswith("and `a = 1; b = 2` raises an exception")  # one statement line
    assert handlers[21] == (
        "; this code runs only when `use_cp` is true (it defaults to `False`) and `not (x is None)` and "
        "`not (i == 0)` and `not (y.mean() < 0)`"
    )


_TREE = {
    "pkg/__init__.py": "",
    "pkg/base.py": """
        import torch.nn as nn

        class Base(nn.Module):
            def __init__(self, dim, with_cp=False):
                self.with_cp = with_cp
    """,
    "pkg/config.py": """
        from dataclasses import dataclass

        @dataclass
        class ModelConfig:
            use_checkpoint: bool = False
            depth: int = 0
    """,
    "pkg/reexport.py": "from .config import ModelConfig as Renamed\n",
    "pkg/model.py": """
        from torch.utils.checkpoint import checkpoint
        from .base import Base
        from .config import ModelConfig
        from .reexport import Renamed

        class Block(Base):
            def __init__(self, config: ModelConfig, other: Renamed, **kwargs):
                super().__init__(**kwargs)
                self.config = config
                self.other = other

            def forward(self, x):
                if self.with_cp and self.config.use_checkpoint and self.other.depth > 1:
                    return checkpoint(self.f, x)
                return x
    """,
}


def test_switches_of_other_modules_of_the_tree(tmp_path: Path, snapshot) -> None:
    for name, text in _TREE.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    project = Project([tmp_path])
    project.track(tmp_path)  # record the files read
    loader = AstProject(project)
    text = (tmp_path / "pkg" / "model.py").read_text(encoding="utf-8")
    analysis = loader.ast_analysis_for_module("pkg.model")
    assert analysis is not None
    found = _answers_of(analysis)
    assert render([item for item in found if item[2] != ("", "")]) == snapshot
    assert sum(kind == "site" for kind, _, _ in found) == 1
    (site,) = direct_sites(analysis.model)
    assert site_condition(analysis, site) == (
        "; this code runs only when `self.with_cp` is true (it defaults to `False`) and `self.config.use_checkpoint`"
        " is true (it defaults to `False`) and `self.other.depth > 1` (`self.other.depth` defaults to `0`)"
    )
    read = {p.relative_to(tmp_path).as_posix() for p in project.accessed()}
    assert {"pkg/base.py", "pkg/config.py"} <= read
    alone = parse_ast(SourceFile("m.py", text), "pkg.model")  # no tree around it: no default known
    assert alone is not None
    (site,) = direct_sites(alone.model)
    assert node_condition(alone, site.call) == (
        "; this code runs only when `self.with_cp` and `self.config.use_checkpoint` and `self.other.depth > 1`"
    )
