"""The defaults of the switches a guard tests, on CPython's ``ast`` (the rules and texts are
described in :mod:`ckptlint.checkpoint.sites.switch_defaults`): ``self.X`` stored once by
``__init__`` from a parameter with a literal default (or set there to a literal, other
methods being its setters), inherited from a base class of the module or of a module the
linted tree holds (through ``analysis.project``), a parameter of the function never rebound,
``args.X`` of an ``argparse`` parser of the module, ``config.X`` of a config class.

Where ``ast`` keeps too little the source text is read: a string literal is one token of the
source (``"a" "b"`` is one ``Constant`` in ``ast`` but no literal default here), a body
written on its header's line (``class C: x = 1``) holds no statement lines, and every
identifier written in the source (attribute names, keywords, parameters, ``def`` names,
imported names) counts where names are looked for (:func:`identifiers`).
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ckptlint.checkpoint.sites.switch_defaults import ConstructorSwitch
from ckptlint.semantic.ast_assignments import assignments, attribute_name
from ckptlint.semantic.ast_lines import body_on_header
from ckptlint.semantic.ast_model import AstModel
from ckptlint.semantic.ast_subscripts import one_index
from ckptlint.semantic.ast_walk import FUNCTIONS, child_nodes, last_name
from ckptlint.semantic.bindings import BindingKind

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis

__all__ = [
    "SwitchReader",
    "argparse_default",
    "config_field_default",
    "constructor_parameter",
    "identifiers",
    "inherited_switch",
    "literal_text",
    "parameter_default",
    "rebinds",
]

AstFunction = ast.FunctionDef | ast.AsyncFunctionDef

_SWITCH_DEFAULTS = frozenset({"False", "None", "True", "0"})
_NAMESPACE_NAMES = frozenset({"args", "opt", "opts", "options", "cli_args", "cmd_args"})
_PARSE_CALLS = frozenset({"parse_args", "parse_known_args"})
_MAX_HOPS = 3
#: What :func:`_self_assignments` lists for a target that gets no whole value.
_NOT_WHOLE = ast.Constant(value=...)


class SwitchReader:
    """Reads the switches among the conjuncts of the tests around a node of ``analysis``, in
    ``function`` (``None`` at module level) of class ``cls`` (``None`` outside a class)."""

    def __init__(self, analysis: AstAnalysis, function: AstFunction | None, cls: ast.ClassDef | None) -> None:
        self.analysis = analysis
        self.function = function
        self.cls = cls
        params = function.args.args if function is not None else []
        self.self_name = params[0].arg if params and cls is not None else None

    def part(self, conjunct: ast.expr) -> str | None:
        """The text that states ``conjunct`` with its default, or ``None`` when it is no
        switch whose default the module gives."""
        text_of = self.analysis.text_of
        if isinstance(conjunct, ast.Compare) and len(conjunct.ops) == 1:
            default = self.default(conjunct.left)
            if default is None:
                return None
            return f"`{' '.join(text_of(conjunct).split())}` (`{text_of(conjunct.left)}` defaults to `{default}`)"
        set_by = ""
        if isinstance(conjunct, ast.Attribute) and self._is_self(conjunct.value) and self.cls is not None:
            switch = constructor_parameter(self.analysis, self.cls, conjunct.attr)
            if switch is None:
                switch = inherited_switch(self.analysis, self.cls, conjunct.attr)
            default, set_by = (switch.default, switch.set_by()) if switch is not None else (None, "")
        else:
            default = self.default(conjunct)
        if default is None or default not in _SWITCH_DEFAULTS:
            return None
        return f"`{' '.join(text_of(conjunct).split())}` is true (it defaults to `{default}`{set_by})"

    def default(self, expr: ast.expr) -> str | None:
        """The source text of the literal default of ``expr``, a switch; ``None`` when unknown."""
        if isinstance(expr, ast.Name):
            if self.function is None or expr.id == self.self_name:
                return None
            return parameter_default(self.analysis, self.function, expr.id)
        if not isinstance(expr, ast.Attribute):
            return None
        attr = expr.attr
        if self._is_self(expr.value) and self.cls is not None:
            switch = constructor_parameter(self.analysis, self.cls, attr)
            return switch.default if switch is not None else None
        if self._is_namespace(expr.value):
            found = argparse_default(self.analysis, attr)
            if found is not None:
                return found
        cls = self._config_class(expr.value)
        return config_field_default(*cls, attr) if cls is not None else None

    def _is_self(self, expr: ast.expr) -> bool:
        return self.self_name is not None and isinstance(expr, ast.Name) and expr.id == self.self_name

    def _is_namespace(self, root: ast.expr) -> bool:
        """Whether ``root`` holds the namespace an argparse parser returned."""
        if isinstance(root, ast.Attribute) and self._is_self(root.value):
            stored = _stored_from_parameter(self.analysis, self.cls, root.attr) if self.cls is not None else None
            return root.attr in _NAMESPACE_NAMES and isinstance(stored, ast.arg) and _namespace_annotation(stored)
        if not isinstance(root, ast.Name):
            return False
        bindings = self.analysis.model.bindings_at(root)
        if not bindings:
            return False
        for binding in bindings:
            if binding.kind is BindingKind.PARAMETER:
                if root.id not in _NAMESPACE_NAMES or not isinstance(binding.node, ast.arg) or not _namespace_annotation(binding.node):
                    return False
            elif not _parsed(binding.value if binding.value is not None else getattr(binding.node, "value", None)):
                return False
        return True

    def _config_class(self, root: ast.expr) -> tuple[AstAnalysis, ast.ClassDef] | None:
        """The class whose instance ``root`` holds, when the module says it."""
        annotation: ast.expr | None = None
        made: ast.expr | None = None
        if isinstance(root, ast.Attribute) and self._is_self(root.value) and self.cls is not None:
            stored = _stored_from_parameter(self.analysis, self.cls, root.attr)
            if isinstance(stored, ast.arg) and stored.annotation is not None:
                annotation = stored.annotation
            elif isinstance(stored, ast.Call):
                made = stored.func
        elif isinstance(root, ast.Name):
            bindings = self.analysis.model.bindings_at(root)
            if len(bindings) != 1:
                return None
            (binding,) = bindings
            if binding.kind is BindingKind.PARAMETER and isinstance(binding.node, ast.arg) and binding.node.annotation:
                annotation = binding.node.annotation
            elif binding.kind is BindingKind.ASSIGNMENT and isinstance(binding.value, ast.Call):
                made = binding.value.func
        target = _unwrapped(annotation, self.analysis.model) if annotation is not None else made
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        return _class_named(self.analysis, target, 0)


def constructor_parameter(analysis: AstAnalysis, cls: ast.ClassDef, attr: str) -> ConstructorSwitch | None:
    """``self.attr`` as a switch of ``cls`` (of ``analysis``): assigned once, in ``__init__``,
    from a parameter with a literal default; or set in ``__init__`` to a literal (timm's
    ``self.grad_checkpointing = False``) and by other methods of the class (its setters,
    named); ``None`` otherwise."""
    stored = _stored_from_parameter(analysis, cls, attr)
    init = _init_of(cls)
    if isinstance(stored, ast.arg):
        default = parameter_default(analysis, init, stored.arg) if init is not None else None
        return ConstructorSwitch(attr, stored.arg, default) if default is not None else None
    if init is None:
        return None
    in_init = _self_assignments(analysis, init, attr)
    literal = literal_text(analysis, in_init[0]) if len(in_init) == 1 and _top_level_assignment(analysis, init, attr) else None
    if literal is None:
        return None
    setters = tuple(
        dict.fromkeys(s.name for s in cls.body if isinstance(s, FUNCTIONS) and s is not init and _self_assignments(analysis, s, attr))
    )
    if any(isinstance(n, ast.Attribute) and n.attr in setters for n in _walk(init.body)):
        return None  # `self.set_cp()` in `__init__` decides the value a new instance has
    return ConstructorSwitch(attr, "", literal, setters[:2])


def inherited_switch(analysis: AstAnalysis, cls: ast.ClassDef, attr: str, hops: int = 0) -> ConstructorSwitch | None:
    """``self.attr`` as a switch that ``cls`` (of ``analysis``) inherits: ``cls`` never
    assigns it, and its one base class (of the module or of one the linted tree holds) stores
    it from an ``__init__`` parameter that ``cls`` leaves at its default -- ``cls`` has no
    ``__init__``, or its ``__init__`` has no parameter of that name and calls
    ``super().__init__(...)`` with neither that keyword nor enough positional arguments to
    reach it. ``None`` otherwise, and for a class with several bases."""
    if hops > _MAX_HOPS or len(cls.bases) != 1 or _assigns_anywhere(analysis, cls, attr):
        return None
    base_expr = cls.bases[0]
    found = _class_named(analysis, base_expr.value if isinstance(base_expr, ast.Starred) else base_expr, hops)
    if found is None:
        return None
    base_analysis, base = found
    switch = constructor_parameter(base_analysis, base, attr) or inherited_switch(base_analysis, base, attr, hops + 1)
    if switch is None or (switch.parameter and not _leaves_default(analysis, cls, base, switch.parameter)):
        return None
    return switch


def _assigns_anywhere(analysis: AstAnalysis, cls: ast.ClassDef, attr: str) -> bool:
    return any(isinstance(s, FUNCTIONS) and _self_assignments(analysis, s, attr) for s in cls.body)


def _init_of(cls: ast.ClassDef) -> AstFunction | None:
    return next((s for s in cls.body if isinstance(s, FUNCTIONS) and s.name == "__init__"), None)


def _leaves_default(analysis: AstAnalysis, cls: ast.ClassDef, base: ast.ClassDef, parameter: str) -> bool:
    """Whether constructing ``cls`` leaves ``base.__init__``'s ``parameter`` at its default."""
    init = _init_of(cls)
    if init is None:
        return True
    if parameter in [p.arg for p in (*init.args.args, *init.args.kwonlyargs)]:
        return False
    supers = [
        node
        for node in _walk(init.body)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"
    ]
    base_init = _init_of(base)
    if len(supers) != 1 or base_init is None:
        return False
    positions = [p.arg for p in base_init.args.args][1:]  # after self
    if parameter not in positions and parameter not in [p.arg for p in base_init.args.kwonlyargs]:
        return False
    call = supers[0]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg == parameter for k in call.keywords):
        return False
    if not _kwargs_passed_untouched(analysis, init, call, parameter):
        return False
    return parameter not in positions or len(call.args) <= positions.index(parameter)


