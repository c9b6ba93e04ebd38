"""Whether the top-level class or function that holds a checkpoint site is used in its project.

Region rules (CKP101–CKP103, CKP201–CKP203) judge what a site recomputes. A site in a class
that nothing builds is dead code, and every judge rated its findings debatable at best
(judge 10: FB-BEV's ``CM_ContextNet``, ``FPN_LSS``, ``DepthAggregation`` and
``LSSViewTransformerBEVDepth``, 8 of 32 region findings, each registered or exported and
named by no config or code of the repository). So in a module that another ``.py`` file of the
project imports (a relative import resolved from that file's folder, or an absolute one whose
dotted name spells the end of the module's path), a region finding is reported only when the
top-level ``class`` or ``def`` around its site is named somewhere else in the project. A module
nothing imports is a script, an example or a test file (the shared cases copied into a
project's ``tests/``): its definitions are its own business and are judged. Names count:

- in a ``.py`` file (its own module included) outside a definition of the same name (a copy
  of the class elsewhere does not count), an import (one that binds it under another name,
  ``import Block as B``, counts: the alias is not followed), an ``__all__`` assignment and a comment
  (a ``#`` earlier on the line); a mention in a string counts (``type='FPN_LSS'`` in an mm
  config, ``"UNet2DConditionModel"`` in a lazy-import table, ``getattr(module, "Block")``);
- by a decorator: a framework's entry point (``@app.command()``, ``@hydra.main``, ``@app.route``,
  ``@pytest.fixture``: :data:`~ckptlint.facts.entry_points.ENTRY_POINT_DECORATORS`) is used; a
  string argument of a decorator call (fairseq's ``@register_model("transformer_lm")``) is
  searched like the name;
- by convention: pytest collects ``test*`` functions and ``Test*`` classes of ``test_*.py`` and
  ``*_test.py`` files (:mod:`ckptlint.facts.entry_points`);
- anywhere in a text file of the project (YAML/JSON/TOML/INI configs, shell scripts,
  Markdown and reStructuredText documentation, notebooks): ldm's ``target:
  ldm.modules.diffusionmodules.openaimodel.UNetModel``, a README's usage example.

The project is the folder that holds ``.git``, ``pyproject.toml``, ``setup.py`` or
``setup.cfg`` (at most :data:`~ckptlint.checkpoint.autocast_reach.MAX_LEVELS` up). Without one
the code that may use the definition is not known and it counts as used, as does a site at
module level or under a statement that is not a ``class``/``def``, source that is not a file on
disk, a module the ``ast`` index refuses and a project of more than
:data:`~ckptlint.checkpoint.autocast_reach.MAX_FILES` files. The search runs only when a
region rule is about to report (a few names a run), once per module, name and project; files are read
as bytes and only those holding the name or the module's name are indexed. For the cache, a used definition records
the file where the use was found, an unused one every file searched; a file added to the
project later is not seen until the module changes or the cache is cleared.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import libcst as cst

from ckptlint.checkpoint.autocast_reach import (
    MAX_FILES,
    MAX_LEVELS,
    code_base,
    code_base_files,
)
from ckptlint.facts.entry_points import (
    ENTRY_POINT_DECORATORS,
    PYTEST_CLASS_PREFIX,
    PYTEST_FILE_PREFIX,
    PYTEST_FILE_SUFFIX,
    PYTEST_FUNCTION_PREFIX,
    UNITTEST_BASE,
)
from ckptlint.semantic.index import ModuleIndex, index_for
from ckptlint.semantic.project import PROJECT_MARKERS, Project

if TYPE_CHECKING:
    from ckptlint.semantic.analysis import ModuleAnalysis

__all__ = ["PROJECT_TEXT_SUFFIXES", "definition_named", "files_holding", "module_imported", "module_parts", "project_files", "project_of", "scanned_once", "spells_path", "top_level_definition"]

#: Files searched for a mention: Python sources, configs, scripts, documentation, notebooks.
PROJECT_TEXT_SUFFIXES = (
    ".py", ".pyi", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".sh", ".md", ".rst", ".txt", ".ipynb",
)  # fmt: skip

#: Larger files (data dumps, vocabularies) are not searched.
MAX_FILE_BYTES = 4_000_000

#: per project (one run): (question, project folder, ...) -> (answer, files to record)
_SCANNED: WeakKeyDictionary[Project, dict[tuple[object, ...], tuple[Any, list[Path]]]] = WeakKeyDictionary()


def top_level_definition(index: ModuleIndex, row: int) -> str | None:
    """The name of the top-level ``class``/``def`` of ``index`` whose lines hold 1-based
    ``row``, or ``None`` (module-level code, another kind of statement)."""
    starts = [s.start for s in index.statements]
    at = bisect.bisect_right(starts, row) - 1
    if at < 0:
        return None
    statement = index.statements[at]
    if statement.end < row or statement.kind not in ("class", "function") or len(statement.binds) != 1:
        return None
    return next(iter(statement.binds))


def project_of(analysis: ModuleAnalysis) -> tuple[Path, Path] | None:
    """(module path, project folder) of the module of ``analysis``, or ``None``: source not on
    disk, no project root."""
    path = Path(os.path.abspath(analysis.source.path))
    if not path.is_file():
        return None  # source given on stdin or in memory: its project is not known
    folder, _ = code_base(path)
    if not any((folder / marker).exists() for marker in PROJECT_MARKERS):
        return None
    return path, _repository_of(folder)


def _repository_of(folder: Path) -> Path:
    """``folder``, or the folder holding ``.git`` above it (at most
    :data:`~ckptlint.checkpoint.autocast_reach.MAX_LEVELS` up): a monorepo's package or a CUDA
    extension's own ``setup.py`` (Deformable-DETR's ``models/ops``) is used from the rest of its
    repository."""
    if (folder / ".git").exists():
        return folder
    above = folder
    for _ in range(MAX_LEVELS):
        if above.parent == above:
            break
        above = above.parent
        if (above / ".git").exists():
            return above
    return folder


def scanned_once(project: Project | None, key: tuple[object, ...], scan: Callable[[], tuple[Any, list[Path]]]) -> Any:
    """The answer of ``scan()`` (``(answer, files it depends on)``), run once per ``key`` and
    run (per :class:`Project` whose files are stable); the files are recorded for the cache."""
    memo = _SCANNED.setdefault(project, {}) if project is not None and project.files_stable else {}
    if key not in memo:
        memo[key] = scan()
    answer, files = memo[key]
    if project is not None:
        project.record_reads(files)  # absolute: the project folder is
    return answer


def module_imported(analysis: ModuleAnalysis, project: Project | None) -> bool:
    """Whether another ``.py`` file of the project imports the module of ``analysis`` or a name
    from it (``False`` when it cannot be told: the module is then judged whole)."""
    where = project_of(analysis)
    return where is not None and _imported(project, where[1], where[0])


def _imported(project: Project | None, folder: Path, path: Path) -> bool:
    return scanned_once(project, ("imported", folder, path), lambda: _scan_imports(project, folder, path))


#: Definitions followed at most from the site's (a class named only inside another class that
#: nothing names is dead too: OpenOccupancy's ``DepthNetStereo``, built only by an unselected view
#: transformer); past it a definition counts as used.
MAX_HOLDER_DEPTH = 2


def definition_named(analysis: ModuleAnalysis, project: Project | None, row: int) -> bool:
    """Whether the top-level definition around 1-based ``row`` of the module of ``analysis``
    is named elsewhere in its project (see the module's description; ``True`` when it cannot
    be told)."""
    own = index_for(analysis.source.text, analysis.source.path)
    if own is None:
        return True
    name = top_level_definition(own, row)
    if name is None:
        return True
    entry, keys = _decorations(analysis, name)
    if entry:
        return True
    where = project_of(analysis)
    raw = analysis.source.text.encode("utf-8", "surrogateescape")
    if where is None:
        return bool(_holders(raw, own, _word(name), name))
    path, folder = where
    return any(_named(project, folder, path, raw, own, spelled, 0) for spelled in (name, *keys))


_REGISTRY_KEY = re.compile(r"[A-Za-z_][\w.\-]*")


def _decorations(analysis: ModuleAnalysis, name: str) -> tuple[bool, list[str]]:
    """(whether a decorator of the top-level ``name`` hands it to a framework,
    :data:`~ckptlint.facts.entry_points.ENTRY_POINT_DECORATORS`; the string arguments of its
    decorator calls that can name it instead: fairseq's ``@register_model("transformer_lm")``,
    a registry keyed ``@register("my_block")``)."""
    for statement in analysis.module.body:
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)) and statement.name.value == name:
            break
    else:
        return False, []
    keys: list[str] = []
    for decorator in statement.decorators:
        expr = decorator.decorator
        call = expr if isinstance(expr, cst.Call) else None
        func = call.func if call is not None else expr
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if last in ENTRY_POINT_DECORATORS:
            return True, []
        for arg in call.args if call is not None else ():
            value = arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
            if isinstance(value, str) and value != name and _REGISTRY_KEY.fullmatch(value):
                keys.append(value)
    return False, keys


def _named(project: Project | None, folder: Path, path: Path, raw: bytes, index: ModuleIndex, name: str, depth: int) -> bool:
    """Whether ``name`` (a top-level definition of the module at ``path``) is named in the
    project where it counts: outside any definition, in a text file, or inside another
    top-level definition that is itself named so (followed :data:`MAX_HOLDER_DEPTH` deep)."""
    if _collected_by_pytest(str(path), name, index):
        return True
    pattern = _word(name)
    own = _holders(raw, index, pattern, name)
    if None in own:
        return True
    direct, elsewhere = scanned_once(project, ("named", folder, path, name), lambda: _scan_names(project, folder, path, name, pattern))
    if direct:
        return True
    holders = [(path, holder) for holder in own] + list(elsewhere)
    if holders and depth >= MAX_HOLDER_DEPTH:
        return True
    return any(_holder_named(project, folder, file_path, holder, depth + 1) for file_path, holder in holders)


def _holder_named(project: Project | None, folder: Path, path: Path, name: str, depth: int) -> bool:
    if not _imported(project, folder, path):
        return True  # a script or a test file: its definitions are its own
    try:
        raw = path.read_bytes()
    except OSError:
        return True
    index = index_for(raw.decode("utf-8", "surrogateescape"), str(path))
    return index is None or _named(project, folder, path, raw, index, name, depth)


def _collected_by_pytest(path: str, name: str, index: ModuleIndex) -> bool:
    """Whether pytest collects ``name`` of the module at ``path`` (``index`` its index): a
    ``test*`` function, a ``Test*`` class or a ``unittest.TestCase`` subclass of a test file
    (:mod:`ckptlint.facts.entry_points`)."""
    file_name = os.path.basename(path)
    if not (file_name.startswith(PYTEST_FILE_PREFIX) or file_name.endswith(PYTEST_FILE_SUFFIX)):
        return False
    if name.startswith((PYTEST_FUNCTION_PREFIX, PYTEST_CLASS_PREFIX)):
        return True
    return any(s.kind == "class" and name in s.binds and UNITTEST_BASE in s.header for s in index.statements)


def _word(name: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_])")


#: Text files other than Python sources larger than this (data dumps, vocabularies, notebook
#: outputs) are not searched.
MAX_TEXT_BYTES = 1_000_000

#: The project's searched bytes are held in memory for the run up to this total (one read of
#: each file however many names are looked for); a larger project is read again for each.
MAX_HELD_BYTES = 96_000_000

#: per project (one run): project folder -> its files and bytes (``None``: too large to hold)
_TEXTS: WeakKeyDictionary[Project, dict[Path, list[tuple[Path, bytes | None] | None] | None]] = WeakKeyDictionary()


def project_files(project: Project | None, folder: Path, own: Path | None, python_only: bool) -> Iterator[tuple[Path, bytes | None] | None]:
    """``(path, bytes)`` of the project's text files (or ``.py`` only) but ``own``: bytes
    ``None`` for one that is not searched (not a regular file: a FIFO, ``/dev/zero`` behind a
    link; over :data:`MAX_FILE_BYTES`, or :data:`MAX_TEXT_BYTES` for other text), which is still
    recorded for the cache; ``None`` once when there are more than
    :data:`~ckptlint.checkpoint.autocast_reach.MAX_FILES` or the folder cannot be listed. Read
    once per run and project when the project's files are stable."""
    held = None
    if project is not None and project.files_stable:
        memo = _TEXTS.setdefault(project, {})
        if folder not in memo:
            memo[folder] = _hold(folder)
        held = memo[folder]
    for item in held if held is not None else _read_all(folder):
        if item is None:
            yield None
            return
        file_path, raw = item
        if file_path == own or (python_only and not file_path.name.endswith((".py", ".pyi"))):
            continue
        yield file_path, raw


