"""Linting one file's bytes: gate, decode, parse once, run the enabled rules, apply noqa, fix."""

from __future__ import annotations

import ast
import os
import traceback
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ckptlint.config.settings import Settings
from ckptlint.lint.compile_errors import compile_error, syntax_error_at
from ckptlint.lint.gate import file_may_have_findings
from ckptlint.lint.limits import (
    MAX_FILE_BYTES,
    internal_error,
    size_limit,
    too_large,
    undecodable,
)
from ckptlint.lint.results import FileResult, FixMode, Problem, ProblemKind
from ckptlint.rule_codes import IO_ERROR, SYNTAX_ERROR, UNUSED_NOQA
from ckptlint.semantic.project import Project, module_name_for
from ckptlint.text.diagnostics import Applicability, Diagnostic, Fix, edits_wanted
from ckptlint.text.fixer import MAX_PASSES, apply_edits, select_fixes
from ckptlint.text.noqa import INVALID_MESSAGE as INVALID_NOQA
from ckptlint.text.noqa import (
    NoqaIndex,
    may_have_invalid,
    parse_noqa,
    unused_noqa_diagnostics,
)
from ckptlint.text.reading import load_source
from ckptlint.text.source import SourceDecodeError, SourceFile

if TYPE_CHECKING:
    from ckptlint.semantic.ast_analysis import AstAnalysis


