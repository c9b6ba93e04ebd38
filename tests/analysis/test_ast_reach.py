"""Sites found by following the linted tree on CPython's ``ast`` (ckptlint.checkpoint.sites.ast_reach,
``module_sites``), recorded while they were libcst's (``site_index`` with a :class:`Project`)
field by field with the files each side recorded as read; policy sites carry the classes they
select; the gradient hooks that re-run the model (``ast_hook_recompute``). Golden answers:
``__snapshots__/test_ast_reach.ambr`` and ``__digests__/reach_ckp105_hooks.json``."""

from __future__ import annotations

import ast
import functools
import textwrap
from pathlib import Path

import pytest
from goldens import check_suite, parses, render
from site_readings import sites_in_tree, sites_of_text

from ckptlint.checkpoint.sites.ast_hook_recompute import hook_recomputes
from ckptlint.checkpoint.sites.ast_sites import direct_sites, module_sites
from ckptlint.facts.apis import ApiKind
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.project import AstProject, Project, module_name_for
from ckptlint.text.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]


def _write(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        paths.append(path)
    return paths


def _tree_answers(root: Path, files: dict[str, str]) -> dict[str, dict]:
    """Every file of the tree read in turn, one loader for the whole tree (as a run)."""
    return sites_in_tree(root, _write(root, files), AstProject(Project()))


def _golden(found: dict[str, dict]) -> str:
    return "\n".join(f"{name}:\n{render(answers)}" for name, answers in found.items())


MODEL = "def forward(block, x):\n    return checkpoint(block, x)\n"

TREES = {
    "re-export": {
        "pkg/__init__.py": "",
        "pkg/utils.py": "from torch.utils.checkpoint import checkpoint\n",
        "pkg/model.py": "from .utils import checkpoint\n\n" + MODEL,
    },
    "alias": {
        "pkg/__init__.py": "",
        "pkg/utils.py": "import torch.utils.checkpoint as cp\n\nckpt = cp.checkpoint\n",
        "pkg/model.py": "from .utils import ckpt as checkpoint\n\n" + MODEL,
    },
    "star": {
        "pkg/__init__.py": "",
        "pkg/utils.py": "from torch.utils.checkpoint import checkpoint\n",
        "pkg/model.py": "from .utils import *\n\n" + MODEL,
    },
    "module attribute": {
        "pkg/__init__.py": "",
        "pkg/utils.py": "from torch.utils.checkpoint import checkpoint\n",
        "pkg/model.py": "from . import utils\ncheckpoint = utils.checkpoint\n\n" + MODEL,
    },
    "attribute call and two hops": {
        "pkg/__init__.py": "",
        "pkg/base.py": "import torch.utils.checkpoint as cp\n\nckpt = cp.checkpoint\n",
        "pkg/utils.py": "from .base import ckpt as checkpoint_fn\n",
        "pkg/model.py": """\
            from . import utils
            from .utils import checkpoint_fn


            def forward(block, x):
                y = utils.checkpoint_fn(block, x, use_reentrant=False)
                return checkpoint_fn(block, y)
        """,
    },
    "an apply through the tree": {
        "pkg/__init__.py": "",
        "pkg/impl.py": "from torch.utils.checkpoint import CheckpointFunction\n",
        "pkg/model.py": """\
            from .impl import CheckpointFunction


            def forward(block, x):
                return CheckpointFunction.apply(block, True, x)
        """,
    },
    "training arguments in another module": {
        "pkg/__init__.py": "",
        "pkg/args.py": "from transformers import TrainingArguments\n\n\nclass ProjectArguments(TrainingArguments):\n    pass\n",
        "pkg/train.py": "from .args import ProjectArguments\n\nargs = ProjectArguments(output_dir='o', gradient_checkpointing=True)\n",
    },
    "training arguments through a re-export and two bases": {
        "pkg/__init__.py": "",
        "pkg/base.py": "from trl import SFTConfig\n\n\nclass BaseConfig(SFTConfig):\n    pass\n",
        "pkg/configs.py": "from .base import BaseConfig\n\n\nclass RunConfig(BaseConfig):\n    rank: int = 8\n",
        "pkg/more.py": "from .configs import RunConfig as RunArgs\n",
        "pkg/train.py": """\
            from .more import RunArgs
            from .configs import RunConfig


            class Local(RunConfig):
                pass


            a = RunArgs(output_dir='o')
            b = Local(output_dir='o', gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False})
            c = RunConfig("o")
        """,
    },
    "namespace package": {
        "repo/ldm/ext/__init__.py": "",
        "repo/ldm/ext/te.py": "import transformer_engine.pytorch as te\n\nte_ckpt = te.checkpoint\n",
        "repo/ldm/models/__init__.py": "",
        "repo/ldm/models/block.py": "from ldm.ext.te import te_ckpt\n\n\ndef run(block, x):\n    return te_ckpt(block, x)\n",
    },
    "home-made across files (left to another brick)": {
        "pkg/__init__.py": "",
        "pkg/nn.py": """\
            import torch


            class CheckpointFunction(torch.autograd.Function):
                @staticmethod
                def forward(ctx, run_function, length, *args):
                    ctx.run_function = run_function
                    ctx.input_tensors = list(args[:length])
                    with torch.no_grad():
                        return ctx.run_function(*ctx.input_tensors)

                @staticmethod
                def backward(ctx, *grads):
                    with torch.enable_grad():
                        out = ctx.run_function(*ctx.input_tensors)
                    return (None, None) + torch.autograd.grad(out, ctx.input_tensors, grads)


            def checkpoint(func, inputs, params, flag):
                return CheckpointFunction.apply(func, len(inputs), *inputs)
        """,
        "pkg/unet.py": "from .nn import checkpoint\n\n\ndef run(f, x, p):\n    return checkpoint(f, (x,), p, True)\n",
    },
    "policies with classes of other modules": {
        "pkg/__init__.py": "",
        "pkg/layers.py": "from torch import nn\n\n\nclass Block(nn.Module):\n    pass\n",
        "pkg/wrap.py": """\
            import functools

            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
            from torch.distributed.fsdp.wrap import ModuleWrapPolicy, lambda_auto_wrap_policy

            from . import layers
            from .layers import Block


            def enable(model):
                apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, (Block, layers.Block)))
                apply_activation_checkpointing(model, auto_wrap_policy=ModuleWrapPolicy({Block}))
                policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: type(m) in {layers.Block})
                apply_activation_checkpointing(model, auto_wrap_policy=policy)
        """,
    },
    "names that lead nowhere": {
        "pkg/__init__.py": "from .missing import *\n",
        "pkg/cfg.py": "class TrainConfig:\n    pass\n",
        "pkg/run.py": """\
            from .cfg import TrainConfig
            from .nowhere import my_checkpoint
            from torch_ext import recompute_fn


            def run(block, x):
                TrainConfig()
                my_checkpoint(block, x)
                recompute_fn(block, x)
                return apply(block)
        """,
    },
}


@pytest.mark.parametrize("name", TREES)
def test_trees(tmp_path: Path, name: str, snapshot) -> None:
    found = _tree_answers(tmp_path, TREES[name])
    assert _golden(found) == snapshot
    reads = sum(len(answers["reads"]) for answers in found.values())
    assert reads > 0 or name.startswith("policies")  # classes of a policy are not followed here


def _in_package(text: str) -> dict[str, str]:
    return {"pkg/__init__.py": "", "pkg/mod.py": textwrap.dedent(text)}


#: Layouts where libcst's logical line is not ``ast``'s physical row: a rebinding joined by
#: ``;`` and a backslash, a policy predicate's body after its colon.
LAYOUT_TREES = {
    "a keyword dict rebound on a line joined by a backslash": _in_package(r"""
        from torch.utils.checkpoint import checkpoint
        def run(f, x):
            kw = {"use_reentrant": True}; \
            kw = {"use_reentrant": False}
            return checkpoint(f, x, **kw)
    """),
    "a predicate's body after a parenthesis on its own line": _in_package(r"""
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
        class Block:
            pass
        def pred(m
        ): return isinstance(m, Block)
        def enable(model):
            apply_activation_checkpointing(model, check_fn=pred)
    """),
    "a predicate's body after a backslash": _in_package(r"""
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
        class Block:
            pass
        def pred(m): \
            return isinstance(m, Block)
        def enable(model):
            apply_activation_checkpointing(model, check_fn=pred)
    """),
}


@pytest.mark.parametrize("name", LAYOUT_TREES)
def test_logical_line_layouts(tmp_path: Path, name: str, snapshot) -> None:
    assert _golden(_tree_answers(tmp_path, LAYOUT_TREES[name])) == snapshot


def test_an_nfkc_identifier(tmp_path: Path, snapshot) -> None:
    """``ast`` normalises identifiers as Python does (PEP 3131): the keyword is
    ``use_reentrant`` (libcst kept the spelling, the one difference known then)."""
    text = "from torch.utils.checkpoint import checkpoint\ndef run(f, x):\n    return checkpoint(f, x, use_\uff52eentrant=False)\n"
    assert _golden(_tree_answers(tmp_path, _in_package(text))) == snapshot


def test_the_trees_hold_sites_found_through_the_tree(tmp_path: Path) -> None:
    found = {name: _tree_answers(tmp_path / str(i), files) for i, (name, files) in enumerate(TREES.items())}
    reached = {name: sum(a["reached"] for a in answers.values()) for name, answers in found.items()}
    assert reached == {
        "re-export": 1,
        "alias": 1,
        "star": 1,
        "module attribute": 1,
        "attribute call and two hops": 2,
        "an apply through the tree": 1,
        "training arguments in another module": 1,
        "training arguments through a re-export and two bases": 3,
        "namespace package": 1,
        "home-made across files (left to another brick)": 0,  # libcst: home-made, not compared
        "policies with classes of other modules": 0,
        "names that lead nowhere": 0,
    }
    assert sum(a["policy regions"] for a in found["policies with classes of other modules"].values()) == 3


def _analysis(root: Path, relative: str, loader: AstProject):
    path = root / relative
    name, is_package, _ = module_name_for(path)
    analysis = parse_ast(SourceFile(str(path), path.read_text(encoding="utf-8")), name, is_package)
    assert analysis is not None
    analysis.project = loader
    return analysis


def test_reads_are_recorded_and_the_module_alone_finds_none_of_them(tmp_path: Path) -> None:
    _write(tmp_path, TREES["training arguments through a re-export and two bases"])
    project = Project()
    project.track(tmp_path)
    loader = AstProject(project)
    analysis = _analysis(tmp_path, "pkg/train.py", loader)
    sites = module_sites(analysis)
    assert module_sites(analysis) is sites  # kept with the analysis
    assert [(s.api.kind, s.call.lineno) for s in sites] == [(ApiKind.HF_TRAINING_ARGS, 9)] * 1 + [
        (ApiKind.HF_TRAINING_ARGS, 10),
        (ApiKind.HF_TRAINING_ARGS, 11),
    ]
    read = {p.relative_to(tmp_path).as_posix() for p in project.accessed() if p.is_relative_to(tmp_path)}
    assert {"pkg/more.py", "pkg/configs.py", "pkg/base.py"} <= read
    assert direct_sites(analysis.model) == []  # the module alone: every base is in another module
    local = "from transformers import TrainingArguments\n\nclass A(TrainingArguments):\n    pass\n\nA('o', gradient_checkpointing=True)\n"
    assert [s.call.lineno for s in direct_sites(AstModel.build(ast.parse(local)))] == [6]


def test_a_policy_site_calls_the_class_expressions_where_they_are_written() -> None:
    text = textwrap.dedent(
        """\
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
        from torch import nn


        class Block(nn.Module):
            pass


        def selects(module):
            return isinstance(module, Block) or type(module) is nn.Linear


        def enable(model):
            apply_activation_checkpointing(model, check_fn=selects)
        """
    )
    model = AstModel.build(ast.parse(text))
    (site,) = direct_sites(model)
    function = site.function
    assert isinstance(function, ast.List)
    assert [ast.unparse(call) for call in function.elts] == ["Block()", "nn.Linear()"]
    returned = next(n for n in ast.walk(model.module) if isinstance(n, ast.BoolOp))
    classes = [returned.values[0].args[1], returned.values[1].comparators[0]]  # type: ignore[attr-defined]
    assert [call.func for call in function.elts] == classes  # type: ignore[attr-defined]
    assert [(c.lineno, c.col_offset, c.end_col_offset) for c in function.elts] == [
        (c.lineno, c.col_offset, c.end_col_offset) for c in classes
    ]


POLICY_PROGRAMS = {
    "selections every way": """
        import functools
        from torch import nn
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            CheckpointImpl, apply_activation_checkpointing, checkpoint_wrapper,
        )
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy, lambda_auto_wrap_policy, transformer_auto_wrap_policy
        from layers import Block, Other

        BLOCKS = (Block, Other)
        KINDS = {Block}

        def check(m):
            return isinstance(m, BLOCKS) and m.training

        def one_line(m): return isinstance(m, Block)

        def two_returns(m):
            if m:
                return isinstance(m, Block)
            return False

        def enable(model, fn, extra):
            apply_activation_checkpointing(model, check_fn=check)
            apply_activation_checkpointing(model, check_fn=one_line)
            apply_activation_checkpointing(model, check_fn=two_returns)
            apply_activation_checkpointing(model, check_fn=lambda m: m.__class__ == Block or isinstance(m, nn.Linear) or type(m) in KINDS)
            apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block) and isinstance(m, Other))
            apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block) or fn(m))
            apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, [*extra]))
            apply_activation_checkpointing(model, check_fn=fn)
            apply_activation_checkpointing(model, check_fn=lambda: True)
            apply_activation_checkpointing(model, auto_wrap_policy=ModuleWrapPolicy(module_classes=set(BLOCKS)))
            apply_activation_checkpointing(model, auto_wrap_policy=ModuleWrapPolicy(frozenset([Block, Other])), check_fn=check)
            apply_activation_checkpointing(
                model,
                auto_wrap_policy=functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block}),
                checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.REENTRANT),
            )
            apply_activation_checkpointing(model, auto_wrap_policy=functools.partial(lambda_auto_wrap_policy, lambda_fn=check))
            apply_activation_checkpointing(model, auto_wrap_policy=None, check_fn=lambda m: isinstance(m, Other))
            apply_activation_checkpointing(model)
    """,
    "strategies and recipes": """
        from lightning.pytorch.strategies import FSDPStrategy
        from torchtune import training
        from layers import Block

        def strategy(model):
            training.set_activation_checkpointing(model, auto_wrap_policy={Block})
            return FSDPStrategy(activation_checkpointing_policy={Block}, sharding_strategy="FULL_SHARD")
    """,
}


HOOK_PROGRAMS = {
    "cached loss": """
        from functools import partial
        import torch
        from torch import nn

        def _backward_hook(grad_output, features, loss_obj):
            with torch.enable_grad():
                for reps, grad in zip(loss_obj.embed(features), loss_obj.cache):
                    surrogate = torch.dot(reps.flatten(), grad.flatten()) * grad_output
                    surrogate.backward()

        class CachedLoss(nn.Module):
            def forward(self, features):
                loss = self.loss_on(features)
                loss.register_hook(partial(_backward_hook, features=features, loss_obj=self))
                loss.register_hook(partial(_backward_hook, features=features, loss_obj=self))
                return loss
    """,
    "a method hook that restores autocast three calls deep": """
        import torch

        def inner(model, x):
            with torch.autocast("cuda"):
                return model(x)

        def middle(model, x):
            return inner(model, x)

        class Loss(torch.nn.Module):
            def _hook(self, grad):
                with torch.enable_grad(), open("log") as f:
                    out = self.model.run(self.x) if grad is not None else middle(self.model, self.x)
                    self.fn()(grad)
                    grad.mul(2)
                    total = out.sum()
                    len(f.read())
                    total.backward()

            def forward(self, x):
                y = self.body(x)
                y.register_hook(self._hook)
                y.register_hook(lambda g: g * 2)
                y.register_hook(hook=self._hook)
                return y
    """,
    "hooks that re-run nothing": """
        import torch

        def log_grad(grad, store):
            with torch.enable_grad():
                store.append(grad.norm())

        def recompute(grad):
            with torch.enable_grad():
                total = grad.sum()
                total.backward()

        def run(y, store):
            y.register_hook(log_grad)
            y.register_hook(recompute)
    """,
}


@pytest.mark.parametrize("name", [*POLICY_PROGRAMS, *HOOK_PROGRAMS])
def test_programs(name: str, snapshot) -> None:
    text = textwrap.dedent({**POLICY_PROGRAMS, **HOOK_PROGRAMS}[name])
    found = sites_of_text(text)
    assert _golden({"pkg/mod.py": found}) == snapshot
    assert len(found["sites"]) + len(found["hooks"]) > 0 or name == "hooks that re-run nothing"


def test_hooks_are_found_in_order_with_their_reruns() -> None:
    text = textwrap.dedent(HOOK_PROGRAMS["a method hook that restores autocast three calls deep"])
    model = AstModel.build(ast.parse(text))
    (hook,) = hook_recomputes(model)
    assert hook.hook.name == "_hook" and hook.restores_autocast
    assert [ast.unparse(call.func) for call in hook.reruns] == ["self.model.run", "middle", "self.fn"]
    assert hook_recomputes(model) == [hook]  # kept in the model's memo


def _hook_texts() -> list[str]:
    """The programs of CKP105's tests and rule page that register a gradient hook."""
    texts = []
    tests = ast.parse((ROOT / "tests" / "rules" / "test_ckp105.py").read_text(encoding="utf-8"))
    for node in ast.walk(tests):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "register_hook" in node.value:
            texts.append(textwrap.dedent(node.value))
    page = (ROOT / "rules" / "CKP105.md").read_text(encoding="utf-8")
    texts += [block for block in page.split("```python\n")[1:] for block in [block.split("```")[0]] if "register_hook" in block]
    return [text for text in texts if parses(text)]


@functools.cache
def _hooks(text: str) -> list[tuple]:
    return sites_of_text(text)["hooks"]


def test_the_hooks_of_ckp105s_programs(request: pytest.FixtureRequest) -> None:
    texts = _hook_texts()
    check_suite(request, "reach_ckp105_hooks", texts, _hooks)
    assert sum(len(_hooks(text)) for text in texts) >= 1  # the GradCache-style cached loss
