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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.semantic.assignments import BINDING_NODES, assignments, attribute_name
from ckptlint.semantic.bindings import BindingKind
from ckptlint.semantic.syntax import last_name
from ckptlint.semantic.walk import iter_tree

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["ConstructorSwitch", "SwitchReader"]

#: Defaults a bare truth test is named with.
_SWITCH_DEFAULTS = frozenset({"False", "None", "True", "0"})
#: Names that hold an argparse namespace when they are parameters or ``self`` attributes.
_NAMESPACE_NAMES = frozenset({"args", "opt", "opts", "options", "cli_args", "cmd_args"})
#: Calls whose result is an argparse namespace (``parse_known_args`` as ``[0]`` or unpacked).
_PARSE_CALLS = frozenset({"parse_args", "parse_known_args"})
#: How many base classes (and re-exports) are followed to find a config field.
_MAX_HOPS = 3


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


class SwitchReader:
    """Reads the switches among the conjuncts of the tests around a node of ``analysis``, in
    ``function`` (``None`` at module level) of class ``cls`` (``None`` outside a class)."""

    def __init__(self, analysis: ModuleAnalysis, function: cst.FunctionDef | None, cls: cst.ClassDef | None) -> None:
        self.analysis = analysis
        self.function = function
        self.cls = cls
        params = function.params.params if function is not None else ()
        self.self_name = params[0].name.value if params and cls is not None else None

    def part(self, conjunct: cst.BaseExpression) -> str | None:
        """The text that states ``conjunct`` with its default, or ``None`` when it is no
        switch whose default the module gives."""
        if isinstance(conjunct, cst.Comparison) and len(conjunct.comparisons) == 1:
            default = self.default(conjunct.left)
            if default is None:
                return None
            left = self.analysis.text_of(conjunct.left)
            return f"`{' '.join(self.analysis.text_of(conjunct).split())}` (`{left}` defaults to `{default}`)"
        set_by = ""
        if isinstance(conjunct, cst.Attribute) and self._is_self(conjunct.value) and self.cls is not None:
            switch = constructor_parameter(self.cls, conjunct.attr.value)
            if switch is None:
                switch = inherited_switch(self.analysis, self.cls, conjunct.attr.value)
            default, set_by = (switch.default, switch.set_by()) if switch is not None else (None, "")
        else:
            default = self.default(conjunct)
        if default is None or default not in _SWITCH_DEFAULTS:
            return None
        return f"`{' '.join(self.analysis.text_of(conjunct).split())}` is true (it defaults to `{default}`{set_by})"

    def default(self, expr: cst.BaseExpression) -> str | None:
        """The source text of the literal default of ``expr``, a switch (see the module
        docstring); ``None`` when unknown."""
        if isinstance(expr, cst.Name):
            if self.function is None or expr.value == self.self_name:
                return None
            return _parameter_default(self.function, expr.value)
        if not isinstance(expr, cst.Attribute):
            return None
        attr = expr.attr.value
        if self._is_self(expr.value) and self.cls is not None:
            switch = constructor_parameter(self.cls, attr)
            return switch.default if switch is not None else None
        if self._is_namespace(expr.value):
            found = argparse_default(self.analysis, attr)
            if found is not None:
                return found
        cls = self._config_class(expr.value)
        return config_field_default(*cls, attr) if cls is not None else None

    def _is_self(self, expr: cst.BaseExpression) -> bool:
        return self.self_name is not None and isinstance(expr, cst.Name) and expr.value == self.self_name

    def _is_namespace(self, root: cst.BaseExpression) -> bool:
        """Whether ``root`` holds the namespace an argparse parser returned."""
        if isinstance(root, cst.Attribute) and self._is_self(root.value):
            stored = _stored_from_parameter(self.cls, root.attr.value) if self.cls is not None else None
            return root.attr.value in _NAMESPACE_NAMES and isinstance(stored, cst.Param) and _namespace_annotation(stored)
        if not isinstance(root, cst.Name):
            return False
        model = self.analysis.model
        bindings = model.bindings_at(root)
        if not bindings:
            return False
        for binding in bindings:
            if binding.kind is BindingKind.PARAMETER:
                if root.value not in _NAMESPACE_NAMES or not isinstance(binding.node, cst.Param) or not _namespace_annotation(binding.node):
                    return False
            elif not _parsed(binding.value if binding.value is not None else getattr(binding.node, "value", None)):
                return False
        return True

    def _config_class(self, root: cst.BaseExpression) -> tuple[ModuleAnalysis, cst.ClassDef] | None:
        """The class whose instance ``root`` holds, when the module says it."""
        annotation: cst.BaseExpression | None = None
        made: cst.BaseExpression | None = None
        if isinstance(root, cst.Attribute) and self._is_self(root.value) and self.cls is not None:
            stored = _stored_from_parameter(self.cls, root.attr.value)
            if isinstance(stored, cst.Param) and stored.annotation is not None:
                annotation = stored.annotation.annotation
            elif isinstance(stored, cst.Call):
                made = stored.func
        elif isinstance(root, cst.Name):
            bindings = self.analysis.model.bindings_at(root)
            if len(bindings) != 1:
                return None
            (binding,) = bindings
            if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, cst.Param) and binding.node.annotation:
                annotation = binding.node.annotation.annotation
            elif binding.kind is BindingKind.ASSIGNMENT and isinstance(binding.value, cst.Call):
                made = binding.value.func
        target = _unwrapped(annotation) if annotation is not None else made
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return None
        return _class_named(self.analysis, target, 0)


