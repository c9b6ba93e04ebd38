"""Outputs of a step: the default loss over them, and which of them to leave out."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any

import torch

from .compare import flatten

__all__ = ["OUTPUT_ALIASES", "default_loss"]

_COTANGENT_SEED = 20240


def default_loss(output: Any, ignore: Callable[[str], bool] | None = None) -> torch.Tensor | None:
    """Reduce ``output`` to a scalar: ``sum_i (leaf_i * w_i).sum()`` over grad-requiring leaves.

    Each ``w_i`` is a fixed pseudo-random tensor of the leaf's shape drawn from a private
    ``torch.Generator`` (seeded per leaf index), so the global RNG is not touched and every
    element gets a distinct weight (a plain ``sum`` would give BatchNorm outputs a zero
    gradient). ``ignore(name)``: leaves left out (the ``ignore_outputs`` of the checks, so an
    output present in only one run, such as a KV cache, does not change the loss); they are
    not counted in the index either. Returns None when no floating-point leaf requires grad.
    """
    total = None
    leaves: Iterable[tuple[str, Any]] = flatten(output, "output")
    if ignore is not None:
        leaves = [(name, leaf) for name, leaf in leaves if not ignore(name)]
    for i, (_, leaf) in enumerate(leaves):
        if not isinstance(leaf, torch.Tensor) or not leaf.requires_grad:
            continue
        if not (leaf.is_floating_point() or leaf.is_complex()):
            continue
        gen = torch.Generator().manual_seed(_COTANGENT_SEED + i)
        w = torch.randn(tuple(leaf.shape), generator=gen, dtype=torch.float32)
        w = w.to(device=leaf.device, dtype=leaf.real.dtype if leaf.is_complex() else leaf.dtype)
        term = (leaf * w).sum()
        term = term.real if term.is_complex() else term
        total = term if total is None else total + term
    return total


#: output names that are aliases of another key: transformers 5.24 returns the cache as
#: ``cache`` and warns "`past_key_values`/`cache_params` are deprecated. Use `cache` instead."
OUTPUT_ALIASES = {"past_key_values": "cache", "cache_params": "cache"}


def _ignore_matcher(patterns: Iterable[str]) -> Callable[[str], bool] | None:
    """Match output names against ``patterns``; a pattern that does not start with ``output``
    (``"past_key_values"``) also matches ``output['past_key_values']`` and ``output.past_key_values``."""
    pats = []
    for p in patterns:
        for name in (p, OUTPUT_ALIASES.get(p)):
            if name is not None:
                pats.append(name)
                if not name.startswith("output"):
                    pats += [f"output[{name!r}]", f"output.{name}"]
    if not pats:
        return None

    def ignore(name: str) -> bool:
        # fnmatch reads `[...]` as a character class: `output['cache']*` is also tried with
        # its brackets taken literally
        return any(
            name == p
            or name.startswith(p + "[")
            or name.startswith(p + ".")
            or fnmatch.fnmatchcase(name, p)
            or fnmatch.fnmatchcase(name, p.replace("[", "[[]"))
            for p in pats
        )

    return ignore