def _kwargs_passed_untouched(analysis: AstAnalysis, init: AstFunction, call: ast.Call, parameter: str) -> bool:
    """Whether ``init`` hands its ``**`` parameter to ``call`` as it came (see
    ``switch_defaults._kwargs_passed_untouched``)."""
    star = init.args.kwarg
    doubles = [k.value for k in call.keywords if k.arg is None]
    if any(not (isinstance(d, ast.Name) and star is not None and d.id == star.arg) for d in doubles):
        return False
    names = list(identifiers(init.body))
    if star is not None and any(name == star.arg for carrier, name in names if not any(carrier is d for d in doubles)):
        return False
    return not any(parameter in text for text in _string_values(analysis, init.body)) and not any(name == parameter for _, name in names)


def _string_values(analysis: AstAnalysis, nodes: list[ast.stmt]) -> Iterator[str]:
    """The string and bytes literals of ``nodes`` as the source writes them: the
    source token of each (prefix, quotes and escapes kept, an implicit concatenation split
    into its tokens), not the text parts of f-strings but the plain strings an f-string is
    concatenated with (``"with_cp" f"{x}"``)."""
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr):
            yield from _plain_string_tokens(analysis.text_of(node))
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    stack += [part.value, *([part.format_spec] if part.format_spec is not None else [])]
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            yield from _plain_string_tokens(analysis.text_of(node))  # `"with_" "cp"`: two tokens
        stack.extend(ast.iter_child_nodes(node))