def _relative_to(path: str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return Path(path).name


#: Codes the linter reports itself: no rule runs for them.
_NO_TREE = frozenset({UNUSED_NOQA, IO_ERROR, SYNTAX_ERROR})


class FileLinter:
    """Lints files one at a time, sharing a :class:`~ckptlint.semantic.project.Project` (the cache of
    other modules that regions reach)."""

    def __init__(self, project: Project | None = None, *, defer_unused_noqa_fixes: bool = False) -> None:
        self.project = project or Project()
        self.ast_project = self.project.ast_project
        #: leave CKP901's fixes to :func:`lint_files`, which knows the noqa used from other files
        self.defer_unused_noqa_fixes = defer_unused_noqa_fixes
        self._noqa_used_elsewhere: set[tuple[str, int]] = set()

    # ------------------------------------------------------------------ public
    def lint(
        self,
        path: str,
        raw: bytes,
        settings: Settings,
        *,
        fix: FixMode = FixMode.NONE,
        unsafe: bool = False,
        gate: bool = True,
    ) -> FileResult:
        """Lint ``raw`` (the bytes of ``path``); never raises.

        Bad input and ckptlint's own bugs become :class:`Problem` records of the result
        (an unexpected exception: kind ``"internal"``, with its traceback as ``detail``).
        """
        result = FileResult(path=path, raw=raw)
        self._noqa_used_elsewhere = result.noqa_used_elsewhere
        try:
            return self._lint(result, raw, settings, fix, unsafe, gate)
        except Exception as exc:  # noqa: BLE001 - last line of defence: one file never stops the run
            result.diagnostics, result.fixed, result.fixed_text, result.fixed_codes = [], 0, None, {}
            result.problems.append(internal_error(path, exc))
            return result

    def _lint(
        self, result: FileResult, raw: bytes, settings: Settings, fix: FixMode, unsafe: bool, gate: bool
    ) -> FileResult:
        path = result.path
        if gate and not file_may_have_findings(raw, path):
            result.problems += undecodable(path, raw)
            return result
        if len(raw) > size_limit(path):
            result.problems.append(too_large(path, len(raw)))
            return result
        try:
            source = load_source(raw, path)
        except SourceDecodeError as exc:
            result.problems.append(Problem(path, str(exc), ProblemKind.DECODE))
            return result
        if len(source.text) > MAX_FILE_BYTES:  # a notebook's code cells (a .py file's text is never longer)
            result.problems.append(too_large(path, len(source.text), MAX_FILE_BYTES))
            return result
        result.source = source
        module_name, is_package, root = module_name_for(Path(path)) if os.path.isabs(path) else ("", False, Path.cwd())
        self.ast_project.track(root)
        diagnostics, problems = self.check(source, settings, module_name, is_package)
        result.dependencies = [str(p) for p in self.project.accessed() if str(p) != path]
        result.problems += problems
        if fix is FixMode.NONE:
            result.diagnostics = _built(diagnostics) if edits_wanted() else diagnostics
            return result
        self._fix(result, source, settings, module_name, is_package, unsafe, diagnostics)
        return result

    def check(
        self, source: SourceFile, settings: Settings, module_name: str = "", is_package: bool = False
    ) -> tuple[list[Diagnostic], list[Problem]]:
        """Diagnostics of ``source`` after noqa and per-file-ignores, and problems met."""
        from ckptlint.semantic.nesting import deep_recursion

        problems: list[Problem] = []
        enabled = settings.enabled - settings.ignored_for(_relative_to(source.path, settings.root))
        parsed = self._parse(source, module_name, is_package)
        if isinstance(parsed, Diagnostic):
            # Like ruff's syntax errors, CKP999 is always reported: selection, per-file-ignores
            # and noqa cannot hide that a file was not checked.
            return [parsed], problems
        if isinstance(parsed, Problem):
            problems.append(parsed)
            return [], problems
        analysis, depth = parsed
        if os.path.isabs(source.path):
            self.ast_project.remember(Path(source.path), analysis)
        with deep_recursion(depth):
            found = self._run_rules(analysis, source, settings, enabled, list(problems))
        return self._with_compile_error(source, *found, tree=analysis.tree, depth=depth)

    def _with_compile_error(
        self,
        source: SourceFile,
        diagnostics: list[Diagnostic],
        problems: list[Problem],
        *,
        tree: ast.Module | None = None,
        depth: int = 0,
    ) -> tuple[list[Diagnostic], list[Problem]]:
        """The rules' findings plus CKP999 where CPython's compiler rejects the parsed file
        (:mod:`ckptlint.lint.compile_errors`); like a parse error, it is reported whatever the
        selection, per-file-ignores or noqa say. ``tree`` (the file's ``ast``
        tree, ``depth`` levels deep) is compiled in place of the text unless it nests deeper
        than :data:`~ckptlint.semantic.nesting.DEEP` (where the compiler's recursion limits,
        which differ between a text and a tree, may decide)."""
        from ckptlint.lint.compile_errors import compile_error_diagnostic
        from ckptlint.semantic.nesting import DEEP
        from ckptlint.text.notebook import NotebookSource

        notebook = isinstance(source, NotebookSource)
        error = compile_error_diagnostic(source, top_level_await=notebook, tree=tree if depth <= DEEP else None)
        if error is None:
            return diagnostics, problems
        return sorted([*diagnostics, error], key=lambda d: d.sort_key), problems

    def _parse(self, source: SourceFile, module_name: str, is_package: bool) -> tuple[AstAnalysis, int] | Diagnostic | Problem:
        """The ``ast`` analysis the rules read and its nesting depth
        (:func:`~ckptlint.semantic.nesting.nesting_depth`); CKP999 where CPython's parser
        rejects the text, a ``parse`` :class:`Problem` where it nests too deep. The analysis
        of the same text kept by the project (a region of a file linted before reached it)
        is taken as is."""
        from ckptlint.semantic.ast_analysis import AstAnalysis, parse_tree
        from ckptlint.semantic.nesting import DEEP, MAX_NESTING, nesting_depth, too_deep_message

        kept = self.ast_project.cached(Path(source.path)) if os.path.isabs(source.path) else None
        if kept is not None and kept.source.text == source.text and (kept.module_name, kept.is_package) == (module_name, is_package):
            tree = kept.tree
        else:
            kept = None
            try:
                tree = parse_tree(source)
            except SyntaxError as error:
                row = min(max(1, error.lineno or 1), len(source.line_starts))
                column = min(max(1, error.offset or 1), len(source.line(row)) + 1)
                return syntax_error_at(source, error.msg or "invalid syntax", row, column)
            except ValueError as error:  # a null byte
                return syntax_error_at(source, str(error) or "invalid syntax", 1, 1)
            except (RecursionError, MemoryError):  # CPython's parser gives up on the nesting
                return Problem(source.path, too_deep_message(), ProblemKind.PARSE)
        depth = nesting_depth(tree) if len(source.text) >= DEEP else 0
        if depth > MAX_NESTING:
            return Problem(source.path, too_deep_message(), ProblemKind.PARSE)
        return (kept or AstAnalysis(source, tree, module_name, is_package)), depth

    def _run_rules(
        self,
        analysis: AstAnalysis,
        source: SourceFile,
        settings: Settings,
        enabled: frozenset[str],
        problems: list[Problem],
    ) -> tuple[list[Diagnostic], list[Problem]]:
        from ckptlint.rules import ALL_RULES, RuleContext

        rules = ALL_RULES
        found: list[Diagnostic] = []
        failed: set[str] = set()
        ctx = RuleContext(analysis, self.ast_project, found.append, settings.target_versions)
        for code in sorted(enabled - _NO_TREE):
            try:
                ctx.code = code
                rules[code]().check(ctx)
            except RecursionError:
                failed.add(code)
                problems.append(Problem(source.path, f"{code}: too deeply nested to analyse", ProblemKind.INTERNAL))
            except Exception as exc:  # noqa: BLE001 - one rule's bug must not stop the run
                failed.add(code)
                problems.append(
                    Problem(
                        source.path,
                        f"internal error in rule {code}: {type(exc).__name__}: {exc}",
                        ProblemKind.INTERNAL,
                        traceback.format_exc(),
                    )
                )
        noqa: dict[str, NoqaIndex] = {}
        kept = self._filter(found, source, settings, enabled, analysis, noqa)
        if may_have_invalid(source.text):  # ruff warns about a noqa directive with a colon and no codes, and ignores it
            index = noqa.get(source.path) or noqa.setdefault(source.path, parse_noqa(source, line_map=False))
            problems += [Problem(source.path, f"{row}: {INVALID_NOQA}", ProblemKind.WARNING) for row in index.invalid]
        for path, other in noqa.items():
            if path != source.path:  # for CKP901 in that file (see settle_unused_noqa)
                self._noqa_used_elsewhere.update((path, row) for row, d in other.by_row.items() if d.used)
        if UNUSED_NOQA in enabled:
            kept = sorted(kept + self._unused_noqa(source, settings, enabled - failed, noqa), key=lambda d: d.sort_key)
        return kept, problems

    def _unused_noqa(
        self, source: SourceFile, settings: Settings, ran: frozenset[str], noqa: dict[str, NoqaIndex]
    ) -> list[Diagnostic]:
        """CKP901: the pass after noqa filtering, over the directives of ``source``; codes of
        rules that ran (``ran``) and are not CKP901 itself are judged."""

        index = noqa.get(source.path) or parse_noqa(source, line_map=False)
        found = unused_noqa_diagnostics(source, index, ran - {UNUSED_NOQA})
        return [_adjust_applicability(d, settings) for d in found if not index.suppresses(d)]

    # ----------------------------------------------------------------- helpers
    def _filter(
        self,
        found: list[Diagnostic],
        source: SourceFile,
        settings: Settings,
        enabled: frozenset[str],
        analysis: AstAnalysis | None = None,
        noqa: dict[str, NoqaIndex] | None = None,
    ) -> list[Diagnostic]:
        noqa = {} if noqa is None else noqa
        kept: list[Diagnostic] = []
        for diagnostic in found:
            if diagnostic.path != source.path:
                other = _relative_to(diagnostic.path, settings.root)
                if diagnostic.code in settings.ignored_for(other) or diagnostic.code not in settings.enabled:
                    continue
            elif diagnostic.code not in enabled:
                continue
            index = noqa.get(diagnostic.path)
            if index is None:
                index = noqa[diagnostic.path] = parse_noqa(self._source_of(diagnostic.path, source), line_map=False)
            if index.suppresses(diagnostic):
                continue
            kept.append(_adjust_applicability(diagnostic, settings))
        kept.sort(key=lambda d: d.sort_key)
        return kept

    def _source_of(self, path: str, current: SourceFile) -> SourceFile:
        if path == current.path:
            return current
        other = self.ast_project.ast_analysis_for_file(Path(path))
        return other.source if other is not None else SourceFile(path, "")

    def _fix(
        self,
        result: FileResult,
        source: SourceFile,
        settings: Settings,
        module_name: str,
        is_package: bool,
        unsafe: bool,
        diagnostics: list[Diagnostic],
    ) -> None:
        current = source
        fixed = 0
        applied: list[Diagnostic] = []
        diagnostics = _built(diagnostics)
        result.diagnostics_before_fix = list(diagnostics)
        for _ in range(MAX_PASSES):
            applicable = self._applicable(diagnostics, source.path, unsafe)
            if not applicable:
                break
            picked, edits = select_fixes(current, applicable)
            new_text = apply_edits(current.text, edits)
            if new_text == current.text:
                break
            fixed += len(picked)
            applied += picked
            for d in picked:
                result.fixed_codes[d.code] = result.fixed_codes.get(d.code, 0) + 1
            current = replace(current, text=new_text)
            diagnostics, problems = self.check(current, settings, module_name, is_package)
            diagnostics = _built(diagnostics)
            broken = None
            if _does_not_parse(current):  # (a CKP999 of the compiler alone is no parse error)
                broken = f"does not parse ({compile_error(current.text) or 'too deeply nested to parse'})"
            elif (why := compile_error(current.text)) is not None and compile_error(source.text) is None:
                broken = f"does not compile ({why})"
            if broken is not None:
                self._reject_fixes(result, source, settings, (module_name, is_package), applied, broken)
                return
            known = {p.message for p in result.problems}
            result.problems += [p for p in problems if p.message not in known]
        else:
            if self._applicable(diagnostics, source.path, unsafe):  # a fixed finding keeps coming back
                what = f"does not converge (findings still fixable after {MAX_PASSES} passes)"
                self._reject_fixes(result, source, settings, (module_name, is_package), applied, what)
                return
        result.diagnostics = diagnostics
        result.fixed = fixed
        result.fixed_text = current.text

    def _applicable(self, diagnostics: list[Diagnostic], path: str, unsafe: bool) -> list[Diagnostic]:
        """The findings of ``path`` with a fix to apply, each holding that fix (its own, or its
        safe fallback without ``--unsafe-fixes``)."""
        return [
            replace(d, fix=chosen)
            for d in diagnostics
            if d.path == path
            and d.fix is not None
            and (chosen := d.fix.chosen(unsafe)) is not None
            and not (self.defer_unused_noqa_fixes and d.code == UNUSED_NOQA)
        ]

    def _reject_fixes(
        self,
        result: FileResult,
        source: SourceFile,
        settings: Settings,
        module: tuple[str, bool],
        applied: list[Diagnostic],
        what: str,
    ) -> None:
        """Leave the file as it was (nothing to write) and report the fixes that broke it."""
        codes = sorted({d.code for d in applied})
        fixes = f"the fix for {codes[0]}" if len(codes) == 1 else f"the fixes for {', '.join(codes)}"
        message = f"internal error: {fixes} produced code that {what}; file left unchanged"
        result.problems.append(Problem(source.path, message, ProblemKind.FIX))
        diagnostics, _ = self.check(source, settings, *module)
        result.diagnostics = _built(diagnostics)
        result.fixed_codes = {}
        result.fixed = 0
        result.fixed_text = None


def _does_not_parse(source: SourceFile) -> bool:
    """Whether CPython's parser, which the linter reads every file with, refuses the fixed
    text ``source``."""
    return not _cpython_parses(source.text)


def _cpython_parses(text: str) -> bool:
    """Whether CPython's own parser (the running interpreter's) builds an AST of ``text``,
    with the recursion allowed for the depths the linter reads
    (:data:`~ckptlint.semantic.nesting.MAX_NESTING`); ``False`` on a syntax error and when it cannot tell (``RecursionError``...)."""
    from ckptlint.semantic.nesting import MAX_NESTING, deep_recursion

    try:
        with warnings.catch_warnings(), deep_recursion(MAX_NESTING + 101):
            warnings.simplefilter("ignore")  # SyntaxWarnings are the linted code's business
            compile(text, "<source>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError, ValueError
        return False
    return True


def _adjust_applicability(diagnostic: Diagnostic, settings: Settings) -> Diagnostic:
    """``extend-safe-fixes`` / ``extend-unsafe-fixes`` applied to the finding's fix and its
    fallback."""
    if diagnostic.fix is None:
        return diagnostic
    override = settings.promote(diagnostic.code)
    if override is None:
        return diagnostic
    return replace(diagnostic, fix=_overridden(diagnostic.fix, override))


def _overridden(fix: Fix, override: Applicability) -> Fix:
    fallback = _overridden(fix.fallback, override) if fix.fallback is not None else None
    if fix.applicability is not Applicability.DISPLAY_ONLY:
        fix = replace(fix, applicability=override)
    return replace(fix, fallback=fallback)  # (the edits stay unbuilt: replace copies the builder)


def _built(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` with the edits of their fixes built (:meth:`Fix.resolved
    <ckptlint.text.diagnostics.Fix.resolved>`: a fix whose edits cannot be built is
    dropped): for a run that applies or shows edits, before its results are stored or sent
    to another process. A plain run leaves them unbuilt (never parsing with libcst, which
    builds the edits from the statement around each)."""
    out: list[Diagnostic] = []
    for d in diagnostics:
        fix = d.fix.resolved() if d.fix is not None else None
        out.append(d if fix is d.fix else replace(d, fix=fix))
    return out