def files_holding(
    project: Project | None, folder: Path, own: Path | None, needles: list[bytes], files: list[Path], *, python_only: bool = False
) -> Iterator[tuple[Path, bytes] | None]:
    """:func:`project_files` narrowed to the files whose bytes hold one of ``needles``; every
    file listed (searched or not) is appended to ``files``, for the cache; ``None`` once when
    the project is too large to tell."""
    for item in project_files(project, folder, own, python_only):
        if item is None:
            yield None
            return
        file_path, raw = item
        files.append(file_path)
        if raw is not None and any(needle in raw for needle in needles):
            yield file_path, raw


def _hold(folder: Path) -> list[tuple[Path, bytes | None] | None] | None:
    items: list[tuple[Path, bytes | None] | None] = []
    total = 0
    for item in _read_all(folder):
        items.append(item)
        if item is not None and item[1] is not None:
            total += len(item[1])
            if total > MAX_HELD_BYTES:
                return None
    return items


def _read_all(folder: Path) -> Iterator[tuple[Path, bytes | None] | None]:
    for count, file_path in enumerate(code_base_files(folder, True, PROJECT_TEXT_SUFFIXES)):
        if file_path is None or count >= MAX_FILES:
            yield None
            return
        limit = MAX_FILE_BYTES if file_path.name.endswith((".py", ".pyi")) else MAX_TEXT_BYTES
        try:
            status = file_path.stat()
            if not S_ISREG(status.st_mode) or status.st_size > limit:
                yield file_path, None
                continue
            yield file_path, file_path.read_bytes()
        except OSError:
            continue


