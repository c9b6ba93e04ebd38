"""The defaults of the switches a guard tests, so that a finding says whether its code runs
by default (``"`self.with_cp` is true (it defaults to `False`)"``).

A switch is read where the module (or a config class it imports) gives its default:

- ``self.X`` that ``__init__`` assigns once from a parameter, no other method assigning it
  (mm-style ``with_cp=False``): that parameter's default;
- a parameter of the function itself that it never rebinds (``use_cp=False``);
- ``args.X`` / ``self.args.X`` where ``args`` holds the namespace of an ``argparse`` parser
  built in the same module (a name bound from ``parse_args()`` / ``parse_known_args()``, or a
  parameter or ``self`` attribute spelled ``args``, ``opt``, ``opts``, ``options``,
  ``cli_args`` or ``cmd_args``): the default of the module's ``add_argument`` whose
  destination is ``X`` (``action="store_true"`` defaults to ``False``, ``store_false`` to
  ``True``, a flag without either to ``None``, as argparse's documentation of
  ``add_argument`` says); a flag added twice with different defaults, or given a default by
  ``set_defaults``, is left unnamed;
- ``config.X`` / ``self.config.X`` whose class is known (a parameter annotated with it, an
  ``__init__`` parameter annotated with it and stored on ``self``, or a local made by calling
  it), a dataclass or config class of the module or of a module it imports
  (``gradient_checkpointing: bool = False``, ``field(default=False)``, a class attribute),
  base classes followed; a field some method of the class assigns is left unnamed.

A bare test (``if self.with_cp``) is named when the default is ``False``, ``None``, ``0`` or
``True``; a comparison (``if self.dropnet_ratio > 0``) names the default of its left side
when that is a literal.

Holds the record :class:`ConstructorSwitch`; :mod:`ckptlint.checkpoint.sites.ast_switch_defaults` reads the
defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConstructorSwitch"]


@dataclass(frozen=True)
class ConstructorSwitch:
    """A switch a site needs on: ``self.<attribute>`` set once in ``__init__`` from
    ``<parameter>`` (``""``: set to the literal ``default``), whose default is ``default`` (its
    source text: ``False``, ``None``, ``0``, ``True``, or another literal), and the other methods
    of the class that set it (``setters``: timm's ``set_grad_checkpointing(self, enable=True)``)."""

    attribute: str
    parameter: str
    default: str
    setters: tuple[str, ...] = ()

    def set_by(self) -> str:
        """``"; set by `set_grad_checkpointing()`"`` when other methods set it, else ``""``."""
        return "; set by " + " or ".join(f"`{name}()`" for name in self.setters) if self.setters else ""


