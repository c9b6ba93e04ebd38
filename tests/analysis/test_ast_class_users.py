"""Five analyses on CPython's ``ast`` (ckptlint.checkpoint.analyses: ast_function_keywords,
ast_class_users, ast_frozen_norms, ast_parent_builds, ast_path_conditions), their answers
recorded while they were libcst's: for every site, the frozen BatchNorms, the parent builds,
the own, refused and reentrant-refused keywords; for every class, its users and parent
freeze; ``path_parts`` on every frame of hand-built regions and of the builder's regions.
Inputs: the rule examples, the test cases, the shared cases as recorded, the programs of the
test suite, hand-written programs and a tree (golden answers:
``__snapshots__/test_ast_class_users.ambr`` and ``__digests__/class_users_suite.json``; the
readings are ``class_user_readings.py``'s; the ``path_parts`` of the few expressions libcst
had no node for were not compared, they are recorded as ``ast`` gives them)."""

from __future__ import annotations

import functools
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from class_user_readings import class_user_answers
from goldens import case_params, check_suite, example_params, read_case, render
from test_ast_evaluator_leaves import _SUITE

from ckptlint.semantic.project import AstProject, Project, module_name_for

#: The kinds of answers.
KINDS = ("frozen", "parent builds", "own keywords", "refused", "reentrant refuses", "users", "parent freeze", "path parts")


@functools.cache
def _answers(text: str, module_name: str = "pkg.mod") -> tuple[list[tuple], Counter[str], Counter[str]]:
    """The answers for ``text`` (made once: the counts reuse them)."""
    return class_user_answers(text, module_name)


def _golden(found: list[tuple]) -> str:
    """How many answers of each kind, then those that are not empty, one line each (an empty
    answer that changes shows as a line more)."""
    kinds = Counter(answer[0] for answer in found)
    stated = [answer for answer in found if answer[-1] not in (None, [], (), False) and answer[-1] != ([], True)]
    return render([dict(sorted(kinds.items())), *stated])


@pytest.mark.parametrize(("label", "text"), example_params())
def test_rule_examples(label: str, text: str, snapshot) -> None:
    assert _golden(_answers(text)[0]) == snapshot


@pytest.mark.parametrize("path", case_params())
def test_cases(path: Path, snapshot) -> None:
    assert _golden(_answers(read_case(path), "pkg.cases." + path.stem)[0]) == snapshot


def test_programs_of_the_test_suite(request: pytest.FixtureRequest) -> None:
    """One test for them all (a few hundred small programs), every answer digested."""
    assert check_suite(request, "class_users_suite", _SUITE, lambda text: render(_answers(text)[0])) >= 100