def _plain_string_tokens(text: str) -> list[str]:
    """The string tokens of ``text`` that are no f-string."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(f"({text})").readline))  # its lines joined
    except (tokenize.TokenError, SyntaxError):
        return []
    return [t.string for t in tokens if t.type == tokenize.STRING and "f" not in t.string.split("'")[0].split('"')[0].lower()]


def _stored_from_parameter(analysis: AstAnalysis, cls: ast.ClassDef, attr: str) -> ast.arg | ast.Call | None:
    """What the only assignment of ``self.attr`` in ``cls`` (in ``__init__``) stores: the
    ``__init__`` parameter it copies, or the call it makes; ``None`` otherwise."""
    assigned: list[tuple[AstFunction, ast.expr]] = []
    init = None
    for statement in cls.body:
        if not isinstance(statement, FUNCTIONS):
            continue
        if statement.name == "__init__":
            init = statement
        for node in _self_assignments(analysis, statement, attr):
            assigned.append((statement, node))
    if init is None or len(assigned) != 1 or assigned[0][0] is not init:
        return None
    value = assigned[0][1]
    if isinstance(value, ast.Call):
        return value
    if not isinstance(value, ast.Name):
        return None
    for param in (*init.args.args, *init.args.kwonlyargs):
        if param.arg == value.id:
            return param
    return None


def parameter_default(analysis: AstAnalysis, function: AstFunction, name: str) -> str | None:
    """The literal default of ``function``'s parameter ``name`` (positional or keyword-only,
    not positional-only) when the function never rebinds it, else ``None``."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: dict[str, ast.expr | None] = {p.arg: None for p in arguments.args}
    for param, default in zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True):
        if param.arg in defaults:
            defaults[param.arg] = default
    for param, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        defaults.setdefault(param.arg, kw_default)
    if name not in defaults:
        return None
    text = literal_text(analysis, defaults[name])
    return None if text is None or rebinds(analysis, function, name) else text


