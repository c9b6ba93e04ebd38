"""Reading the requirements a project declares, one reader per file kind.

Each reader returns :class:`RequirementList` objects: the requirements installed together
(the main dependencies, one extra, one dependency group, a requirements file with its ``-r``
and ``-c`` includes, a conda environment). Requirement strings are parsed with ``packaging``
(:class:`packaging.requirements.Requirement`); Poetry's ``^``/``~`` constraints and conda's
``=`` match specs, which are not PEP 440, are rewritten to PEP 440 first (their documented
meaning) and then parsed the same way. Markers and extras are kept out of the range: a
requirement under any marker is a version the project allows.

A file that cannot be read (invalid TOML, YAML, setup.cfg or setup.py syntax, a requirement
of a tracked library that ``packaging`` refuses) raises :class:`DeclarationError`; nothing
here executes the project's code (``setup.py`` is read with ``ast``).
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from ckptlint.facts.version_facts import CONDA_NAMES, TRACKED_LIBRARIES
from ckptlint.text.reading import is_file_here

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["DeclarationError", "RequirementList", "read_declarations"]

_TRACKED = frozenset(TRACKED_LIBRARIES)
_MAX_INCLUDES = 32
_READ_LIMIT = 4 * 1024 * 1024  # bytes; a larger "requirements" file is not a requirements file


class DeclarationError(ValueError):
    """A declaration file that cannot be read; the message names the file and the reason."""


@dataclass
class RequirementList:
    """Requirements installed together: each tracked library's specifiers (intersected, as
    pip does) and the line of its first mention.

    Attributes:
        path: the file read.
        label: which list of the file (``"[project] dependencies"``, ``"extra train"``).
        specifiers: library -> the specifier set all its requirements of the list allow.
        lines: library -> 1-based line of its first requirement (0: unknown).
        additive: installed on top of the file's main list (an extra, a dependency group):
            for a library the main list names, it adds no version the main list does not allow.
    """

    path: Path
    label: str
    additive: bool = False
    specifiers: dict[str, SpecifierSet] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, specifier: SpecifierSet | str, line: int) -> None:
        library: str = canonicalize_name(name)
        library = CONDA_NAMES.get(library, library)
        if library not in _TRACKED:
            return
        specifier = SpecifierSet(str(specifier))
        current = self.specifiers.get(library)
        self.specifiers[library] = specifier if current is None else current & specifier
        if not self.lines.get(library):
            self.lines[library] = line  # the list's own file rather than an included one (0)

    def add_requirement(self, text: str, line: int, *, where: str) -> None:
        """Parse a PEP 508 requirement; one that ``packaging`` refuses raises
        :class:`DeclarationError` when it names a tracked library, and is skipped otherwise
        (a URL, a local path, an option of another tool)."""
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            if _names_tracked(text):
                raise DeclarationError(f"{where}: cannot parse requirement `{text}`: {exc}") from None
            return
        self.add(requirement.name, requirement.specifier, line)


def _names_tracked(text: str) -> bool:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
    return match is not None and canonicalize_name(match.group(1)) in _TRACKED | set(CONDA_NAMES)


def _read_text(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(_READ_LIMIT + 1)
    except OSError as exc:
        raise DeclarationError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > _READ_LIMIT:
        raise DeclarationError(f"{path}: larger than {_READ_LIMIT // (1024 * 1024)} MB")
    return raw.decode("utf-8", errors="replace")


def _line_of(text: str, name: str) -> int:
    """The 1-based line where ``name`` first appears as a word (0 when it does not)."""
    match = re.search(rf"(?im)(?<![\w.-]){re.escape(name)}(?![\w-])", text)
    return text.count("\n", 0, match.start()) + 1 if match else 0


def _list_from_strings(path: Path, label: str, items: Any, text: str, *, additive: bool = False) -> RequirementList:
    found = RequirementList(path, label, additive=additive)
    if not isinstance(items, list):
        raise DeclarationError(f"{path}: {label} must be a list of requirement strings")
    for item in items:
        if isinstance(item, str):
            found.add_requirement(item, _line_of_item(text, item), where=f"{path}: {label}")
    return found


def _line_of_item(text: str, item: str) -> int:
    """The line of a requirement string in its file: where the string itself is written, else
    where its name first appears as a word."""
    at = text.find(item.strip()) if item.strip() else -1
    if at >= 0:
        return text.count("\n", 0, at) + 1
    name = re.match(r"\s*([\w.-]*)", item).group(1)  # type: ignore[union-attr]
    return _line_of(text, name) if name else 0


# ---------------------------------------------------------------- pyproject.toml


def _pyproject(path: Path) -> list[RequirementList]:
    text = _read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeclarationError(f"{path}: invalid TOML: {exc}") from None
    lists: list[RequirementList] = []
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    if "dependencies" in project:
        lists.append(_list_from_strings(path, "[project] dependencies", project["dependencies"], text))
    extras = project.get("optional-dependencies", {})
    if isinstance(extras, dict):
        for extra, items in extras.items():
            lists.append(_list_from_strings(path, f"[project.optional-dependencies] {extra}", items, text, additive=True))
    groups = data.get("dependency-groups", {})
    if isinstance(groups, dict):
        for group in groups:
            items = _group_items(groups, group, path, set())
            lists.append(_list_from_strings(path, f"[dependency-groups] {group}", items, text, additive=True))
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    if isinstance(poetry, dict):
        tables = [("[tool.poetry.dependencies]", poetry.get("dependencies"), False)]
        tables.append(("[tool.poetry.dev-dependencies]", poetry.get("dev-dependencies"), True))
        for group, body in (poetry.get("group") or {}).items():
            tables.append((f"[tool.poetry.group.{group}.dependencies]", (body or {}).get("dependencies"), True))
        for label, table, additive in tables:
            if isinstance(table, dict):
                for found in _poetry_table(path, label, table, text):
                    found.additive = additive
                    lists.append(found)
    return lists


def _group_items(groups: dict[str, Any], group: str, path: Path, seen: set[str]) -> list[str]:
    """A PEP 735 group's requirement strings, ``{include-group = "..."}`` expanded."""
    if group in seen:
        raise DeclarationError(f"{path}: [dependency-groups] {group} includes itself")
    items = groups.get(group)
    if not isinstance(items, list):
        raise DeclarationError(f"{path}: [dependency-groups] {group} must be a list")
    found: list[str] = []
    for item in items:
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            found += _group_items(groups, item["include-group"], path, seen | {group})
    return found


