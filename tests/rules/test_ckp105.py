"""CKP105 recompute-without-autocast-restore: home-made recompute where autocast can be on.
"""

from __future__ import annotations

import json
from pathlib import Path

from programs import GLM_CHECKPOINT


def _codes(run_cli, *args: str) -> list[tuple[str, str]]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--select", "CKP105", *args)
    return sorted((Path(r["filename"]).name, r["code"]) for r in json.loads(result.stdout))


def test_home_made_recompute_is_reported_whatever_the_rest_of_the_code_base_does(tmp_path: Path, run_cli):
    # GLM, improved-diffusion: fp16 by converting the weights, no autocast today; the
    # implementation is still wrong under autocast, and the message says so. Only the module's
    # own text decides: a file of the package that enters autocast changes nothing.
    (tmp_path / "mpu").mkdir()
    (tmp_path / "mpu" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "mpu" / "random.py").write_text(GLM_CHECKPOINT, encoding="utf-8")
    (tmp_path / "mpu" / "fp16.py").write_text("def convert(model):\n    return model.half()\n", encoding="utf-8")
    assert _codes(run_cli, "--no-cache", ".") == [("random.py", "CKP105")]
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--no-cache", "--select", "CKP105", "mpu/random.py")
    assert "when forward runs under `torch.autocast` with float32 parameters (mixed precision)" in json.loads(result.stdout)[0]["message"]
    cache = str(tmp_path / "cache")
    assert _codes(run_cli, "--cache-dir", cache, "mpu/random.py") == [("random.py", "CKP105")]
    (tmp_path / "mpu" / "train.py").write_text(
        "import torch\n\n\ndef train_step(model, x, amp):\n"
        "    with torch.cuda.amp.autocast(enabled=amp):\n        return model(x)\n",
        encoding="utf-8",
    )
    assert _codes(run_cli, "--cache-dir", cache, "mpu/random.py") == [("random.py", "CKP105")]
    assert _codes(run_cli, "--no-cache", "mpu/random.py") == [("random.py", "CKP105")]


# The shape of the cached contrastive losses built on GradCache: forward embeds mini-batches
# under no_grad keeping their RNG states, caches the gradients of the detached embeddings and
# registers a hook on the loss; the hook re-runs the model with grad and backpropagates the
# cached gradients. The RNG is restored (RandContext), the autocast state is not.
CACHED_LOSS = '''\
from __future__ import annotations

from contextlib import nullcontext
from functools import partial

import torch
from torch import Tensor, nn


class RandContext:
    def __init__(self, *tensors):
        self.cpu_state = torch.get_rng_state()

    def __enter__(self):
        self.saved = torch.get_rng_state()
        torch.set_rng_state(self.cpu_state)

    def __exit__(self, *exc):
        torch.set_rng_state(self.saved)


def _backward_hook(grad_output: Tensor, features: list[Tensor], loss_obj: CachedLoss) -> None:
    with torch.enable_grad():
        for feature, grads, states in zip(features, loss_obj.cache, loss_obj.random_states):
            for (reps, _), grad in zip(loss_obj.embed_iter(feature, states), grads):
                surrogate = torch.dot(reps.flatten(), grad.flatten()) * grad_output
                surrogate.backward()


class CachedLoss(nn.Module):
    def __init__(self, model: nn.Module, mini_batch_size: int = 32) -> None:
        super().__init__()
        self.model = model
        self.mini_batch_size = mini_batch_size
        self.cache = None
        self.random_states = None

    def embed(self, feature, begin, end, random_state=None):
        with nullcontext() if random_state is None else random_state:
            state = RandContext(feature) if random_state is None else None
            return self.model(feature[begin:end]), state

    def embed_iter(self, feature, random_states=None):
        for i, b in enumerate(range(0, feature.shape[0], self.mini_batch_size)):
            state = None if random_states is None else random_states[i]
            yield self.embed(feature, b, b + self.mini_batch_size, state)

    def forward(self, features: list[Tensor]) -> Tensor:
        reps, self.random_states = [], []
        for feature in features:
            with torch.no_grad():
                pairs = list(self.embed_iter(feature))
            reps.append([r.detach().requires_grad_() for r, _ in pairs])
            self.random_states.append([s for _, s in pairs])
        loss = sum(torch.cat(r).pow(2).mean() for r in reps)
        loss.backward()
        self.cache = [[r.grad for r in rs] for rs in reps]
        loss = loss.detach().requires_grad_()
        loss.register_hook(partial(_backward_hook, features=features, loss_obj=self))
        return loss
'''


def _hook_findings(source: str) -> list[tuple[int, int, str]]:
    from ckptlint.testing import lint

    return [(d.start[0], d.start[1], d.message) for d in lint(source, ["CKP105"]) if d.code == "CKP105"]


def test_gradient_hook_that_reruns_the_model_without_autocast_is_reported() -> None:
    from ckptlint.lint.gate import may_have_findings

    assert may_have_findings(CACHED_LOSS.encode())  # no checkpoint API in the file: the hook lets it in
    rerun = next(i for i, line in enumerate(CACHED_LOSS.splitlines(), 1) if "loss_obj.embed_iter(" in line)
    registered = next(i for i, line in enumerate(CACHED_LOSS.splitlines(), 1) if ".register_hook(" in line)
    ((row, column, message),) = _hook_findings(CACHED_LOSS)
    assert (row, column) == (rerun, CACHED_LOSS.splitlines()[rerun - 1].index("loss_obj.embed_iter(") + 1)
    assert message.startswith(
        f"`_backward_hook`, a gradient hook (registered at line {registered}), re-runs the model in backward outside "
        "the autocast state of forward: when forward runs under `torch.autocast` with float32 parameters "
        "(mixed precision) and backward"
    )


def test_a_hook_whose_rerun_enters_autocast_is_not_reported() -> None:
    # the model call the hook reaches (embed_iter -> embed) re-enters the autocast state of forward
    source = CACHED_LOSS.replace(
        "            return self.model(feature[begin:end]), state",
        "            with torch.autocast('cuda', enabled=self.amp, dtype=self.amp_dtype):\n"
        "                return self.model(feature[begin:end]), state",
    )
    assert _hook_findings(source) == []


def test_hooks_that_only_read_or_scale_gradients_are_not_reported() -> None:
    source = '''\
import torch


def log_grad(grad, store):
    with torch.enable_grad():
        store.append(grad.norm())


class Net(torch.nn.Module):
    def forward(self, x, store):
        y = self.body(x)
        y.register_hook(lambda g: g * 2)
        y.register_hook(lambda g: log_grad(g, store))
        return y
'''
    assert _hook_findings(source) == []
    # a hook that calls backward but re-runs nothing it got from outside (only what it computed)
    recomputing = source.replace("        store.append(grad.norm())", "        total = grad.sum()\n        total.backward()")
    recomputing = recomputing.replace("y.register_hook(lambda g: log_grad(g, store))", "y.register_hook(log_grad)")
    assert _hook_findings(recomputing) == []
