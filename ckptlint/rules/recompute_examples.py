"""The home-made recompute ``autograd.Function`` that the CKP104 and CKP105 examples fill in
(``{save}``/``{restore}`` and the autocast lines), with a caller (an implementation nothing
uses is not reported). A helper module of the rules package, not a
rule, so that no rule imports another."""

__all__ = ["RECOMPUTE_FUNCTION"]

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