def rebinds(analysis: AstAnalysis, function: AstFunction, name: str) -> bool:
    """Whether ``function``'s body (of ``analysis``'s module or another) binds the plain name
    ``name`` anywhere (every form of :func:`~ckptlint.semantic.ast_assignments.assignments`)."""
    return name in _facts(analysis, function)[0]


def argparse_default(analysis: AstAnalysis, dest: str) -> str | None:
    """The default the module's ``add_argument`` calls give the destination ``dest``."""
    index = analysis.derived.get("argparse_defaults")
    if not isinstance(index, dict):
        index = analysis.derived["argparse_defaults"] = _argparse_defaults(analysis)
    found = index.get(dest)
    return found if isinstance(found, str) else None


def _argparse_defaults(analysis: AstAnalysis) -> dict[str, str | None]:
    """Each destination's default over the module's ``add_argument`` calls; ``None`` for a
    destination whose default is not one literal."""
    defaults: dict[str, str | None] = {}
    for node in ast.walk(analysis.tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        if method == "set_defaults":
            for keyword in keywords:
                defaults[keyword] = None
            continue
        if method != "add_argument":
            continue
        dest = _destination(analysis, node, keywords)
        if dest is None:
            continue
        action = keywords.get("action")
        if "default" in keywords:
            default = literal_text(analysis, keywords["default"])
        elif action is None:
            default = "None"
        else:
            default = {"store_true": "False", "store_false": "True"}.get(_string(analysis, action) or "")
        if dest in defaults and defaults[dest] != default:
            default = None
        defaults[dest] = default
    return defaults


def _destination(analysis: AstAnalysis, call: ast.Call, keywords: dict[str, ast.expr]) -> str | None:
    """Where ``add_argument`` stores its value (``dest=``, the first long option, see
    ``switch_defaults._destination``)."""
    dest = keywords.get("dest")
    if dest is not None:
        return _string(analysis, dest)
    for arg in call.args:
        option = _string(analysis, arg)
        if option is not None and option.startswith("--"):
            return option[2:].replace("-", "_")
    return None


def config_field_default(analysis: AstAnalysis, cls: ast.ClassDef, field: str, hops: int = 0) -> str | None:
    """The literal default of ``field`` in config class ``cls`` (of ``analysis``) or its base
    classes (base classes followed; ``None`` when a method of the class assigns it)."""
    for statement in cls.body:
        if isinstance(statement, FUNCTIONS) and _self_assignments(analysis, statement, field):
            return None
    for statement in block_statements(analysis, cls.body):
        value = _class_field(statement, field)
        if value is not None:
            return _field_default(analysis, value)
    if hops >= _MAX_HOPS:
        return None
    for base in cls.bases:
        found = _class_named(analysis, base.value if isinstance(base, ast.Starred) else base, hops + 1)
        if found is not None:
            default = config_field_default(*found, field, hops + 1)
            if default is not None:
                return default
    return None


def block_statements(analysis: AstAnalysis, body: list[ast.stmt]) -> list[ast.stmt]:
    """``body``, or ``[]`` when it is written on its header's line (``class C: x = 1``: no
    statement lines are read there)."""
    return [] if body_on_header(analysis.model, body) else body


def _class_field(statement: ast.stmt, field: str) -> ast.expr | None:
    """The value ``statement`` (of a class body) gives ``field``, if it assigns it."""
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.target.id == field:
        return statement.value
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Name) and target.id == field:
                return statement.value
    return None


