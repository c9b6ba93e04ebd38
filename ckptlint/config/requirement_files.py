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
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from ckptlint.config.markers import ENVIRONMENTS, EVERYWHERE, holds_in
from ckptlint.facts.version_facts import CONDA_NAMES, TRACKED_LIBRARIES
from ckptlint.text.reading import is_file_here

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["DeclarationError", "RequirementList", "Skipped", "read_declarations", "wheel_version_of_url"]

_TRACKED = frozenset(TRACKED_LIBRARIES)
_MAX_INCLUDES = 32
_READ_LIMIT = 4 * 1024 * 1024  # bytes; a larger "requirements" file is not a requirements file


class DeclarationError(ValueError):
    """A declaration file that cannot be read; the message names the file and the reason."""


#: Where a marker that is never true holds.
MARKER_NOWHERE = "in no environment torch 2.13 installs in (Python 3.10 to 3.15)"


@dataclass(frozen=True)
class Skipped:
    """A requirement of a tracked library that gives no version range: where (``file:line``
    or ``file: [table] group``), its text (whitespace collapsed), why (a phrase) and the kind
    of reason, said of several (``"their markers hold in no environment ..."``)."""

    where: str
    text: str
    reason: str
    kind: str

    def __str__(self) -> str:
        return f"{self.where}: `{self.text}`: {self.reason}; not read as a declared version"

@dataclass
class RequirementList:
    """Requirements installed together: each tracked library's specifiers (intersected, as
    pip does) and the line of its first mention.

    Attributes:
        path: the file read.
        label: which list of the file (``"[project] dependencies"``, ``"extra train"``).
        specifiers: library -> the specifier set all its requirements without marker allow.
        conditional: library -> its requirements under a marker that holds in some environments
            only, each with the indexes of the :data:`~ckptlint.config.markers.ENVIRONMENTS`
            where it applies (:meth:`ranges` combines them).
        lines: library -> 1-based line of its first requirement (0: unknown).
        additive: installed on top of the file's main list (an extra, a dependency group):
            for a library the main list names, it adds no version the main list does not allow.
        skipped: what was declared for a tracked library but gives no version range, one
            sentence each (``"requirements.txt:3: `timm @ https://...`: a URL, no version range"``).
    """

    path: Path
    label: str
    additive: bool = False
    specifiers: dict[str, SpecifierSet] = field(default_factory=dict)
    conditional: dict[str, list[tuple[SpecifierSet, frozenset[int]]]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)

    def add(self, name: str, specifier: SpecifierSet | str, line: int, environments: frozenset[int] = EVERYWHERE) -> None:
        library = tracked_name(name)
        if library is None:
            return
        specifier = SpecifierSet(str(specifier))
        if environments != EVERYWHERE:
            self.conditional.setdefault(library, []).append((specifier, environments))
        else:
            current = self.specifiers.get(library)
            self.specifiers[library] = specifier if current is None else current & specifier
        if not self.lines.get(library):
            self.lines[library] = line  # the list's own file rather than an included one (0)

    def skip(self, where: str, text: str, reason: str, kind: str = "") -> None:
        """Say that ``text`` (at ``where``), a requirement of a tracked library, gives no
        range, and why; ``kind``: the reason without what is particular to this requirement
        (default: the reason itself), for counting many alike."""
        self.skipped.append(Skipped(where, " ".join(text.split()), reason, kind or reason))

    def ranges(self) -> dict[str, list[SpecifierSet]]:
        """Library -> the specifier sets this list allows, one per group of environments that
        differ (one without markers): in each environment, the requirements that apply there
        are intersected; the environments are alternatives."""
        found: dict[str, list[SpecifierSet]] = {}
        for library in {*self.specifiers, *self.conditional}:
            base = self.specifiers.get(library)
            conditional = self.conditional.get(library, [])
            if not conditional:
                found[library] = [base] if base is not None else []
                continue
            alternatives: list[SpecifierSet] = []
            for index in range(len(ENVIRONMENTS)):
                applying = [specifier for specifier, where in conditional if index in where]
                if base is None and not applying:
                    continue  # not installed in this environment by this list
                combined = SpecifierSet(str(base)) if base is not None else SpecifierSet()
                for specifier in applying:
                    combined &= specifier
                if str(combined) not in {str(a) for a in alternatives}:
                    alternatives.append(combined)
            found[library] = alternatives
        return found

    def add_requirement(self, text: str, line: int, *, where: str, extra: str = "") -> None:
        """Parse a PEP 508 requirement; one that ``packaging`` refuses raises
        :class:`DeclarationError` when it names a tracked library, and is skipped otherwise
        (a URL, a local path, an option of another tool). Its marker is evaluated
        (``extra``: the extra it is installed with)."""
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            if _names_tracked(text):
                raise DeclarationError(f"{where}: cannot parse requirement `{text}`: {exc}") from None
            return
        self.add_parsed(requirement.name, requirement.specifier, requirement.url, requirement.marker, line, where, text, extra)

    def add_parsed(
        self,
        name: str,
        specifier: SpecifierSet,
        url: str | None,
        marker: object,
        line: int,
        where: str,
        text: str,
        extra: str = "",
    ) -> None:
        """Add a parsed requirement: a URL gives no range (said in :attr:`skipped`), a marker
        restricts it to the environments where it holds (:func:`~ckptlint.config.markers.holds_in`)."""
        if tracked_name(name) is None:
            return
        if url:
            version = wheel_version_of_url(url, name)
            if version is None:
                self.skip(where, text, "a URL or path, which pins no version ckptlint can read")
                return
            specifier = SpecifierSet(f"=={version}")
        try:
            environments = holds_in(str(marker) if marker is not None else None, extra)
        except ValueError as exc:
            self.skip(where, text, str(exc))
            return
        if not environments:
            self.skip(where, text, f"its marker `{marker}` holds {MARKER_NOWHERE}", f"their markers hold {MARKER_NOWHERE}")
            return
        self.add(name, specifier, line, environments)


