"""The linter's path as the switch-over to ``ast`` will run it, measured before it exists:
gate every ``.py`` file of a tree, read the gated ones on ``ast`` (``parse_ast``, through one
:class:`~ckptlint.semantic.ast_analysis.AstProject` for the run, so a module a region reached
is not read again), run every rule (``rules/ckpNNN_*``, ``ckptlint.rules.ALL_RULES``) with
:class:`~ckptlint.rules.base.RuleContext`, and
drop what a ``noqa`` comment suppresses, as ``FileLinter._filter`` does for the default
selection. Prints the findings as ``ckptlint --output-format concise`` does (paths relative to
the tree), so the output compares with the linter's line for line for the rules ported, and
the CPU time on stderr.

Usage: ``python benchmarks/ast_path.py TREE`` from the tree's folder or with its path; time the
whole command against ``ckptlint --no-cache -j 1 TREE`` and ``ruff check --select E9
--no-cache TREE`` (see ``benchmarks/run.py``). Not part of the linter: it differs from it in
what the switch-over must still build: settings (the project's declared library versions, which
decide CKP001's and CKP004's messages, per-file-ignores), the run's handling of findings a region
reports in another file (kept once, filtered by that file's settings), CKP901/CKP902/CKP999,
compile errors, fixes, the cache and notebooks. On the 56 corpus trees its output equals the
linter's in 40 trees; the other 16 differ only by those (declared transformers versions, and
findings in other files).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

from ckptlint.lint.gate import file_may_have_findings
from ckptlint.registry import RULES
from ckptlint.rules import ALL_RULES, RuleContext
from ckptlint.semantic.ast_analysis import AstProject
from ckptlint.semantic.project import Project, module_name_for
from ckptlint.text.diagnostics import Diagnostic
from ckptlint.text.noqa import parse_noqa
from ckptlint.text.reading import load_source
from ckptlint.text.source import SourceDecodeError


def lint_tree(root: Path) -> tuple[list[Diagnostic], dict[str, float]]:
    """The findings of every gated file of ``root`` on the ``ast`` path, sorted as the linter
    sorts them, and counters (files, gated, parsed, CPU seconds)."""
    rules = ALL_RULES
    enabled = sorted(code for code in rules if RULES[code].default_enabled)
    project = AstProject(Project(partial=False))
    found: list[Diagnostic] = []
    counts = {"files": 0.0, "gated": 0.0, "refused": 0.0}
    for path in sorted(root.rglob("*.py")):
        if any(part.startswith(".") for part in path.relative_to(root).parts) or not path.is_file():
            continue
        counts["files"] += 1
        raw = path.read_bytes()
        if not file_may_have_findings(raw, str(path)):
            continue
        counts["gated"] += 1
        try:
            source = load_source(raw, str(path))
        except SourceDecodeError:
            continue
        home = module_name_for(path)[2]
        project.track(home)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = project.ast_analysis_for_file(path)
        if analysis is None:
            counts["refused"] += 1
            continue
        reported: list[Diagnostic] = []
        ctx = RuleContext(analysis, project, reported.append)
        for code in enabled:
            ctx.code = code
            rules[code]().check(ctx)
        noqa = {}
        for diagnostic in reported:
            index = noqa.get(diagnostic.path)
            if index is None:
                text = source if diagnostic.path == source.path else project.ast_analysis_for_file(Path(diagnostic.path))
                if text is None:
                    continue
                index = noqa[diagnostic.path] = parse_noqa(text if text is source else text.source, line_map=False)
            if not index.suppresses(diagnostic):
                found.append(diagnostic)
    found.sort(key=lambda d: d.sort_key)
    return found, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    args = parser.parse_args(argv)
    root = Path(os.path.abspath(args.tree))
    begin = time.process_time()
    found, counts = lint_tree(root)
    cpu = time.process_time() - begin
    for d in found:
        shown = os.path.relpath(d.path, root)
        print(f"{shown}:{d.start[0]}:{d.start[1]}: {d.code} {d.message}")
    print(
        f"{root.name}: {int(counts['files'])} files, {int(counts['gated'])} gated, {int(counts['refused'])} refused, "
        f"{len(found)} findings; rules {', '.join(sorted(ALL_RULES))}; CPU {cpu:.2f} s",
        file=sys.stderr,
    )
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