def constructor_parameter(cls: cst.ClassDef, attr: str) -> ConstructorSwitch | None:
    """``self.attr`` as a switch of ``cls``: assigned once, in ``__init__``, from a parameter
    with a literal default; or set in ``__init__`` to a literal (timm's ``self.grad_checkpointing
    = False``) and by other methods of the class (its setters, named); ``None`` otherwise."""
    stored = _stored_from_parameter(cls, attr)
    if isinstance(stored, cst.Param):
        init = _init_of(cls)
        # `if with_cp is None: with_cp = True` before `self.with_cp = with_cp`: not the default
        default = _parameter_default(init, stored.name.value) if init is not None else None
        return ConstructorSwitch(attr, stored.name.value, default) if default is not None else None
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        return None
    in_init = _self_assignments(init, attr)
    literal = _literal(in_init[0]) if len(in_init) == 1 and _top_level_assignment(init, attr) else None
    if literal is None:
        return None
    setters = tuple(
        dict.fromkeys(
            s.name.value
            for s in cls.body.body
            if isinstance(s, cst.FunctionDef) and s is not init and _self_assignments(s, attr)
        )
    )
    if any(isinstance(n, cst.Attribute) and n.attr.value in setters for n in iter_tree(init.body)):
        return None  # `self.set_cp()` in `__init__` decides the value a new instance has
    return ConstructorSwitch(attr, "", literal, setters[:2])


def inherited_switch(analysis: ModuleAnalysis, cls: cst.ClassDef, attr: str, hops: int = 0) -> ConstructorSwitch | None:
    """``self.attr`` as a switch that ``cls`` (of ``analysis``'s module) inherits: ``cls`` never
    assigns it, and its base class (of the module or of one it imports,
    :func:`_class_named`) stores it from an ``__init__`` parameter that ``cls`` leaves at its
    default -- ``cls`` has no ``__init__``, or its ``__init__`` has no parameter of that name
    and calls ``super().__init__(...)`` with neither that keyword nor enough positional
    arguments to reach it (mmpose's ResNeSt ``Bottleneck(_Bottleneck)`` passes ``**kwargs``
    on, and ``with_cp=False`` is the base's). ``None`` otherwise, and for a class with several
    bases."""
    if hops > _MAX_HOPS or len(cls.bases) != 1 or _assigns_anywhere(cls, attr):
        return None
    found = _class_named(analysis, cls.bases[0].value, hops)
    if found is None:
        return None
    base_analysis, base = found
    switch = constructor_parameter(base, attr) or inherited_switch(base_analysis, base, attr, hops + 1)
    if switch is None or (switch.parameter and not _leaves_default(cls, base, switch.parameter)):
        return None
    return switch


