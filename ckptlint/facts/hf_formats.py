"""How transformers' ``gradient_checkpointing_enable()`` treats a model class that still
defines the checkpointing switch of the format before 4.35, checked in transformers' own
``modeling_utils.py``.

Old format: the model class overrides ``_set_gradient_checkpointing(self, module,
value=False)`` (Hub remote code, copies of BEiT/BERT models vendored into other projects).
transformers tests ``"value" in inspect.signature(self._set_gradient_checkpointing).parameters``
and then calls ``self.apply(partial(self._set_gradient_checkpointing, value=True))`` and logs
that it "will also silently ignore `gradient_checkpointing_kwargs`": the modules' own
``gradient_checkpointing`` flags are switched on, and the model's own checkpoint calls choose
the variant (ckptlint judges those calls where they are written).

Checked versions (``PreTrainedModel.gradient_checkpointing_enable``):

- 4.36.0 ``modeling_utils.py`` 2015-2048, 4.57.1 3674-3707 (default kwargs
  ``{"use_reentrant": True}``), 5.0.0 3084-3116 (default ``{"use_reentrant": False}``), 5.24.0
  ``_activation_checkpointing_enable`` 3175-3188 (``gradient_checkpointing_enable`` is its
  deprecated alias): the old-format branch above, the kwargs ignored.
- 4.35.0 and 4.35.2 (1850-1872): no such branch; ``_set_gradient_checkpointing(enable=True,
  gradient_checkpointing_func=...)`` is called whatever the override's signature, which raises
  TypeError for ``(module, value=False)``.
- Before 4.35 ``gradient_checkpointing_enable(self)`` took no kwargs at all (the keyword raises
  TypeError there).

Whatever the version, passing ``gradient_checkpointing_kwargs={"use_reentrant": False}`` to such
a model changes nothing or raises.
"""

from __future__ import annotations

__all__ = ["CLASS_CONSTRUCTORS", "HF_KWARGS_OPTIONS", "HF_NEW_NAMES", "OLD_FORMAT_PARAMETER", "OLD_FORMAT_SETTER"]

#: The method an old-format model class overrides.
OLD_FORMAT_SETTER = "_set_gradient_checkpointing"

#: The parameter whose presence in its signature makes transformers take the old-format path.
OLD_FORMAT_PARAMETER = "value"

#: Class methods of Hugging Face models that return an instance of the class they are called
#: on (``OldModel.from_pretrained(path)`` is an ``OldModel``): transformers
#: ``modeling_utils.py`` ``PreTrainedModel.from_pretrained`` builds ``model = cls(config, ...)``
#: and ``_from_config`` returns ``cls(config, ...)`` (4.36 to 5.x); diffusers
#: ``models/modeling_utils.py`` ``ModelMixin.from_pretrained(cls, ...) -> Self`` and
#: ``configuration_utils.py`` ``ConfigMixin.from_config(cls, ...) -> Self`` (0.36). A class of
#: the tree that defines the method itself is not assumed to follow this.
CLASS_CONSTRUCTORS = frozenset({"from_pretrained", "from_config", "_from_config"})

#: ``TrainingArguments``' checkpointing switches -> their kwargs keyword: transformers 5.24.0
#: ``training_args.py`` 908-937 (``activation_checkpointing*``; ``gradient_checkpointing*`` their
#: deprecated aliases, the only names before 5.24).
HF_KWARGS_OPTIONS = {
    "gradient_checkpointing": "gradient_checkpointing_kwargs",
    "activation_checkpointing": "activation_checkpointing_kwargs",
}

#: The deprecated names of transformers 5.24 -> their new names (``modeling_utils.py`` 3200-3216,
#: ``training_args.py`` 1533-1545).
HF_NEW_NAMES = {
    "gradient_checkpointing_enable": "activation_checkpointing_enable",
    "gradient_checkpointing": "activation_checkpointing",
    "gradient_checkpointing_kwargs": "activation_checkpointing_kwargs",
}
