"""CKP103 unpreserved-random-source: Python's, NumPy's and generator objects' randomness in a region.
"""

from __future__ import annotations

import textwrap

from programs import NORM_FACTORY

from ckptlint.api import lint_source
from ckptlint.testing import located


def test_seeding_python_or_numpy_random_is_not_a_draw():
    source = """\
        import random
        import numpy as np
        from torch.utils.checkpoint import checkpoint


        def body(x, seed):
            random.seed(seed)
            np.random.seed(seed)
            return x * np.random.uniform()


        def run(x):
            return checkpoint(body, x, 3, use_reentrant=False)
    """
    assert located(source, "CKP103") == [(9, "CKP103")]


def test_generator_parameter_that_defaults_to_none_is_not_reported():
    # diffusers autoencoder_kl_ltx.py: blocks pass `generator=None` down to torch.randn, which
    # then draws from the default generator that checkpoint restores
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Resnet(nn.Module):
            def forward(self, x, temb=None, generator=None):
                return x + torch.randn(x.shape, generator=generator)


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.resnet = Resnet()

            def forward(self, x, temb=None, generator=None):
                return checkpoint(self.resnet, x, temb, generator, use_reentrant=False)


        class Sampler(nn.Module):
            def __init__(self):
                super().__init__()
                self.resnet = Resnet()
                self.gen = torch.Generator()

            def forward(self, x, generator):
                a = checkpoint(self.resnet, x, None, self.gen, use_reentrant=False)
                return checkpoint(self.resnet, a, None, generator, use_reentrant=False)
    """
    found = lint_source(textwrap.dedent(source), select=["CKP103"])
    assert [(d.start[0], d.code) for d in found] == [(8, "CKP103")]
    assert ":17" not in found[0].message  # the block whose generator defaults to None


IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_parameter_default_decides_but_a_starred_call_does_not() -> None:
    assert located(NORM_FACTORY.format(default='"batch"', literal='"layer"'), "CKP203") == [(23, "CKP203")]
    source = IMPORT + textwrap.dedent(
        """\
        import random

        def step(x, noisy=False):
            if noisy:
                x = x * random.random()
            return x

        def run(x, args):
            a = checkpoint(step, x, use_reentrant=False)
            b = checkpoint(step, *args, use_reentrant=False)
            return a, b
        """
    )
    # the first call cannot reach random.random(); the second may pass noisy=True
    assert located(source, "CKP103") == [(6, "CKP103")]
    ((_, _, message),) = located(source, "CKP103", messages=True)
    assert "checkpoint at <string>.py:11" in message


def test_type_checks_on_known_values_decide_branches() -> None:
    # mmpretrain blip BertAttention.forward: `if type(encoder_hidden_states) == list:`
    source = IMPORT + textwrap.dedent(
        """\
        import random

        def step(x, extra=None):
            if type(extra) == list:
                x = x * random.random()
            if isinstance(extra, (list, tuple)):
                x = x * random.random()
            return x

        def run(x):
            return checkpoint(step, x, use_reentrant=False)
        """
    )
    assert located(source, "CKP103") == []
    assert located(source.replace("extra=None", "extra=[]"), "CKP103") == [(6, "CKP103"), (8, "CKP103")]


def test_parameter_of_an_enclosing_function_is_not_assumed_default() -> None:
    # the closure's own call is seen; the enclosing function's caller is not
    source = IMPORT + textwrap.dedent(
        """\
        import random

        def run(x, noisy=False):
            def step(t):
                if noisy:
                    t = t * random.random()
                return t
            return checkpoint(step, x, use_reentrant=False)
        """
    )
    assert located(source, "CKP103") == [(7, "CKP103")]


def test_numpy_generator_object_in_the_region() -> None:
    source = """\
        import numpy as np
        from torch.utils.checkpoint import checkpoint

        rng = np.random.default_rng(0)

        def f(x):
            return x * rng.normal()

        def run(x):
            return checkpoint(f, x, use_reentrant=False)
    """
    assert located(source, "CKP103") == [(7, "CKP103")]
