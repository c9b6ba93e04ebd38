"""Whether backward can ever reach a reentrant checkpoint, and so recompute anything.

The reentrant variant of ``torch.utils.checkpoint.checkpoint`` is an ``autograd.Function``
(``CheckpointFunction``, torch/utils/checkpoint.py 2.9, unchanged in 2.13): its ``forward``
runs the function under ``no_grad`` and returns what it returned, and the function runs again
only in its ``backward``. ``Function.apply`` tracks only the tensors of that result, the
result itself or the elements of a tuple, and only when a tensor among the positional inputs
requires grad. So backward never reaches the checkpoint, and nothing is recomputed, when

- the function returns something else in every path: a list, dict or set (displays and
  comprehensions), ``None`` (a bare ``return`` or none at all), a literal; or
- no positional input can be a tensor: each is a display (a tuple too), a comprehension or a
  literal (torch warns "None of the inputs have requires_grad=True").

Checked on torch 2.13: a BatchNorm in a function over a list of branches updates its running
statistics once per branch with ``use_reentrant=True`` (the outputs do not require grad),
twice with ``use_reentrant=False``. The non-reentrant variant hooks saved tensors instead and
recomputes whatever the function returns; other libraries' implementations are not judged.
A name is followed to the bindings that reach its read (:func:`~ckptlint.semantic.ast_reaching.reaching`):
all must be plain assignments of such values. Anything else (a call, a parameter, a decorated
function, a generator) may be a tensor: the site is judged as usual.

This module holds :func:`may_skip_backward`, the cheap test on a site's record; the analysis
of its region is :mod:`ckptlint.checkpoint.analyses.ast_reentrant_backward`.
"""

from __future__ import annotations

from typing import Any

from ckptlint.checkpoint.sites.site import CheckpointSite, SiteForm
from ckptlint.facts.apis import ApiKind

__all__ = ["may_skip_backward"]


def may_skip_backward(site: CheckpointSite[Any, Any, Any, Any]) -> bool:
    """Whether ``site`` is a call of torch's checkpoint that runs the reentrant variant: the
    only sites :func:`~ckptlint.checkpoint.analyses.ast_reentrant_backward.never_backward` can answer ``True``
    for (a cheap test before the region is built). It reads the site's record only."""
    return (
        site.api.kind is ApiKind.FUNCTION
        and site.api.fixed_reentrancy is None
        and site.runs_reentrant is True
        and site.form in (SiteForm.CALL, SiteForm.BOUND_CALL, SiteForm.PARTIAL)
    )