def tracked_name(name: str) -> str | None:
    """The tracked library ``name`` denotes (PEP 503 normalised, conda's names mapped), or ``None``."""
    library: str = canonicalize_name(name)
    library = CONDA_NAMES.get(library, library)
    return library if library in _TRACKED else None


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


def _list_from_strings(
    path: Path, label: str, items: Any, text: str, *, additive: bool = False, extra: str = ""
) -> RequirementList:
    found = RequirementList(path, label, additive=additive)
    if not isinstance(items, list):
        raise DeclarationError(f"{path}: {label} must be a list of requirement strings")
    for item in items:
        if isinstance(item, str):
            found.add_requirement(item, _line_of_item(text, item), where=f"{path}: {label}", extra=extra)
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
            label = f"[project.optional-dependencies] {extra}"
            lists.append(_list_from_strings(path, label, items, text, additive=True, extra=str(extra)))
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
    """Read ``path`` into ``found`` with pip's own parser (``pip_requirements_parser``, pip's
    ``req_file.py``); ``-r``/``-c`` files (relative to the including file) are read into the same
    list, as pip installs and constrains them together, each file once (an include loop ends
    there). A requirement of a tracked library that gives no range (``-e``, a URL, a path, a
    line pip refuses) is said in :attr:`RequirementList.skipped`."""
    import pip_requirements_parser as pip_parser

    path = Path(os.path.normpath(os.path.abspath(path)))
    if path in seen:
        return
    if len(seen) >= _MAX_INCLUDES:
        raise DeclarationError(f"{path}: more than {_MAX_INCLUDES} included requirements files")
    seen.add(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DeclarationError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if size > _READ_LIMIT:
        raise DeclarationError(f"{path}: larger than {_READ_LIMIT // (1024 * 1024)} MB")
    try:
        parsed = pip_parser.RequirementsFile.from_file(str(path), include_nested=False)
    except (OSError, ValueError, UnicodeError) as exc:
        raise DeclarationError(f"{path}: cannot read: {exc}") from None
    own = path == Path(os.path.normpath(os.path.abspath(found.path)))
    for requirement in parsed.requirements:
        number = requirement.line_number or 0
        where = f"{path}:{number}"
        text = requirement.line or ""
        name = requirement.name or _wheel_name(requirement)
        if name is None or tracked_name(name) is None:
            continue
        if requirement.is_editable:
            found.skip(where, text, "an editable checkout, which pins no version ckptlint can read")
            continue
        specifier = requirement.specifier or SpecifierSet()
        url = None
        if requirement.link is not None:
            version = _wheel_version(requirement)
            if version is None:
                url = str(requirement.link.url)
            else:
                specifier = SpecifierSet(f"=={version}")
        found.add_parsed(name, specifier, url, requirement.marker, number if own else 0, where, text)
    for invalid in parsed.invalid_lines:
        if _names_tracked(invalid.line or ""):
            first = (invalid.error_message or "").strip().splitlines()[:1]
            reason = "cannot parse requirement" + (f" ({first[0]})" if first else "")
            found.skip(f"{path}:{invalid.line_number}", invalid.line or "", reason)
    for option in parsed.options:
        for key in ("requirements", "constraints"):
            for include in option.options.get(key, ()):
                target = path.parent / include
                if not is_file_here(target):
                    raise DeclarationError(f"{path}:{option.line_number}: included file `{include}` not found")
                _requirements_into(found, target, seen)


def wheel_version_of_url(url: str, name: str) -> str | None:
    """The version of the wheel a URL names when its file is a wheel of ``name``
    (``https://download.pytorch.org/whl/cu121/torch-2.1.0%2Bcu121-cp310-cp310-linux_x86_64.whl``
    gives ``2.1.0``, the local label dropped), else ``None`` (a source archive, a VCS URL, a
    folder). The file name is read by ``packaging.utils.parse_wheel_filename``."""
    from urllib.parse import unquote, urlsplit

    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    if not filename.endswith(".whl"):
        return None
    try:
        wheel, version, _, _ = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    return version.public if wheel == canonicalize_name(name) else None


def _wheel_name(requirement: Any) -> str | None:
    """The project name of a wheel URL's file (``torch-2.1.0+cu121-cp310-...whl``), else ``None``."""
    parts = _wheel_parts(requirement)
    return parts[0] if parts else None


def _wheel_version(requirement: Any) -> str | None:
    """The version of a wheel URL's file, without its local label (``2.1.0``), else ``None``."""
    parts = _wheel_parts(requirement)
    return parts[1].public if parts else None


def _wheel_parts(requirement: Any) -> tuple[str, Any] | None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    link = requirement.link
    filename = getattr(link, "filename", "") if link is not None else ""
    if not filename.endswith(".whl"):
        return None
    try:
        name, version, _, _ = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    return str(name), version


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
            label = f"[options.extras_require] {extra}"
            lists.append(_list_from_strings(path, label, items, text, additive=True, extra=extra.split(":")[0]))
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
    ``==2.1.0`` exact, ``>=1.13`` as written (also with spaces: ``pytorch >= 1.13``, and
    ``>=1.13,<2``), a build string after a second ``=`` or a space is dropped."""
    spec = text.split("::", 1)[-1].strip()
    match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", spec)
    if match is None:
        return "", SpecifierSet()
    name, rest = match.group(1), match.group(2).strip()
    if not rest:
        return name, SpecifierSet()
    # an operator may be followed by spaces (`>= 1.13`, `>=1.13, <2`): join it to its version
    rest = re.sub(r"(==|>=|<=|!=|~=|>|<)\s+", r"\1", rest)
    rest = re.sub(r"\s*([,|])\s*", r"\1", rest)
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
