"""The values a module itself gives a field of its configuration class: the choices of a
configuration string that its shipped configurations can select.

A model family picks a layer by a string of its configuration (timm's NFNet: ``get_attn(
cfg.attn_layer)``, an ``if``/``elif`` chain over attention names, ``cfg`` a parameter annotated
with the module's ``@dataclass NfCfg``). The module's own table (``model_cfgs = dict(nfnet_f0=
_nfnet_cfg(...), ...)``) gives that field only some strings (``"se"``, ``"eca"``, the default
``None``): :func:`~ckptlint.checkpoint.evaluator.ast_config_values.shipped_values` collects them, so a branch that no shipped configuration
takes is not judged. Only the module that defines the class is read (locality): the class's
default for the field, every ``field=`` keyword of the module's calls of the class and of
``dataclasses.replace``, and a helper's parameter passed on as that keyword
(``attn_layer=attn_layer``), followed to its default and to what the module's calls of the
helper pass. The caller's keywords laid over a configuration (timm's ``cfg = replace(cfg, **kwargs)``, the
model's own ``**kwargs``) are no shipped value and are not counted. Anything else (a positional
argument for the field, ``NfCfg(**kw)``, a value that is not a literal, a write of ``.field``)
makes the set unknown (``None``).

This module holds the limit on those values, :data:`MAX_CHOICES`; the reading is
:mod:`ckptlint.checkpoint.evaluator.ast_config_values`.
"""

from __future__ import annotations

__all__ = ["MAX_CHOICES"]


#: Most values a field may have for its set to be used (past it: unknown).
MAX_CHOICES = 32


