"""What an argument expression holds, as far as the source shows: a state dict, a dict, a
file path, an optimizer, an ``nn.Module``, ``torch.save``/``torch.load``.

Rules about confusing activation checkpointing with saving training state (CKP301) and
about ``torch.distributed.checkpoint`` given the wrong object (CKP303) ask these questions.
Two strengths of evidence are kept apart:

- :func:`~ckptlint.checkpoint.sites.ast_argument_kinds.classify_value` reads what the code *builds*: ``model.state_dict()``, a dict
  literal, ``os.path.join(...)``, ``torch.optim.AdamW(...)``, ``nn.Linear(...)``, an
  instance of a class of this module that subclasses ``nn.Module``, or a name every
  assignment of which builds one of these. This is reliable.
- :func:`~ckptlint.checkpoint.sites.ast_argument_kinds.name_hint` reads only the identifier (``optimizer``, ``ckpt_path``, ``model``).
  Rules use it only together with other evidence.

Holds the records (:class:`ValueKind`, :class:`ValueGuess`) and the name patterns and file
suffixes they are read with; :mod:`ckptlint.checkpoint.sites.ast_argument_kinds` answers the questions.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from enum import Enum

__all__ = ["ValueGuess", "ValueKind"]


#: File name endings of saved training state (torch.save, safetensors, pickles, archives).
CHECKPOINT_FILE_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".safetensors", ".pkl", ".pickle", ".tar", ".npz", ".h5")


class ValueKind(str, Enum):
    STATE_DICT = "state dict"
    DICT = "dict"
    PATH = "path"
    OPTIMIZER = "optimizer"
    SCHEDULER = "learning-rate scheduler"
    MODULE = "module"
    SAVE_FUNCTION = "torch.save"
    LOAD_FUNCTION = "torch.load"


@dataclass(frozen=True)
class ValueGuess:
    """What an expression holds and why ckptlint thinks so.

    Attributes:
        kind: see :class:`ValueKind`.
        evidence: a short phrase for messages (``"a `state_dict()` call"``).
        node: the expression that was classified (for a name, the assigned value).
    """

    kind: ValueKind
    evidence: str
    node: ast.expr


_OPTIMIZER_NAME = re.compile(r"(?:^|_)optim(?:izer)?$")


_SCHEDULER_NAME = re.compile(r"(?:^|_)(?:lr_)?scheduler$")


_PATH_NAME = re.compile(r"(?:^|_)(?:path|dir|directory|file|filename|fname|folder)$")


_STATE_NAME = re.compile(r"(?:^|_)(?:state|states|state_dict|ckpt|checkpoint)$")


_MODULE_NAME = re.compile(r"(?:^|_)(?:model|module|net|network)$")


