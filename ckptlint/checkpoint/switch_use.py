"""Whether a constructor switch that guards a checkpoint site is ever turned on in its project.

mm-style backbones checkpoint only ``if self.with_cp``, ``self.with_cp`` being a constructor
parameter that defaults to ``False``. Judge 11 rated 34 of 56 region findings on 32
repositories debatable for this one reason: SegFormer's and ViTPose's vendored mmseg/mmpose
backbones (BatchNorm under ``with_cp``) and Pointcept's ``enable_checkpoint`` are never turned
on by any config, script or code of the repository. So a region finding at a site guarded so
(:func:`constructor_switches`) is reported only when the project turns one of its switches on
somewhere (:func:`switch_turned_on`), by name, in any text file of the project
(:data:`~ckptlint.checkpoint.definition_use.PROJECT_TEXT_SUFFIXES`), outside comments:

- ``with_cp=V``, ``with_cp: V``, ``"with_cp": V``, ``cfg["with_cp"] = V``, ``x.with_cp = V``
  (keyword, YAML/JSON key, annotated default, item or attribute) with ``V`` anything but
  ``False``/``false``/``None``/``null``/``0`` and the switch itself passed on
  (``with_cp=with_cp``, ``with_cp=self.with_cp``) or read back under its own name with an off
  default (``cfg.get('with_cp', False)``, ``getattr(cfg, "with_cp", None)``, ``args.with_cp``,
  ``cfg["with_cp"]``: where that is set, it is set by the same name): ``with_cp=True``,
  ``use_checkpoint=config.TRAIN.USE_CHECKPOINT`` and ``with_cp=args.cp`` all count;
- a command-line flag ``--with_cp`` / ``--with-cp``.

A switch passed positionally or through ``**kwargs`` built at run time is not seen. Without a
project root (see :mod:`~ckptlint.checkpoint.definition_use`), for source not on disk and past
:data:`~ckptlint.checkpoint.autocast_reach.MAX_FILES` files the switch counts as turned on.
Each switch name is searched once per run; an answer "on" records the file that says so, "never
on" every file searched (for the cache).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from ckptlint.checkpoint.class_summary import self_attribute
from ckptlint.checkpoint.definition_use import files_holding, project_of, scanned_once

if TYPE_CHECKING:
    from ckptlint.checkpoint.site import CheckpointSite
    from ckptlint.semantic.analysis import ModuleAnalysis
    from ckptlint.semantic.project import Project

__all__ = ["constructor_switches", "switch_turned_on"]

#: Values that leave a switch off.
_OFF = frozenset({b"False", b"false", b"None", b"null", b"0", b"'False'", b'"False"', b"'false'", b'"false"', b"~"})

def constructor_switches(analysis: ModuleAnalysis, site: CheckpointSite) -> list[frozenset[str]]:
    """The switches that must be on for ``site`` to run, each as the names it goes by
    (``{"with_cp"}``; ``{"use_chk", "use_checkpoint"}`` for ``self.use_chk = use_checkpoint``):
    ``self.X`` read in a conjunct of the test of an ``if`` (statement or expression) whose
    branch holds the site (``not self.X`` for the ``else`` branch), where the class's
    ``__init__`` assigns ``self.X`` once, from a parameter whose default is ``False``, ``None``
    or ``0``, and no other method of the class assigns it."""
    model = analysis.model
    function = cls = None
    below: cst.CSTNode = site.call
    tests: list[tuple[cst.BaseExpression, bool]] = []
    for ancestor in model.ancestors(site.call):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and below is not ancestor.test and function is None:
            tests.append((ancestor.test, below is ancestor.body))
        elif isinstance(ancestor, (cst.FunctionDef, cst.Lambda)) and function is None:
            function = ancestor
        elif isinstance(ancestor, cst.ClassDef):
            cls = ancestor
            break
        below = ancestor
    if not tests or not isinstance(function, cst.FunctionDef) or cls is None or not function.params.params:
        return []
    self_name = function.params.params[0].name.value
    switches = []
    for test, in_body in tests:
        for attr in _guard_attributes(test, self_name, in_body):
            names = _constructor_parameter(cls, attr)
            if names is not None:
                switches.append(names)
    return switches


def _guard_attributes(test: cst.BaseExpression, self_name: str, in_body: bool) -> list[str]:
    if in_body and isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _guard_attributes(test.left, self_name, True) + _guard_attributes(test.right, self_name, True)
    if not in_body:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return _guard_attributes(test.expression, self_name, True)
        return []
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == self_name:
        return [test.attr.value]
    return []


def _constructor_parameter(cls: cst.ClassDef, attr: str) -> frozenset[str] | None:
    assigned: list[tuple[cst.FunctionDef, cst.BaseExpression]] = []
    init = None
    for statement in cls.body.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        if statement.name.value == "__init__":
            init = statement
        for node in _self_assignments(statement, attr):
            assigned.append((statement, node))
    if init is None or len(assigned) != 1 or assigned[0][0] is not init or not isinstance(assigned[0][1], cst.Name):
        return None
    parameter = assigned[0][1].value
    for param in (*init.params.params, *init.params.kwonly_params):
        if param.name.value == parameter:
            default = param.default
            off = (isinstance(default, cst.Name) and default.value in ("False", "None")) or (
                isinstance(default, cst.Integer) and default.value == "0"
            )
            return frozenset({attr, parameter}) if off else None
    return None


def _self_assignments(function: cst.FunctionDef, attr: str) -> list[cst.BaseExpression]:
    """The values assigned to ``<first parameter>.attr`` in ``function`` (an augmented or
    annotated-only assignment counts, its value being ``None``-like: it is not a plain copy)."""
    if not function.params.params:
        return []
    self_name = function.params.params[0].name.value
    found: list[cst.BaseExpression] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                for element in _elements(target.target):
                    if self_attribute(element, self_name) == attr:
                        found.append(node.value if element is target.target else cst.Ellipsis())

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if self_attribute(node.target, self_name) == attr:
                found.append(cst.Ellipsis())

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if self_attribute(node.target, self_name) == attr:
                found.append(node.value if node.value is not None else cst.Ellipsis())

    function.body.visit(_Visitor())
    return found


def _elements(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [e.value for e in target.elements]
    return [target]


def switch_turned_on(analysis: ModuleAnalysis, project: Project | None, names: frozenset[str]) -> bool:
    """Whether the project of the module of ``analysis`` turns on the switch that goes by
    ``names`` anywhere (see the module's description; ``True`` when it cannot be told)."""
    where = project_of(analysis)
    if where is None:
        return True
    folder = where[1]
    return scanned_once(project, ("switch", folder, names), lambda: _scan(project, folder, names))


def _scan(project: Project | None, folder: Path, names: frozenset[str]) -> tuple[bool, list[Path]]:
    spelled = sorted(names)
    keys = sorted({n.encode() for n in spelled} | {n.replace("_", "-").encode() for n in spelled})
    alternatives = b"|".join(re.escape(k) for k in keys)  # `with-cp: true` in YAML too
    setting = re.compile(
        rb"(?<![A-Za-z0-9_])(?:" + alternatives + rb")[\"']?\s*\]?\s*(=(?!=)|:)[ \t]*([^,;)\]}\r\n#]*)"
    )
    flags = re.compile(b"--(?:" + b"|".join(re.escape(n.replace("_", d).encode()) for n in spelled for d in ("_", "-")) + rb")(?![A-Za-z0-9_-])")
    forwarded = {n.encode() for n in spelled} | {b"self." + n.encode() for n in spelled}
    # the switch read back under its own name: `cfg.get('with_cp', False)`, `getattr(cfg,
    # "with_cp", None)`, `args.with_cp`, `cfg["with_cp"]` (where it is set, it is set by that name)
    quoted = rb"['\"](?:" + alternatives + rb")['\"]"
    read_back = re.compile(
        rb"[\w.\[\]'\"]*(?:\.get\(\s*" + quoted + rb"|getattr\(\s*[\w.\[\]]+\s*,\s*" + quoted + rb")"
        rb"\s*(?:,\s*(?:False|None|0|false)\s*)?\)"
        rb"|[\w.\[\]'\"]*?(?:\.(?:" + alternatives + rb")|\[" + quoted + rb"\])(?![\w(.\[])"
    )
    encoded = [n.encode() for n in spelled] + [n.replace("_", "-").encode() for n in spelled]
    files: list[Path] = []
    for item in files_holding(project, folder, None, encoded, files):
        if item is None:
            return True, files
        file_path, raw = item
        comments = file_path.name.endswith(_COMMENTED)
        if any(not comments or _outside_comment(raw, m.start()) for m in flags.finditer(raw)):
            return True, [file_path]
        for match in setting.finditer(raw):
            if read_back.match(raw, match.start(2)) is not None:
                continue
            if (not comments or _outside_comment(raw, match.start())) and _turns_on(match.group(1), match.group(2).strip(), forwarded):
                return True, [file_path]
    return False, files


#: Files where ``#`` starts a comment (not JSON, Markdown headings, notebooks).
_COMMENTED = (".py", ".pyi", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".sh", ".txt")


def _outside_comment(raw: bytes, at: int) -> bool:
    return b"#" not in raw[raw.rfind(b"\n", 0, at) + 1 : at]


_ANNOTATED = re.compile(rb"^[A-Za-z_][\w.\[\] ]*?\s*=\s*(.*)$")

#: A docstring's description after ``with_cp:`` (``If True, use checkpoint``, ``Whether to ...``),
#: not an expression (``not args.fast``, ``True if a else False``).
_PROSE = re.compile(rb"(?!(?:True|False|None)\b)[A-Z][a-z]+ ")

#: What follows ``with_cp:`` in an annotation without a default (the value is seen where it is passed).
_TYPES = frozenset({b"", b"bool", b"int", b"Optional[bool]", b"typing.Optional[bool]", b"'bool'", b'"bool"'})


def _turns_on(operator: bytes, value: bytes, forwarded: set[bytes]) -> bool:
    """Whether ``with_cp<operator> <value>`` sets the switch to something but off."""
    if operator == b":":
        annotated = _ANNOTATED.match(value)
        if annotated is not None:
            value = annotated.group(1).strip()  # `with_cp: bool = False`, or `if self.with_cp: y = f(x)`
        elif value in _TYPES or _PROSE.match(value):
            return False  # `with_cp: bool`, `if self.with_cp:`, a docstring's `with_cp: If True, ...`
    return bool(value) and value not in _OFF and value not in forwarded
