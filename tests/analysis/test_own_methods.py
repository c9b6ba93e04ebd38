"""A call of a method named like a Hugging Face switch on an object whose class defines that
method itself is that method, not transformers' API (xtuner's model wrappers define
``gradient_checkpointing_enable`` / ``activation_checkpointing_enable`` and forward to their
``self.llm``); a receiver whose class is not known stays the library's switch.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ckptlint.testing import located

WRAPPER = """\
    from torch import nn


    class Wrapper(nn.Module):
        def __init__(self, llm, use_ckpt=False):
            super().__init__()
            self.llm = llm
            if use_ckpt:
                self.gradient_checkpointing_enable()

        def gradient_checkpointing_enable(self):
            self.activation_checkpointing_enable()

        def activation_checkpointing_enable(self):
            self.llm.gradient_checkpointing_enable()
"""


def _sites(run_cli, *paths: str) -> list[tuple[str, int, str]]:
    result = run_cli("--show-sites", "--output-format", "json", "--isolated", "--no-cache", *paths)
    return [(Path(r["filename"]).name, r["location"]["row"], r["api"]) for r in json.loads(result.stdout)]


def test_calls_of_the_classs_own_switch_methods_are_not_sites(run_cli, write) -> None:
    write(
        "model.py",
        textwrap.dedent(WRAPPER)
        + textwrap.dedent(
            """\


            class Holder(nn.Module):
                def __init__(self, llm):
                    super().__init__()
                    self.inner = Wrapper(llm)
                    self.inner.gradient_checkpointing_enable()


            def build(llm):
                model = Wrapper(llm)
                model.gradient_checkpointing_enable()
                Wrapper(llm).activation_checkpointing_enable()
                return model


            def enable(model):
                model.gradient_checkpointing_enable()
            """
        ),
    )
    # only the calls on objects of unknown class: `self.llm` and the parameter `model`
    assert _sites(run_cli, "model.py") == [
        ("model.py", 15, "gradient_checkpointing_enable"),
        ("model.py", 33, "gradient_checkpointing_enable"),
    ]
    assert located(textwrap.dedent(WRAPPER), "CKP001") == [(15, "CKP001")]


def test_a_class_imported_from_the_tree_or_a_base_class_there_defines_it(run_cli, write) -> None:
    write("pkg/__init__.py", "")
    write("pkg/wrappers.py", textwrap.dedent(WRAPPER))
    write("pkg/models/__init__.py", "from ..wrappers import Wrapper\n")
    write(
        "pkg/train.py",
        textwrap.dedent(
            """\
            from .models import Wrapper
            from . import wrappers


            class Tuned(wrappers.Wrapper):
                def setup(self):
                    self.gradient_checkpointing_enable()


            def build(llm):
                model = Wrapper(llm)
                model.gradient_checkpointing_enable()
                return Tuned(llm)
            """
        ),
    )
    assert _sites(run_cli, "pkg/train.py") == []


def test_receivers_whose_method_may_be_the_librarys_stay_sites(run_cli, write) -> None:
    write(
        "model.py",
        textwrap.dedent(
            """\
            from torch import nn
            from transformers import PreTrainedModel


            class Forwarding(nn.Module):  # trl's policy-and-value wrapper: the caller's kwargs go on
                def __init__(self, policy):
                    super().__init__()
                    self.policy = policy

                def gradient_checkpointing_enable(self, **kwargs):
                    self.policy.gradient_checkpointing_enable(**kwargs)


            class Named(nn.Module):
                def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
                    pass


            class Extended(PreTrainedModel):
                def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
                    super().gradient_checkpointing_enable(gradient_checkpointing_kwargs)
                    self.extra = True


            class Plain(PreTrainedModel):  # transformers' own method
                def setup(self):
                    self.gradient_checkpointing_enable()


            class Mixed(PreTrainedModel, Named):  # PreTrainedModel's comes first
                pass


            def build(policy, cfg, which):
                Forwarding(policy).gradient_checkpointing_enable()
                Named().gradient_checkpointing_enable()
                Extended(cfg).gradient_checkpointing_enable()
                Mixed(cfg).gradient_checkpointing_enable()
                model = Named() if which else policy
                model.gradient_checkpointing_enable()
            """
        ),
    )
    assert [row for _, row, _ in _sites(run_cli, "model.py")] == [11, 21, 27, 35, 36, 37, 38, 40]