def _field_default(analysis: AstAnalysis, value: ast.expr) -> str | None:
    """``False`` for ``False``, ``field(default=False)``, ``Field(default=False)``."""
    if isinstance(value, ast.Call) and last_name(value.func) in ("field", "Field"):
        for keyword in value.keywords:
            if keyword.arg == "default":
                return literal_text(analysis, keyword.value)
        return None
    return literal_text(analysis, value)


def _class_named(analysis: AstAnalysis, expr: ast.expr, hops: int) -> tuple[AstAnalysis, ast.ClassDef] | None:
    """The class ``expr`` names, defined in ``analysis``'s module or in one it imports."""
    for qualified in sorted(analysis.model.qualified_names(expr)):
        found = _class_definition(analysis, qualified, hops)
        if found is not None:
            return found
    return None


def _class_definition(analysis: AstAnalysis, qualified: str, hops: int) -> tuple[AstAnalysis, ast.ClassDef] | None:
    module, _, name = qualified.rpartition(".")
    if module != analysis.module_name and analysis.module_name:
        project = analysis.project
        if project is None or not module or hops > _MAX_HOPS or qualified.startswith(("torch.", "builtins.", "transformers.")):
            return None
        if project.file_for_module(module) is None:
            return None
        other = project.ast_analysis_for_module(module)
        if other is None:
            return None
        analysis = other
    for binding in analysis.model.module_scope.bindings.get(name, ()):
        if binding.kind is BindingKind.CLASS and isinstance(binding.node, ast.ClassDef):
            return analysis, binding.node
        if binding.kind is BindingKind.IMPORT and binding.target and binding.target != qualified:
            return _class_definition(analysis, binding.target, hops + 1)
    return None


def _namespace_annotation(param: ast.arg) -> bool:
    """Whether ``param`` may hold an argparse namespace: no annotation, or ``Namespace``."""
    return param.annotation is None or last_name(param.annotation) == "Namespace"


def _parsed(value: object) -> bool:
    """Whether ``value`` is an argparse namespace (``parse_args()``, ``parse_known_args()[0]``)."""
    if isinstance(value, ast.Subscript):
        value = value.value
    return isinstance(value, ast.Call) and last_name(value.func) in _PARSE_CALLS


def _unwrapped(annotation: ast.expr, model: AstModel) -> ast.expr | None:
    """``C`` for ``C``, ``Optional[C]`` (``Optional[C,]`` too) and ``C | None``."""
    if isinstance(annotation, ast.Subscript) and last_name(annotation.value) == "Optional":
        return one_index(model, annotation)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        right = annotation.right
        return annotation.left if isinstance(right, ast.Constant) and right.value is None else None
    return annotation