def _assigns_anywhere(cls: cst.ClassDef, attr: str) -> bool:
    return any(isinstance(s, cst.FunctionDef) and _self_assignments(s, attr) for s in cls.body.body)


def _init_of(cls: cst.ClassDef) -> cst.FunctionDef | None:
    return next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)


def _leaves_default(cls: cst.ClassDef, base: cst.ClassDef, parameter: str) -> bool:
    """Whether constructing ``cls`` leaves ``base.__init__``'s ``parameter`` at its default."""
    init = _init_of(cls)
    if init is None:
        return True
    names = [p.name.value for p in (*init.params.params, *init.params.kwonly_params)]
    if parameter in names:
        return False
    supers = [
        node
        for node in iter_tree(init.body)
        if isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "__init__"
    ]
    base_init = _init_of(base)
    if len(supers) != 1 or base_init is None:
        return False
    positions = [p.name.value for p in base_init.params.params][1:]  # after self
    if parameter not in positions and parameter not in [p.name.value for p in base_init.params.kwonly_params]:
        return False
    args = supers[0].args
    if any(a.star == "*" for a in args) or any(a.keyword is not None and a.keyword.value == parameter for a in args):
        return False
    if not _kwargs_passed_untouched(init, supers[0], parameter):
        return False
    positional = sum(1 for a in args if a.keyword is None and not a.star)
    return parameter not in positions or positional <= positions.index(parameter)


def _kwargs_passed_untouched(init: cst.FunctionDef, call: cst.Call, parameter: str) -> bool:
    """Whether ``init`` hands its ``**`` parameter to ``call`` as it came (no
    ``kwargs.setdefault(...)``, ``kwargs[...] = ...``, ``kwargs.update(...)``, no other ``**``
    argument, no text naming ``parameter``): what the caller did not pass keeps the base
    class's default."""
    star = init.params.star_kwarg
    doubles = [a for a in call.args if a.star == "**"]
    if any(not (isinstance(a.value, cst.Name) and star is not None and a.value.value == star.name.value) for a in doubles):
        return False
    names = [n for n in iter_tree(init.body) if isinstance(n, cst.Name)]
    if star is not None and any(n.value == star.name.value for n in names if not any(n is a.value for a in doubles)):
        return False
    strings = [n for n in iter_tree(init.body) if isinstance(n, cst.SimpleString)]
    return not any(parameter in s.value for s in strings) and not any(n.value == parameter for n in names)


def _stored_from_parameter(cls: cst.ClassDef, attr: str) -> cst.Param | cst.Call | None:
    """What the only assignment of ``self.attr`` in ``cls`` (in ``__init__``) stores: the
    ``__init__`` parameter it copies, or the call it makes; ``None`` otherwise."""
    assigned: list[tuple[cst.FunctionDef, cst.BaseExpression]] = []
    init = None
    for statement in cls.body.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        if statement.name.value == "__init__":
            init = statement
        for node in _self_assignments(statement, attr):
            assigned.append((statement, node))
    if init is None or len(assigned) != 1 or assigned[0][0] is not init:
        return None
    value = assigned[0][1]
    if isinstance(value, cst.Call):
        return value
    if not isinstance(value, cst.Name):
        return None
    for param in (*init.params.params, *init.params.kwonly_params):
        if param.name.value == value.value:
            return param
    return None


def _parameter_default(function: cst.FunctionDef, name: str) -> str | None:
    """The literal default of ``function``'s parameter ``name`` when the function never
    rebinds it, else ``None``."""
    for param in (*function.params.params, *function.params.kwonly_params):
        if param.name.value != name:
            continue
        text = _literal(param.default)
        return None if text is None or rebinds(function, name) else text
    return None