def _scan_names(project: Project | None, folder: Path, own: Path, name: str, pattern: re.Pattern[bytes]) -> tuple[tuple[bool, tuple[tuple[Path, str], ...]], list[Path]]:
    """((named directly, (file, top-level definition) holding a mention, ...), files to record)."""
    files: list[Path] = []
    holders: list[tuple[Path, str]] = []
    for item in files_holding(project, folder, own, [name.encode()], files):
        if item is None:
            return (True, ()), files
        file_path, raw = item
        if not pattern.search(raw):
            continue
        if not file_path.name.endswith((".py", ".pyi")):
            return (True, ()), [file_path]
        index = index_for(raw.decode("utf-8", "surrogateescape"), str(file_path))
        found = {None} if index is None else _holders(raw, index, pattern, name)
        if None in found:
            return (True, ()), [file_path]
        holders += [(file_path, holder) for holder in sorted(found)]  # type: ignore[type-var]
    return (False, tuple(holders)), files


def _scan_imports(project: Project | None, folder: Path, own: Path) -> tuple[bool, list[Path]]:
    module = module_parts(own)
    files: list[Path] = []
    for item in files_holding(project, folder, own, [module[-1].encode()], files, python_only=True):
        if item is None:
            return False, files
        file_path, raw = item
        index = index_for(raw.decode("utf-8", "surrogateescape"), str(file_path))
        if index is not None and _imports_module(index, file_path, module):
            return True, [file_path]
    return False, files


