"""Regions: the code a checkpoint site recomputes.

For a :class:`~ckptlint.checkpoint.sites.sites.CheckpointSite`, the :class:`RegionBuilder` resolves the
checkpointed callable to the code that runs again during backward:

- functions and methods of the module (``fn``, ``self._forward``, nested defs), lambdas,
  ``functools.partial(f, ...)``, factory closures (``make_forward(layer)`` returning an inner
  def, with the factory's parameters bound to the call's arguments);
- ``nn.Module`` instances reached through ``self.block``, ``self.layers[i]``, a loop variable
  over ``self.blocks`` (``enumerate``/``zip`` too), or ``checkpoint_sequential``'s
  ``functions``: attributes are followed to their assignments in the class (``__init__``),
  through ``nn.Sequential``/``nn.ModuleList``/``nn.ModuleDict``, lists built with ``append``,
  and comprehensions, then to the class's ``forward`` (searching base classes of the tree);
- classes and functions imported from other files of the linted tree, loaded lazily through
  :class:`~ckptlint.semantic.project.Project` (per-class summaries are cached);
- calls made inside the region, to :data:`MAX_DEPTH` levels.

torch's own layers are known by :mod:`ckptlint.facts.torch_facts`. Whatever cannot be resolved is
unknown and produces no finding. Resolution is bounded (depth, visited set, value count), so it
terminates on recursive or cyclic code.

The :class:`RegionBuilder` is ckptlint's evaluator, composed of objects with one job each: an
:class:`~ckptlint.checkpoint.evaluator.budget.EvaluationBudget` (steps per query and per file,
the query's memo), :class:`~ckptlint.checkpoint.evaluator.literals.LiteralDecisions` (literal
values, which branch runs), an :class:`~ckptlint.checkpoint.evaluator.imports.ImportResolver`
(the modules of the tree that imported names come from) and an
:class:`~ckptlint.checkpoint.evaluator.evaluation.ExpressionEvaluator` (what an expression
denotes, class summaries). The builder runs each question as one bounded query and builds
regions. Its entry points, for rules and for new site kinds (one builder per linted module,
``RuleContext.regions``):

- :meth:`RegionBuilder.values`: expression ``X`` written in module ``A`` -> the abstract
  values it may denote (:class:`FunctionValue`, :class:`ClassValue`, :class:`InstanceValue`,
  :class:`LayerUse`, :class:`ContainerValue`, :class:`TorchValue`, ...; ``[]`` = unknown);
- :meth:`RegionBuilder.literal` / :meth:`RegionBuilder.decide`: expression in a
  :class:`Context` (bindings of the call being followed) -> Python value / branch taken;
- :meth:`RegionBuilder.signature`: callable expression -> the keywords it accepts;
- :meth:`RegionBuilder.region`: a :class:`~ckptlint.checkpoint.sites.sites.CheckpointSite` -> its
  :class:`Region`: frames, layers, and a status: ``resolved`` (the callable is known),
  ``partial`` (it calls code ckptlint cannot see, :attr:`Region.unknown_calls`), or neither
  (unknown). A site kind plugs in by setting ``site.function`` to the callable expression;
  for ``ApiKind.FUNCTION`` sites ``site.inputs``/``site.function_keywords`` are bound to its
  parameters, other kinds are treated as called with arguments not seen.

Branches of ``if`` that the bound arguments (or their defaults) decide are pruned from frames,
returns and ``append`` calls; undecided ones stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ckptlint.checkpoint.evaluator.region import MAX_DEPTH

if TYPE_CHECKING:
    pass



__all__ = []



#: Evaluation steps (expressions evaluated) one query may take: a region, or one
#: ``values``/``signature`` question. Past it the rest is unknown (never a finding by
#: itself). Measured with memoisation: the largest region of sd-scripts takes 653 steps,
#: of ColossalAI 432; ``values``/``signature`` queries there at most 188.
REGION_BUDGET = 20_000



QUERY_BUDGET = 2_000



#: Evaluation steps all queries of one linted module may take together (one
#: :class:`RegionBuilder`): past it every query is cut off at once, so no file is
#: pathologically slow; what is cut off is unknown, as past :data:`REGION_BUDGET`.
FILE_BUDGET = 100_000



#: Levels of calls a region is followed to where a finding needs every way its frames are
#: reached (:meth:`RegionBuilder.deep_region`).
DEEP_DEPTH = MAX_DEPTH + 3