def rebinds(function: cst.FunctionDef, name: str) -> bool:
    """Whether ``function``'s body binds the plain name ``name`` anywhere (an assignment, a
    loop target, ``with ... as``, ...: every form of :func:`~ckptlint.semantic.assignments.assignments`)."""
    return any(
        type(node) in BINDING_NODES and any(_target_name(a) == name for a in assignments(node)) for node in iter_tree(function.body)
    )


def argparse_default(analysis: ModuleAnalysis, dest: str) -> str | None:
    """The default the module's ``add_argument`` calls give the destination ``dest``."""
    index = analysis.derived.get("argparse_defaults")
    if not isinstance(index, dict):
        index = analysis.derived["argparse_defaults"] = _argparse_defaults(analysis.module)
    found = index.get(dest)
    return found if isinstance(found, str) else None


def _argparse_defaults(module: cst.Module) -> dict[str, str | None]:
    """Each destination's default over the module's ``add_argument`` calls; ``None`` for a
    destination whose default is not one literal."""
    defaults: dict[str, str | None] = {}
    for node in iter_tree(module):
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            continue
        method = node.func.attr.value
        keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
        if method == "set_defaults":
            for keyword in keywords:
                defaults[keyword] = None
            continue
        if method != "add_argument":
            continue
        dest = _destination(node, keywords)
        if dest is None:
            continue
        action = keywords.get("action")
        action_name = action.evaluated_value if isinstance(action, cst.SimpleString) else None
        if "default" in keywords:
            default = _literal(keywords["default"])
        elif action is None:
            default = "None"
        elif action_name == "store_true":
            default = "False"
        elif action_name == "store_false":
            default = "True"
        else:
            default = None
        if dest in defaults and defaults[dest] != default:
            default = None
        defaults[dest] = default
    return defaults


def _destination(call: cst.Call, keywords: dict[str, cst.BaseExpression]) -> str | None:
    """Where ``add_argument`` stores its value: ``dest=``, else the first long option with
    ``-`` made ``_`` (argparse's rule), else a positional's name."""
    dest = keywords.get("dest")
    if dest is not None:
        return dest.evaluated_value if isinstance(dest, cst.SimpleString) and isinstance(dest.evaluated_value, str) else None
    options = [
        arg.value.evaluated_value
        for arg in call.args
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString) and isinstance(arg.value.evaluated_value, str)
    ]
    for option in options:
        if option.startswith("--"):
            return option[2:].replace("-", "_")
    return None


def config_field_default(analysis: ModuleAnalysis, cls: cst.ClassDef, field: str, hops: int = 0) -> str | None:
    """The literal default of ``field`` in config class ``cls`` (of ``analysis``) or, when it
    does not declare it, in its base classes; ``None`` when unknown or when a method of the
    class assigns it."""
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef) and _self_assignments(statement, field):
            return None
    for statement in cls.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            value = _class_field(small, field)
            if value is not None:
                return _field_default(value)
    if hops >= _MAX_HOPS:
        return None
    for base in cls.bases:
        found = _class_named(analysis, base.value, hops + 1)
        if found is not None:
            default = config_field_default(*found, field, hops + 1)
            if default is not None:
                return default
    return None


def _class_field(small: cst.BaseSmallStatement, field: str) -> cst.BaseExpression | None:
    """The value ``small`` (a statement of a class body) gives ``field``, if it assigns it."""
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == field:
        return small.value
    if isinstance(small, cst.Assign):
        for target in small.targets:
            if isinstance(target.target, cst.Name) and target.target.value == field:
                return small.value
    return None


def _field_default(value: cst.BaseExpression) -> str | None:
    """``False`` for ``False``, ``field(default=False)``, ``Field(default=False)``."""
    if isinstance(value, cst.Call) and last_name(value.func) in ("field", "Field"):
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "default":
                return _literal(arg.value)
        return None
    return _literal(value)


def _class_named(analysis: ModuleAnalysis, expr: cst.BaseExpression, hops: int) -> tuple[ModuleAnalysis, cst.ClassDef] | None:
    """The class ``expr`` names, defined in ``analysis``'s module or in one it imports."""
    for qualified in sorted(analysis.model.qualified_names(expr)):
        found = _class_definition(analysis, qualified, hops)
        if found is not None:
            return found
    return None