def module_parts(path: Path) -> list[str]:
    """The path parts of the module ``path`` stands for (its package folder for ``__init__.py``)."""
    parts = list(path.with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def spells_path(module: str, path_parts: list[str]) -> bool:
    """Whether the dotted ``module`` of an import can be the file whose path is ``path_parts``:
    an absolute name must spell the end of the path (``torch.utils.checkpoint`` is not
    ``pointcept/models/utils/checkpoint.py``); a relative one can (it is not resolved here)."""
    if module.startswith("."):
        return True
    dotted = module.split(".")
    return path_parts[-len(dotted) :] == dotted


def _imports_module(index: ModuleIndex, path: Path, module: list[str]) -> bool:
    """Whether the module of ``index`` (at ``path``) imports ``module`` (its path parts) or a
    name from it: a relative import resolved from ``path``'s folder, an absolute one whose
    dotted name spells the end of the module's path."""
    folder = list(path.parent.parts)
    for statement in index.statements:
        for _, full in statement.imported:
            dots = len(full) - len(full.lstrip("."))
            dotted = [p for p in full[dots:].split(".") if p]
            base = folder[: len(folder) - (dots - 1)] if dots else []
            for candidate in (dotted, dotted[:-1]):
                if dots and base + candidate == module:
                    return True
                if not dots and candidate and spells_path(".".join(candidate), module):
                    return True
    return False


def _holders(raw: bytes, index: ModuleIndex, pattern: re.Pattern[bytes], name: str) -> set[str | None]:
    """Where ``raw`` (a module, ``index`` its index) names ``name`` outside a definition of that
    name, an import, an ``__all__`` assignment and a comment: the names of the top-level
    ``class``/``def`` statements holding such a mention, ``None`` for any other statement
    (module-level code; the search stops there)."""
    starts = [s.start for s in index.statements]
    found: set[str | None] = set()
    for match in pattern.finditer(raw):
        line_start = raw.rfind(b"\n", 0, match.start()) + 1
        if b"#" in raw[line_start : match.start()]:
            continue
        row = raw.count(b"\n", 0, match.start()) + 1
        at = bisect.bisect_right(starts, row) - 1
        if at < 0 or index.statements[at].end < row:
            continue  # between statements: a comment line
        statement = index.statements[at]
        if statement.imports and any(full.rsplit(".", 1)[-1] == name and bound != name for bound, full in statement.imported):
            found.add(None)  # `from .layers import Block as B`: the alias is not followed, it counts as a use
            return found
        if statement.kind == "import" or "__all__" in statement.binds:
            continue
        if statement.kind in ("class", "function") and name in statement.binds:
            continue
        if statement.kind in ("class", "function") and len(statement.binds) == 1:
            found.add(next(iter(statement.binds)))
            continue
        found.add(None)
        return found
    return found
