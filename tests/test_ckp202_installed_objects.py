"""CKP202 and a method named like a container's mutator (``update``, ``append``) on ``self.X``:
a mutation when the class gives ``self.X`` a list, dict or set (or anything it does not know),
not when the class only ever sets it to ``None`` and other code installs the object (a key/value
cache that inference code puts on each attention block)."""

from __future__ import annotations

from ckptlint.testing import located

KV_CACHE = """\
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class KVCache(nn.Module):
    def update(self, input_pos, k_val):
        self.k_cache[:, input_pos] = k_val
        return self.k_cache


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.wk = nn.Linear(dim, dim)
        self.kv_cache = INSTALLED

    def forward(self, x, input_pos=None):
        k = self.wk(x)
        if self.kv_cache is not None:
            k = self.kv_cache.update(input_pos, k)
        return k


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.layers = nn.ModuleList([Attention(dim) for _ in range(2)])

    def setup_caches(self):
        for layer in self.layers:
            layer.kv_cache = KVCache()

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False)
        return x
"""


def test_a_method_call_on_an_object_the_class_only_sets_to_none_is_not_a_mutation() -> None:
    assert located(KV_CACHE.replace("INSTALLED", "None"), "CKP202") == []


def test_a_container_the_class_builds_is_still_mutated_by_update() -> None:
    for value in ("{}", "dict()", "[]"):
        method = "append" if value == "[]" else "update"
        source = KV_CACHE.replace("INSTALLED", value).replace("self.kv_cache.update(input_pos, k)", f"self.kv_cache.{method}(k) or k")
        assert located(source, "CKP202") == [(21, "CKP202")], value