def literal_text(analysis: AstAnalysis, value: ast.expr | None) -> str | None:
    """The source text of a literal default: ``False``, ``None``, ``True``, a number (signed
    with ``-``), a string written as one token; ``None`` for anything else."""
    if not isinstance(value, (ast.Constant, ast.UnaryOp)):
        return None
    if isinstance(value, ast.UnaryOp):
        number = value.operand
        if isinstance(value.op, ast.USub) and isinstance(number, ast.Constant) and _is_number(number.value):
            return "-" + analysis.text_of(number)
        return None
    constant = value.value
    if constant is None or isinstance(constant, bool):
        return str(constant)
    if _is_number(constant):
        return analysis.text_of(value)
    if isinstance(constant, (str, bytes)):
        text = analysis.text_of(value)
        return text if _one_string_token(text) else None
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _string(analysis: AstAnalysis, value: ast.expr) -> str | None:
    """The string a one-token string literal spells (one token, not bytes, not an
    f-string), else ``None``."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and _one_string_token(analysis.text_of(value)):
        return value.value
    return None


def _one_string_token(text: str) -> bool:
    """Whether ``text`` is one string literal token (not an implicit concatenation)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(f"({text})").readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(tokens) == 1


def _top_level_assignment(analysis: AstAnalysis, function: AstFunction, attr: str) -> bool:
    """Whether a statement of ``function``'s own body (not nested in another statement, nor
    written on the ``def`` line) assigns ``<first parameter>.attr``: it runs on every call."""
    if not function.args.args:
        return False
    self_name = function.args.args[0].arg
    return any(
        isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        and any(attribute_name(a, self_name) == attr for a in assignments(statement))
        for statement in block_statements(analysis, function.body)
    )


def _self_assignments(analysis: AstAnalysis, function: AstFunction, attr: str) -> list[ast.expr]:
    """The values assigned to ``<first parameter>.attr`` in ``function``, in every binding
    form; a target that does not get a whole value counts as ``...``."""
    return _facts(analysis, function)[1].get(attr, [])


_Facts = tuple[frozenset[str], dict[str, list[ast.expr]]]


def _facts(analysis: AstAnalysis, function: AstFunction) -> _Facts:
    """The plain names ``function``'s body binds and the values it assigns to each attribute
    of its first parameter, read in one walk and kept in ``analysis.derived`` (the function
    may be of another module: the facts depend on its nodes alone)."""
    memo = analysis.derived.setdefault("function_facts", {})
    assert isinstance(memo, dict)
    found = memo.get(function)
    if found is not None:
        return found
    self_name = function.args.args[0].arg if function.args.args else None
    names: set[str] = set()
    attributes: dict[str, list[ast.expr]] = {}
    for node in _walk(function.body):
        for assigned in assignments(node):
            if isinstance(assigned.target, ast.Name):
                names.add(assigned.target.id)
            attr = attribute_name(assigned, self_name) if self_name is not None else None
            if attr is not None:
                attributes.setdefault(attr, []).append(assigned.whole or _NOT_WHOLE)
    memo[function] = found = (frozenset(names), attributes)
    return found


def _walk(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node of ``nodes`` and below them (nested functions and classes included)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child_nodes(node))


def identifiers(nodes: ast.AST | Iterable[ast.AST]) -> Iterator[tuple[ast.AST, str]]:
    """Every identifier written in ``nodes`` and below them, with the
    ``ast`` node that holds it: names read or bound, attribute names, keyword argument names,
    parameters, ``def`` and ``class`` names, imported names and modules (each dotted part),
    ``as`` names, ``global``/``nonlocal`` names and names bound by ``match`` patterns."""
    for node in _walk([nodes] if isinstance(nodes, ast.AST) else nodes):
        if isinstance(node, ast.Name):
            yield node, node.id
        elif isinstance(node, ast.Attribute):
            yield node, node.attr
        elif isinstance(node, (ast.keyword, ast.arg)):
            if node.arg is not None:
                yield node, node.arg
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            yield node, node.name
        elif isinstance(node, ast.alias):
            for part in [*node.name.split("."), *([node.asname] if node.asname else [])]:
                if part != "*":
                    yield node, part
        elif isinstance(node, ast.ImportFrom) and node.module:
            for part in node.module.split("."):
                yield node, part
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                yield node, name
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            if node.name:
                yield node, node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node, node.rest
        elif isinstance(node, ast.MatchClass):
            for name in node.kwd_attrs:
                yield node, name