def _poetry_table(path: Path, label: str, table: dict[str, Any], text: str) -> list[RequirementList]:
    """Poetry's ``name = "^4.40"``, ``{version = "..."}`` and lists of such tables (one per
    marker: alternatives, so each is its own list)."""
    lists = [RequirementList(path, label)]
    for name, value in table.items():
        line = _line_of(text, name)
        choices = value if isinstance(value, list) else [value]
        for index, choice in enumerate(choices):
            constraint = choice.get("version", "*") if isinstance(choice, dict) else choice
            if not isinstance(constraint, str):
                continue
            specifier = _poetry_specifier(constraint, path, name)
            if index == 0:
                lists[0].add(name, specifier, line)
            else:
                extra = RequirementList(path, f"{label} {name} alternative {index + 1}")
                extra.add(name, specifier, line)
                lists.append(extra)
    return lists


def _poetry_specifier(constraint: str, path: Path, name: str) -> SpecifierSet:
    """Poetry's constraint syntax in PEP 440: ``^1.2.3`` is ``>=1.2.3,<2.0.0`` (the first
    non-zero part is kept), ``~1.2`` is ``>=1.2,<1.3``, ``*`` any, a bare version is ``==``;
    the rest (``>=``, ``<``, ``,``) is PEP 440 already."""
    parts = []
    for piece in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", constraint.strip()):
        if piece in ("", "*"):
            continue
        if piece[0] in "^~" and not piece.startswith("~="):
            release = [int(p) for p in re.findall(r"\d+", piece[1:])[:3]] or [0]
            if piece[0] == "^":
                keep = next((i for i, p in enumerate(release) if p != 0), len(release) - 1) + 1
            else:
                keep = min(len(release), 2) if len(release) > 1 else 1
            upper = release[:keep]
            upper[-1] += 1
            parts.append(f">={piece[1:]},<{'.'.join(map(str, upper))}")
        elif piece[0].isdigit():
            parts.append(f"=={piece}")
        else:
            parts.append(piece)
    try:
        return SpecifierSet(",".join(parts))
    except InvalidSpecifier:
        if canonicalize_name(name) in _TRACKED:
            raise DeclarationError(f"{path}: cannot parse the constraint `{name} = \"{constraint}\"`") from None
        return SpecifierSet()


# ---------------------------------------------------------------- requirements files


def _requirements(path: Path) -> list[RequirementList]:
    found = RequirementList(path, "requirements")
    _requirements_into(found, path, set())
    return [found]


def _requirements_into(found: RequirementList, path: Path, seen: set[Path]) -> None:
    """Read ``path`` into ``found``; ``-r``/``-c`` files (relative to the including file)
    are read into the same list: pip installs and constrains them together."""
    if path in seen:
        return
    if len(seen) >= _MAX_INCLUDES:
        raise DeclarationError(f"{path}: more than {_MAX_INCLUDES} included requirements files")
    seen.add(path)
    text = _read_text(path)
    logical: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append((start, (pending + line).strip()))
        pending = ""
    for number, line in logical:
        if not line:
            continue
        include = re.match(r"^(?:-r|--requirement|-c|--constraint)(?:\s+|=)(\S+)", line)
        if include:
            target = path.parent / include.group(1)
            if not is_file_here(target):
                raise DeclarationError(f"{path}:{number}: included file `{include.group(1)}` not found")
            _requirements_into(found, target, seen)
            continue
        if line.startswith("-") or "://" in line or line.startswith((".", "/")):
            continue  # options (-e, --index-url), URLs and local paths: no version range
        found.add_requirement(line, number if path == found.path else 0, where=f"{path}:{number}")