PROGRAMS = {
    "a backbone freezes the BatchNorm of the blocks it builds": """
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        from torch.nn.modules.batchnorm import _BatchNorm
        from mmcv.cnn import ConvModule, build_norm_layer

        class Bottleneck(nn.Module):
            def __init__(self, c, norm_cfg=None, with_cp=False):
                super().__init__()
                self.conv = ConvModule(c, c, 1, norm_cfg=norm_cfg)
                self.name, self.norm = build_norm_layer(norm_cfg, c)
                self.with_cp = with_cp

            def forward(self, x):
                def _inner(x):
                    return self.norm(self.conv(x))
                if self.with_cp:
                    return checkpoint(_inner, x, use_reentrant=True, scale=2)
                return _inner(x)

        class Wide(Bottleneck):
            pass

        class ResNet(nn.Module):
            arch_settings = {50: (Bottleneck, (3, 4, 6, 3)), 101: (Wide, (3, 4, 23, 3))}

            def __init__(self, depth=50, norm_cfg=dict(type="BN", requires_grad=True), norm_eval=True, frozen=True, with_cp=False):
                super().__init__()
                self.norm_eval = norm_eval
                self.frozen = frozen
                block, stages = self.arch_settings[depth]
                self.layer1 = block(64, norm_cfg=norm_cfg, with_cp=with_cp)
                self.layers = nn.ModuleList([Wide(64, norm_cfg=norm_cfg) for _ in range(2)])

            def train(self, mode=True):
                super(ResNet, self).train(mode)
                if mode and self.norm_eval and self.frozen:
                    for m in self.modules():
                        if isinstance(m, (_BatchNorm, nn.SyncBatchNorm)):
                            m.eval()

        class ResNetV1d(ResNet):
            def __init__(self, **kwargs):
                super().__init__(norm_eval=True, **kwargs)
        """,
    "freezing written otherwise: on one line, elif, else, eval(), requires_grad_": """
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Block(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.bn = nn.BatchNorm2d(c, track_running_stats=False)

            def forward(self, x):
                return checkpoint(self.bn, x, use_reentrant=False)

        class OneLine(nn.Module):
            def __init__(self, norm_eval=True):
                self.norm_eval = norm_eval
                self.block = Block(3)

            def train(self, mode=True):
                super().train(mode)
                if mode and self.norm_eval:
                    for m in self.modules():
                        if isinstance(m, nn.BatchNorm2d): m.eval()

        class Other(nn.Module):
            def __init__(self, /, bn_eval=True, *, extra=False):
                self.bn_eval = bn_eval
                self.block = Block(3)
                self.extra = extra

            def train(self, mode=True):
                super().train(mode); x = 1
                if self.bn_eval:
                    for m in self.modules():
                        if isinstance(m, nn.BatchNorm2d):
                            m.eval()
                            m.requires_grad_(False)
                elif self.extra:
                    pass

        def make():
            return Block(4)
        """,
    "flags from a base class, set outside, kept positional-only, keyword-only": """
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        class Base(nn.Module):
            def __init__(self, norm_eval=False, *, frozen_stages=True):
                self.norm_eval = norm_eval
                self.frozen_stages = frozen_stages

            def train(self, mode=True):
                super().train(mode)
                if self.frozen_stages and mode:
                    for m in self.modules():
                        if isinstance(m, nn.modules.batchnorm._BatchNorm):
                            m.eval()

        class Child(Base):
            def __init__(self):
                super().__init__(frozen_stages=True)
                self.stage = Stage()

            def forward(self, x):
                return checkpoint(self.stage, x)

        class Stage(nn.Module):
            def forward(self, x):
                return checkpoint(lambda y: y, x, use_reentrant=True)

        class Loose(Base):
            def __init__(self, norm_eval=True):
                super().__init__(norm_eval)
                self.stage = Stage()

        model = Loose()
        model.norm_eval = False
        """,
    "who uses a class: twice defined, a keyword, a metaclass, a table": """
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        class Meta(type):
            pass

        class Block(nn.Module):
            def forward(self, x):
                return checkpoint(self.f, x, use_reentrant=False)

        try:
            class Twice(nn.Module):
                pass
        except ImportError:
            class Twice(nn.Module):
                pass

        class UsesTwice(nn.Module):
            def __init__(self):
                self.t = Twice()

        class Keyword(nn.Module, metaclass=Meta):
            def __init__(self):
                self.b = dict(Block=1)
                self.c = make(block=Block)

        class Sub(Keyword):
            pass

        class Checker(nn.Module):
            def check(self, m):
                return isinstance(m, Block) and super(Block, self)

        TABLE = {"block": Block}

        class Parametrised(nn.Module):
            def __init__(self, Block=None):
                self.b = Block
        """,
    "names that libcst spells with a node: keywords, except and match names": """
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        class Block(nn.Module):
            def forward(self, x):
                return checkpoint(self.f, x, use_reentrant=False)

        class ByKeyword(nn.Module):
            def __init__(self):
                self.c = make(Block=1)

        class Method(nn.Module):
            def Block(self):
                pass

        class Handler(nn.Module):
            def g(self):
                global Block
                try:
                    pass
                except ValueError as Block:
                    pass

        class Matcher(nn.Module):
            def g(self, x):
                match x:
                    case {"a": 1, **Block}:
                        pass
                    case Point(Block=1):
                        pass
                    case [*Block]:
                        pass
        """,
    "ways into a function: decorated, passed, named in strings and keywords": """
        import functools
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        def leaf(x):
            return x

        def guarded(x, flag=False):
            if flag:
                return leaf(x)
            return x

        @functools.lru_cache
        def decorated(x):
            if x:
                return leaf(x)

        def named(x):
            if x is not None:
                return spoken(x)

        def spoken(x):
            return x

        NAMES = ["spoken", f"{'spoken'}", "a" "spoken", b"spoken", r'spoken']

        def keyworded(x):
            if x:
                return kw(x)

        def kw(x):
            return x

        def caller():
            return dict(kw=1)

        def passes(x):
            if x:
                return mapped(x)

        def mapped(x):
            return x

        values = map(mapped, [1])

        class Layer(nn.Linear):
            def forward(self, x):
                if self.training:
                    return self.step(x)
                return super().forward(x)

            def step(self, x):
                return self.inner(x)

            def inner(self, x):
                try:
                    return leaf(x)
                except ValueError as inner:
                    return x

            def run(self, x):
                return checkpoint(self.forward, x, use_reentrant=False)

        class step:
            pass

        def lambdas(x):
            if x:
                fn = lambda y: leaf(y) if y else None
                return fn(x)
        """,
    "match, global and nonlocal names": """
        def outer(x):
            if x:
                return target(x)

        def target(x):
            global other
            match x:
                case {"a": 1, **rest}:
                    return rest
                case Point(x=1) as target:
                    return target
            return x

        def nested(x):
            y = 1
            def inner():
                nonlocal y
                if y:
                    return helper(y)
            return inner()

        def helper(y):
            return y
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    assert _golden(_answers(textwrap.dedent(PROGRAMS[name]))[0]) == snapshot


def test_the_inputs_hold_what_is_compared() -> None:
    """The examples and programs are not empty of what is recorded, nor of answers."""
    items: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    for text in [p.values[1] for p in example_params()] + _SUITE + [textwrap.dedent(p) for p in PROGRAMS.values()]:
        _, kinds, done = _answers(text)
        items.update(kinds)
        answered.update(done)
    for kind, least in {"path parts": 10000, "users": 300}.items():
        assert items[kind] >= least, kind
    least_answered = {"frozen": 4, "parent builds": 4, "own keywords": 10, "refused": 2, "users": 100, "parent freeze": 8, "path parts": 20}
    for kind in KINDS:
        assert answered[kind] >= least_answered.get(kind, 1), kind


def test_classes_used_from_other_modules(tmp_path: Path, snapshot) -> None:
    """Blocks and backbones in other modules of a tree, read through the loader: a base class
    of another module whose ``train`` freezes, a norm factory imported, a block built there."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "base.py").write_text(
        textwrap.dedent(
            """
            import torch.nn as nn
            from torch.nn.modules.batchnorm import _BatchNorm

            class BaseBackbone(nn.Module):
                def __init__(self, norm_eval=True):
                    super().__init__()
                    self.norm_eval = norm_eval

                def train(self, mode=True):
                    super().train(mode)
                    if mode and self.norm_eval:
                        for m in self.modules():
                            if isinstance(m, _BatchNorm):
                                m.eval()

            class BaseBlock(nn.Module):
                def forward(self, x):
                    return x
            """
        ),
        encoding="utf-8",
    )
    model = package / "model.py"
    model.write_text(
        textwrap.dedent(
            """
            import torch.nn as nn
            from torch.utils.checkpoint import checkpoint
            from mmcv.cnn import build_norm_layer
            from .base import BaseBackbone, BaseBlock

            class Block(BaseBlock):
                def __init__(self, c, norm_cfg=None):
                    super().__init__()
                    self.name, self.norm = build_norm_layer(norm_cfg, c)

                def forward(self, x):
                    return checkpoint(self.norm, x, use_reentrant=True, extra=1)

            class Backbone(BaseBackbone):
                def __init__(self, norm_cfg=dict(type="BN")):
                    super().__init__()
                    self.block = Block(3, norm_cfg=norm_cfg)
            """
        ),
        encoding="utf-8",
    )
    loader = AstProject(Project())
    name, is_package, home = module_name_for(model)
    loader.track(home)
    found, _, answered = class_user_answers(model.read_text(encoding="utf-8"), name, is_package, str(model), loader)
    assert _golden(found) == snapshot
    assert answered["frozen"] == 1
    assert answered["parent builds"] == 1
