"""CKP104 recompute-without-rng-restore: home-made recompute functions and recomputed code that
ckptlint cannot see.
"""

from __future__ import annotations

import json
from pathlib import Path

from programs import GLM_CHECKPOINT

from ckptlint.testing import located

UNSLOTH_GC = """\
import torch


def get_unsloth_gradient_checkpointing_func():  # LLaMA-Factory model_utils/checkpointing.py:63-96
    class UnslothGradientCheckpointing(torch.autograd.Function):
        @staticmethod
        @torch.cuda.amp.custom_fwd
        def forward(ctx, forward_function, hidden_states, *args):
            saved_hidden_states = hidden_states.to("cpu", non_blocking=True)
            with torch.no_grad():
                outputs = forward_function(hidden_states, *args)
            ctx.save_for_backward(saved_hidden_states)
            ctx.forward_function = forward_function
            ctx.args = args
            return outputs

        @staticmethod
        @torch.cuda.amp.custom_bwd
        def backward(ctx, grad_output):
            (hidden_states,) = ctx.saved_tensors
            hidden_states = hidden_states.to("cuda", non_blocking=True).detach()
            hidden_states.requires_grad_(True)
{restore}            with torch.enable_grad():
                outputs = ctx.forward_function(hidden_states, *ctx.args)
            torch.autograd.backward(outputs, grad_output)
            return (None, hidden_states.grad) + (None,) * len(ctx.args)

    return UnslothGradientCheckpointing.apply
"""


def test_recompute_of_unseen_layers_without_rng_restore_is_reported_with_its_condition():
    # the re-run callable is a Hugging Face decoder layer; its dropout is the user's choice
    # (lora_dropout, attention_dropout): the message states the condition, not that it draws
    found = located(UNSLOTH_GC.replace("{restore}", ""), "CKP104", messages=True)
    assert [(row, code) for row, code, _ in found] == [(24, "CKP104")]
    assert "whenever the recomputed code draws random numbers in training (a dropout with p > 0" in found[0][2]
    restored = UNSLOTH_GC.replace(
        "ctx.save_for_backward(saved_hidden_states)\n",
        "ctx.save_for_backward(saved_hidden_states)\n            ctx.rng = torch.get_rng_state()\n",
    ).replace("{restore}", "            torch.set_rng_state(ctx.rng)\n")
    assert located(restored, "CKP104") == []


#: GLM's implementation without its RNG restore, with its `checkpoint` helper and no caller.
UNRESTORED_HELPER = GLM_CHECKPOINT.split("\n\n\ndef run_layers")[0].replace("        torch.set_rng_state(ctx.fwd_cpu_rng_state)\n", "")


def _home_made_codes(run_cli, *args: str) -> list[tuple[str, int, str]]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--no-cache", "--select", "CKP104", *args)
    return sorted((Path(r["filename"]).name, r["location"]["row"], r["code"]) for r in json.loads(result.stdout))


def test_home_made_implementation_is_reported_whether_or_not_something_uses_it(tmp_path: Path, run_cli):
    # Latte / SEINE / LaVie keep ldm's `models/utils.py` CheckpointFunction and never call it: the
    # code is still wrong, as a linter reports it; vendored copies are silenced with excludes or noqa
    (tmp_path / "setup.py").write_text("", encoding="utf-8")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "models" / "utils.py").write_text(UNRESTORED_HELPER, encoding="utf-8")
    (tmp_path / "models" / "latte.py").write_text(
        "from torch.utils.checkpoint import checkpoint\nfrom .utils import zero_module\n", encoding="utf-8"
    )
    assert _home_made_codes(run_cli, ".") == [("utils.py", 17, "CKP104")]
    cache = str(tmp_path / "c")
    assert _home_made_codes(run_cli, "--cache-dir", cache, ".") == [("utils.py", 17, "CKP104")]
    # a use added elsewhere changes nothing, cached or not
    (tmp_path / "models" / "unet.py").write_text(
        "from models.utils import (\n    checkpoint,\n)\n\n\ndef f(block, x):\n    return checkpoint(block, x)\n",
        encoding="utf-8",
    )
    assert _home_made_codes(run_cli, "--cache-dir", cache, ".") == [("utils.py", 17, "CKP104")]
    (tmp_path / "models" / "utils.py").write_text(UNRESTORED_HELPER + "\n\ndef g(b, x):\n    return checkpoint(b, x)\n", encoding="utf-8")
    assert _home_made_codes(run_cli, "--cache-dir", cache, ".") == [("utils.py", 17, "CKP104")]


def test_use_through_a_namespace_import_without_a_project_root_is_seen(tmp_path: Path, run_cli):
    # pattern of ALPRO: `import src.utils.grad_ckpt as grad_ckpt` where utils/ has no __init__.py
    (tmp_path / "src" / "utils").mkdir(parents=True)
    (tmp_path / "src" / "modeling").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("", encoding="utf-8")
    implementation = UNRESTORED_HELPER.split("\n\n\ndef checkpoint")[0]
    (tmp_path / "src" / "utils" / "grad_ckpt.py").write_text(implementation, encoding="utf-8")
    (tmp_path / "src" / "modeling" / "vit.py").write_text(
        "import src.utils.grad_ckpt as grad_ckpt\n\n\ndef f(attn, x):\n    return grad_ckpt.CheckpointFunction.apply(attn, x)\n",
        encoding="utf-8",
    )
    assert _home_made_codes(run_cli, "src/utils/grad_ckpt.py") == [("grad_ckpt.py", 17, "CKP104")]