def _class_definition(analysis: ModuleAnalysis, qualified: str, hops: int) -> tuple[ModuleAnalysis, cst.ClassDef] | None:
    module, _, name = qualified.rpartition(".")
    if module != analysis.model.module_name and analysis.model.module_name:
        project = analysis.project
        if project is None or not module or hops > _MAX_HOPS or qualified.startswith(("torch.", "builtins.", "transformers.")):
            return None
        if project.file_for_module(module) is None:
            return None
        other = project.analysis_for_names(module, [name])
        if other is None:
            return None
        analysis = other
    for binding in analysis.model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, cst.ClassDef):
            return analysis, binding.node
        if binding.kind is BindingKind.IMPORT and binding.target and binding.target != qualified:
            return _class_definition(analysis, binding.target, hops + 1)
    return None


def _namespace_annotation(param: cst.Param) -> bool:
    """Whether ``param`` may hold an argparse namespace: no annotation, or ``Namespace``."""
    return param.annotation is None or last_name(param.annotation.annotation) == "Namespace"


def _parsed(value: cst.BaseExpression | None) -> bool:
    """Whether ``value`` is an argparse namespace: ``parser.parse_args()``, a call of a
    function named ``parse_args``, ``parse_known_args()[0]`` (or unpacked)."""
    if isinstance(value, cst.Subscript):
        value = value.value
    return isinstance(value, cst.Call) and last_name(value.func) in _PARSE_CALLS


def _unwrapped(annotation: cst.BaseExpression) -> cst.BaseExpression | None:
    """``C`` for ``C``, ``Optional[C]`` and ``C | None``."""
    if isinstance(annotation, cst.Subscript) and last_name(annotation.value) == "Optional" and len(annotation.slice) == 1:
        index = annotation.slice[0].slice
        return index.value if isinstance(index, cst.Index) else None
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        if isinstance(annotation.right, cst.Name) and annotation.right.value == "None":
            return annotation.left
        return None
    return annotation


def _literal(value: cst.BaseExpression | None) -> str | None:
    """The source text of a literal default: ``False``, ``None``, ``True``, a number (signed),
    a string; ``None`` for anything else."""
    if isinstance(value, cst.Name) and value.value in ("False", "None", "True"):
        return value.value
    if isinstance(value, (cst.Integer, cst.Float)):
        return value.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        number = value.expression
        return "-" + number.value if isinstance(number, (cst.Integer, cst.Float)) else None
    if isinstance(value, cst.SimpleString):
        return value.value
    return None


def _target_name(assigned: object) -> str | None:
    target = getattr(assigned, "target", None)
    return target.value if isinstance(target, cst.Name) else None


def _top_level_assignment(function: cst.FunctionDef, attr: str) -> bool:
    """Whether a statement of ``function``'s own body (not one nested in ``if``, a loop, ``try``
    or ``with``) assigns ``<first parameter>.attr``: it runs on every call."""
    if not function.params.params:
        return False
    self_name = function.params.params[0].name.value
    return any(
        type(small) in BINDING_NODES and any(attribute_name(a, self_name) == attr for a in assignments(small))
        for line in function.body.body
        if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
    )


def _self_assignments(function: cst.FunctionDef, attr: str) -> list[cst.BaseExpression]:
    """The values assigned to ``<first parameter>.attr`` in ``function``, in every binding form
    (:func:`~ckptlint.semantic.assignments.assignments`); a target that does not get a whole
    value (augmented, unpacked from a call) counts as ``...``: it is not a plain copy."""
    if not function.params.params:
        return []
    self_name = function.params.params[0].name.value
    return [
        assigned.whole or cst.Ellipsis()
        for node in iter_tree(function.body)
        if type(node) in BINDING_NODES
        for assigned in assignments(node)
        if attribute_name(assigned, self_name) == attr
    ]
