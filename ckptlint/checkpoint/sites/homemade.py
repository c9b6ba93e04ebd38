"""Home-made recompute functions: ``torch.autograd.Function`` subclasses of the linted tree
that store a callable in ``forward`` and run it again in ``backward``, and the helpers that
call their ``apply``.

The pattern (torch.utils.checkpoint's own ``CheckpointFunction`` before 1.11, copied into
diffusion code bases as ``checkpoint(func, inputs, params, flag)``, DeepSpeed, Megatron)::

    class CheckpointFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, run_function, *args):
            ctx.run_function = run_function        # the stored callable, run here
            with torch.no_grad():
                return run_function(*args)
        @staticmethod
        def backward(ctx, *grads):
            with torch.enable_grad():
                out = ctx.run_function(*inputs)    # the re-run (CKP104/CKP105 report here)

An :class:`Implementation` records what the implementation restores around the re-run (read
from its code, by the names it calls: an RNG save/restore, ``fork_rng``, an RNG tracker's
``get_states``/``set_states``/``fork``; autocast state read in ``forward`` and re-entered in
``backward``, or ``custom_bwd``). Calls of ``apply`` and of helpers that pass one of their
parameters as the stored callable are checkpoint sites (see :mod:`ckptlint.checkpoint.sites.ast_site_index`).

Holds the records (:class:`Implementation`, :class:`Helper`, :class:`HomeMade`), which
:mod:`ckptlint.checkpoint.sites.ast_homemade` builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic

from ckptlint.facts.apis import HOME_MADE, CheckpointApi

if TYPE_CHECKING:
    from typing_extensions import TypeVar


    # The records' class, function and call nodes (those found on CPython's ``ast`` are
    # ``Implementation[ast.ClassDef, ast.Call]`` and so on, see
    # :mod:`ckptlint.checkpoint.sites.ast_homemade`).
    K = TypeVar("K")
    F = TypeVar("F")
    C = TypeVar("C")
else:
    from typing import TypeVar

    K = TypeVar("K")
    F = TypeVar("F")
    C = TypeVar("C")


__all__ = ["Helper", "HomeMade", "Implementation"]


@dataclass(eq=False)
class Implementation(Generic[K, C]):
    """One home-made recompute ``autograd.Function``.

    Attributes:
        node: the class; qualified: its qualified name (``pkg.nn.CheckpointFunction``).
        function_index: index, among ``apply``'s arguments, of the stored callable.
        reruns: the calls in ``backward`` that run the stored callable again.
        restores_rng: an RNG state is saved and restored around the re-run.
        restores_autocast: the autocast state of ``forward`` is re-applied (``custom_bwd``,
            or read in ``forward`` and re-entered in ``backward``).
        api: the table row of its sites (``HOME_MADE`` with these facts).
    """

    node: K
    qualified: str
    function_index: int
    reruns: list[C]
    restores_rng: bool
    restores_autocast: bool
    api: CheckpointApi = field(default=HOME_MADE)

    @property
    def rerun_label(self) -> str:
        """What ``backward`` runs again, for messages."""
        method = self.api.rerun_method
        return f"the stored blocks (their `{method}`)" if method else "the stored callable"


@dataclass(eq=False)
class Helper(Generic[F, K, C]):
    """A function that passes its parameter ``parameter`` (position ``index``) to an
    implementation's ``apply`` as the stored callable."""

    node: F
    qualified: str
    parameter: str
    index: int
    implementation: Implementation[K, C]
    api: CheckpointApi = field(default=HOME_MADE)


@dataclass
class HomeMade(Generic[F, K, C]):
    """The implementations and helpers of one module, by qualified name."""

    implementations: dict[str, Implementation[K, C]] = field(default_factory=dict)
    helpers: dict[str, Helper[F, K, C]] = field(default_factory=dict)