# ---------------------------------------------------------------- setup.cfg / setup.py


def _setup_cfg(path: Path) -> list[RequirementList]:
    text = _read_text(path)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise DeclarationError(f"{path}: invalid setup.cfg: {exc}") from None
    lists: list[RequirementList] = []
    if parser.has_option("options", "install_requires"):
        items = [line for line in parser.get("options", "install_requires").splitlines() if line.strip()]
        lists.append(_list_from_strings(path, "[options] install_requires", items, text))
    if parser.has_section("options.extras_require"):
        for extra, value in parser.items("options.extras_require"):
            items = [line for line in value.splitlines() if line.strip()]
            lists.append(_list_from_strings(path, f"[options.extras_require] {extra}", items, text, additive=True))
    return lists


def _setup_py(path: Path) -> list[RequirementList]:
    """Literal ``install_requires`` / ``extras_require`` of a ``setup(...)`` call, or a
    module-level name assigned a literal and passed there; other forms declare nothing."""
    text = _read_text(path)
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        raise DeclarationError(f"{path}: cannot parse setup.py: {exc}") from None
    literals: dict[str, Any] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            try:
                literals[statement.targets[0].id] = ast.literal_eval(statement.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    lists: list[RequirementList] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called_name(node.func) == "setup"):
            continue
        for keyword in node.keywords:
            value = _literal(keyword.value, literals)
            if keyword.arg == "install_requires" and isinstance(value, (list, tuple)):
                lists.append(_list_from_strings(path, "setup(install_requires=...)", list(value), text))
            elif keyword.arg == "extras_require" and isinstance(value, dict):
                for extra, items in value.items():
                    if isinstance(items, (list, tuple)):
                        label = f"setup(extras_require) {extra}"
                        lists.append(_list_from_strings(path, label, list(items), text, additive=True))
    return lists


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _literal(node: ast.expr, names: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


# ---------------------------------------------------------------- conda environment.yml


def _environment(path: Path) -> list[RequirementList]:
    """A conda environment: conda match specs (``pytorch=2.1``, ``pytorch 2.1.*``,
    ``conda-forge::pytorch>=2.0``) and its ``pip:`` requirements, installed together."""
    import yaml  # PyYAML: only when an environment file is read

    text = _read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DeclarationError(f"{path}: invalid YAML: {exc}") from None
    found = RequirementList(path, "environment")
    dependencies = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(dependencies, list):
        return []
    for item in dependencies:
        if isinstance(item, str):
            name, specifier = _conda_spec(item, path)
            if name:
                found.add(name, specifier, _line_of(text, name))
        elif isinstance(item, dict) and isinstance(item.get("pip"), list):
            for requirement in item["pip"]:
                if isinstance(requirement, str) and not requirement.startswith("-"):
                    found.add_requirement(requirement, _line_of_item(text, requirement), where=f"{path}: pip")
    return [found]


def _conda_spec(text: str, path: Path) -> tuple[str, SpecifierSet]:
    """A conda match spec in PEP 440: ``=2.1`` (and ``2.1``, ``2.1.*``) is ``==2.1.*``,
    ``==2.1.0`` exact, a build string after a second ``=`` or a space is dropped."""
    spec = text.split("::", 1)[-1].strip()
    match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", spec)
    if match is None:
        return "", SpecifierSet()
    name, rest = match.group(1), match.group(2).strip()
    if not rest:
        return name, SpecifierSet()
    rest = rest.split()[0]  # "2.1.* py3.10_cuda" -> the version part
    if rest.startswith("=") and not rest.startswith("=="):
        rest = rest[1:].split("=", 1)[0]
        rest = f"=={rest.rstrip('.*')}.*"
    elif rest[0].isdigit():
        rest = f"=={rest}" if rest.endswith(".*") else f"=={rest.rstrip('.*')}.*"
    try:
        return name, SpecifierSet(rest)
    except InvalidSpecifier:
        if _names_tracked(name):
            raise DeclarationError(f"{path}: cannot parse the conda spec `{text}`") from None
        return "", SpecifierSet()


# ---------------------------------------------------------------- dispatch


def read_declarations(path: Path) -> list[RequirementList]:
    """The requirement lists of one declaration file, chosen by its name.

    Raises:
        DeclarationError: the file cannot be read or parsed.
    """
    name = path.name
    if name == "pyproject.toml":
        return _pyproject(path)
    if name == "setup.cfg":
        return _setup_cfg(path)
    if name == "setup.py":
        return _setup_py(path)
    if name in ("environment.yml", "environment.yaml"):
        return _environment(path)
    return _requirements(path)
