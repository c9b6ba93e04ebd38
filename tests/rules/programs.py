"""Test programs that more than one rule's tests run (each names the pattern it stands for)."""


GLM_CHECKPOINT = """\
import torch


class CheckpointFunction(torch.autograd.Function):  # GLM mpu/random.py:311-375 (reduced)
    @staticmethod
    def forward(ctx, run_function, *args):
        ctx.run_function = run_function
        ctx.fwd_cpu_rng_state = torch.get_rng_state()
        ctx.save_for_backward(*args)
        with torch.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = [x.detach().requires_grad_() for x in ctx.saved_tensors]
        torch.set_rng_state(ctx.fwd_cpu_rng_state)
        with torch.enable_grad():
            outputs = ctx.run_function(*inputs)
        torch.autograd.backward(outputs, grads)
        return (None,) + tuple(x.grad for x in inputs)


def checkpoint(function, *args):
    return CheckpointFunction.apply(function, *args)


def run_layers(layers, x):
    for layer in layers:
        x = checkpoint(layer, x)
    return x
"""


ITEMS = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    STATS = {"n": 0}
    FLAGS = {}
    _CACHE = {}


    def seqlens(n):
        key = (n,)
        if key not in _CACHE:                       # a memo fill (TransformerEngine's _cu_seqlens_cache)
            _CACHE[key] = torch.arange(n)
        return _CACHE[key]


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fp8_meta = {}
            self.hist = {}

        def forward(self, x, recipe):
            self.fp8_meta["recipe"] = recipe        # one fixed slot overwritten per call
            self.fp8_meta.pop("local_recipes", None)
            self.__dict__["mode"] = recipe          # a setattr
            FLAGS["update"] = False                 # a reset to a constant
            STATS["n"] = STATS["n"] + 1             # a counter
            self.hist["h"] = torch.cat([self.hist["h"], x])
            self.hist[recipe] = x                   # a key that need not name the same slot
            return x + seqlens(x.shape[0])


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return checkpoint(self.block, x, 1, use_reentrant=False)
"""


NORM_FACTORY = """\
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    def build_norm(dim, norm="layer"):
        layers = []
        if norm == "batch":
            layers.append(nn.BatchNorm2d(dim))
        elif norm == "layer":
            layers.append(nn.LayerNorm(dim))
        return nn.Sequential(*layers)


    class Block(nn.Module):
        def __init__(self, dim, norm_type={default}):
            super().__init__()
            self.norm1 = build_norm(dim, {literal})
            self.norm2 = build_norm(dim, norm_type)

        def forward(self, x):
            def inner(x):
                return self.norm2(self.norm1(x))
            return checkpoint(inner, x, use_reentrant=False)
"""
