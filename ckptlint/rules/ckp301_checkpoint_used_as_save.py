"""CKP301 checkpoint-used-as-save."""

from __future__ import annotations

from ckptlint.rules.base import Invalid, Rule, RuleContext
from ckptlint.rules.save_advice import save_message, torch_save_fix


class CheckpointUsedAsSave(Rule):
    """Flags activation-checkpoint calls that try to save (or load) training state.

    ``torch.utils.checkpoint.checkpoint`` recomputes a function during backward; it writes
    nothing anywhere. Called with a state dict it fails (``'collections.OrderedDict' object
    is not callable``); "fixed" by wrapping a callable, it runs silently and saves nothing.
    How calls are classified: :mod:`ckptlint.model.misuse`.
    """

    code = "CKP301"

    VALID = (
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(block, x, use_reentrant=False)\n",
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(self.attn, x, 'causal', use_reentrant=False)\n",
        "from torch.utils.checkpoint import checkpoint\n"
        "def save_memory_forward(self, x):\n    return checkpoint(self.block, x, use_reentrant=False)\n",
        "import torch\ndef checkpoint(state, path):\n    torch.save(state, path)\ncheckpoint(model.state_dict(), 'm.pt')\n",
        "from torch.utils.checkpoint import checkpoint\n"
        "for path in self.paths:\n    x = checkpoint(path, x, use_reentrant=False)\n",
    )
    INVALID = (
        Invalid("import torch.utils.checkpoint\ntorch.utils.checkpoint.checkpoint(model.state_dict(), 'model.pt')\n"),
        Invalid("from torch.utils.checkpoint import checkpoint\ncheckpoint({'model': m, 'epoch': e}, path)\n"),
        Invalid("from torch.utils.checkpoint import checkpoint\ncheckpoint(optimizer, 'opt.pt')\n"),
        Invalid("import torch\nfrom torch.utils.checkpoint import checkpoint\ncheckpoint(torch.save, state, path)\n"),
        Invalid(
            "from torch.utils.checkpoint import checkpoint\n"
            "def save_checkpoint(model, path):\n    checkpoint(model, path)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> None:
        for site in ctx.analysis.sites.sites:
            misuse = site.save_misuse
            if misuse is None:
                continue
            short = site.api.name.rsplit(".", 1)[-1]
            ctx.report(site.call, save_message(f"`{short}()`", misuse), fix=torch_save_fix(ctx, ctx.analysis, site.call, misuse))
