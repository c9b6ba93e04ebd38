"""The home-made recompute ``autograd.Function`` that the CKP104 and CKP105 examples fill in
(``{save}``/``{restore}`` and the autocast lines), with a caller (an implementation nothing
uses is not reported). A helper module of the rules package, not a
rule, so that no rule imports another."""

__all__ = ["RECOMPUTE_FUNCTION", "REVERSIBLE_FUNCTION"]

RECOMPUTE_FUNCTION = (
    "import torch\n"
    "class Recompute(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, fn, x):\n"
    "        ctx.fn = fn\n"
    "        ctx.save_for_backward(x)\n"
    "{save}"
    "        with torch.no_grad():\n"
    "            return fn(x)\n"
    "    @staticmethod\n"
    "    def backward(ctx, grad):\n"
    "        (x,) = ctx.saved_tensors\n"
    "        x = x.detach().requires_grad_(True)\n"
    "{restore}"
    "        with torch.enable_grad():\n"
    "            out = ctx.fn(x)\n"
    "        torch.autograd.backward(out, grad)\n"
    "        return None, x.grad\n"
    "def run(block, x):\n"
    "    return Recompute.apply(block, x)\n"
)

#: A reversible network's recompute (Reformer/RevViT shape): ``backward`` re-runs each block
#: through its ``backward_pass``, which enables grad; ``{restore}`` goes before the re-run.
REVERSIBLE_FUNCTION = (
    "import torch\n"
    "from torch import nn\n"
    "class RevBlock(nn.Module):\n"
    "    def __init__(self, f, g):\n"
    "        super().__init__()\n"
    "        self.f, self.g = f, g\n"
    "    def forward(self, x1, x2):\n"
    "        y1 = x1 + self.f(x2)\n"
    "        return y1, x2 + self.g(y1)\n"
    "    def backward_pass(self, y1, y2, d1, d2):\n"
    "        with torch.enable_grad():\n"
    "            y1.requires_grad = True\n"
    "{restore}"
    "            gy1 = self.g(y1)\n"
    "            gy1.backward(d2)\n"
    "        with torch.no_grad():\n"
    "            x2 = y2 - gy1\n"
    "        return y1 - self.f(x2), x2, d1 + y1.grad, d2\n"
    "class RevBackProp(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, x1, x2, blocks):\n"
    "        with torch.no_grad():\n"
    "            for block in blocks:\n"
    "                x1, x2 = block(x1, x2)\n"
    "        ctx.save_for_backward(x1.detach(), x2.detach())\n"
    "        ctx.blocks = blocks\n"
    "        return x1, x2\n"
    "    @staticmethod\n"
    "    def backward(ctx, d1, d2):\n"
    "        y1, y2 = ctx.saved_tensors\n"
    "        for block in ctx.blocks[::-1]:\n"
    "            y1, y2, d1, d2 = block.backward_pass(y1, y2, d1, d2)\n"
    "        return d1, d2, None\n"
    "def run(blocks, x1, x2):\n"
    "    return RevBackProp.apply(x1, x2, blocks)\n"
)
