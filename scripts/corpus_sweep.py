#!/usr/bin/env python3
"""Sweep real repositories with ckptlint and check its promises on every file.

Usage: ``python scripts/corpus_sweep.py PATH... [--work DIR] [--jobs N]``

For each PATH (a source tree; never modified) the sweep copies its ``.py`` files and notebooks to a
scratch folder and runs this checkout's ``ckptlint`` there, as a user would:

1. lint every file with all rules (``--select ALL``, no excludes, JSON output);
2. ``--fix --unsafe-fixes``;
3. checks that every file that compiled before still compiles (``compile()``);
4. a second ``--fix --unsafe-fixes`` changes no byte;
5. lints again: no finding with an applicable fix is left (every fixed finding is gone).

With ``--ungated`` every file is also parsed, analysed and fixed in memory without the gate
(which skips files that cannot hold findings): a crash test of the parser guard, the semantic
model and every rule on all real code.

Internal errors (crashes, refused fixes) and broken promises are listed; the exit status is
1 when any was found. Prints one table row per repository: files, findings by rule, fixes,
second-pass changes, time, crashes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
COMMON = ["--isolated", "--select", "ALL", "--exclude", "__ckptlint_sweep_excludes_nothing__", "--no-respect-gitignore"]


@dataclass
class Sweep:
    name: str
    files: int = 0
    findings: Counter = field(default_factory=Counter)
    fixed_files: int = 0
    fixed_findings: int = 0
    second_pass_changes: list[str] = field(default_factory=list)
    broken_by_fix: list[str] = field(default_factory=list)
    left_fixable: list[str] = field(default_factory=list)
    internal: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lint_s: float = 0.0
    fix_s: float = 0.0
    ungated_s: float = 0.0
    slowest: tuple[str, float] = ("", 0.0)

    @property
    def ok(self) -> bool:
        return not (self.second_pass_changes or self.broken_by_fix or self.left_fixable or self.internal)


def ckptlint(*args: str, cwd: Path, jobs: int | None) -> tuple[subprocess.CompletedProcess[str], float]:
    env = dict(os.environ, PYTHONPATH=str(CHECKOUT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [sys.executable, "-m", "ckptlint", *COMMON, *(["-j", str(jobs)] if jobs else []), *args, "."]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1, 2):  # 130/143 (stopped by a signal) or a crash
        raise SystemExit(f"ckptlint died ({done.returncode}) in {cwd}:\n{done.stderr[-3000:]}")
    return done, elapsed


def copy_python_files(source: Path, target: Path) -> list[Path]:
    """Copy the ``.py`` files and Jupyter notebooks of ``source`` under ``target`` (which is
    created even when there is nothing to copy); returns the copies."""
    copied = []
    target.mkdir(parents=True, exist_ok=True)
    candidates = sorted([*source.rglob("*.py"), *source.rglob("*.ipynb")])
    for path in candidates:
        if not path.is_file() or path.is_symlink() or ".git" in path.parts:
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        copied.append(destination)
    return copied


def snapshot(files: list[Path]) -> dict[Path, str]:
    return {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def compiles(path: Path) -> bool:
    """Whether CPython compiles the file (for a notebook: its code cells, IPython lines
    masked, and the notebook JSON must still validate against nbformat's schema)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = path.read_bytes()
            if path.suffix == ".ipynb":
                from ckptlint.text.notebook import NotebookError, code_bytes, validate

                try:
                    validate(source.decode("utf-8-sig"))
                except (NotebookError, ValueError, ImportError):
                    return False
                except Exception:  # noqa: BLE001 - nbformat.ValidationError, a jsonschema error
                    return False
                source = code_bytes(source)
            compile(source, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    except RecursionError:  # pragma: no cover - pathological files
        return False
    return True


def _lint_ungated(path: str) -> tuple[str, list[str], int, float]:
    """In a worker: lint one file without the gate, all rules, fixes computed (not written)."""
    if path.endswith(".ipynb"):
        return path, [], 0, 0.0  # notebooks are swept by the CLI runs (their fixes are JSON)
    from ckptlint.api import settings_for
    from ckptlint.lint.linter import FileLinter
    from ckptlint.lint.results import FixMode

    started = time.perf_counter()
    result = FileLinter().lint(
        path, Path(path).read_bytes(), settings_for(["ALL"]), fix=FixMode.APPLY, unsafe=True, gate=False
    )
    broken = []
    if result.fixed_text is not None and result.changed:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(result.fixed_text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            broken.append(f"{path}: fixed text does not compile: {exc}")
    lines = [p.line() for p in result.problems if p.kind in ("internal", "fix")] + broken
    return path, lines, len(result.diagnostics), time.perf_counter() - started


def sweep_ungated(files: list[Path], jobs: int | None, sweep: Sweep) -> None:
    """Parse and analyse every file, even those the gate would skip: a crash test of the
    parser guard, the semantic model and every rule on all real code."""
    from concurrent.futures import ProcessPoolExecutor

    sys.path.insert(0, str(CHECKOUT))
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs or os.cpu_count()) as pool:
        for path, lines, _, seconds in pool.map(_lint_ungated, [str(f) for f in files], chunksize=8):
            sweep.internal += lines
            if seconds > sweep.slowest[1]:
                sweep.slowest = (path, seconds)
    sweep.ungated_s = time.perf_counter() - started


def not_checked(records: list[dict], copy: Path) -> list[str]:
    """The files a run reported as not checked (CKP902: unreadable, undecodable, too deep,
    timed out, not written), as ``path: message``."""
    return [f"{Path(r['filename']).relative_to(copy)}: {r['message']}" for r in records if r["code"] == "CKP902"]


def split_errors(stderr: str, sweep: Sweep) -> None:
    for line in stderr.splitlines():
        if not line.startswith("error: "):
            continue  # a traceback line under --verbose
        (sweep.internal if "internal error" in line else sweep.problems).append(line[len("error: ") :])


def sweep_tree(source: Path, work: Path, jobs: int | None, ungated: bool = False) -> Sweep:
    sweep = Sweep(source.name)
    copy = work / source.name
    shutil.rmtree(copy, ignore_errors=True)
    files = copy_python_files(source, copy)
    sweep.files = len(files)
    compiled_before = {path for path in files if compiles(path)}
    if ungated:
        sweep_ungated(files, jobs, sweep)

    done, sweep.lint_s = ckptlint("--output-format", "json", cwd=copy, jobs=jobs)
    split_errors(done.stderr, sweep)
    before = json.loads(done.stdout or "[]")
    sweep.findings = Counter(record["code"] for record in before)
    sweep.problems += not_checked(before, copy)

    original = snapshot(files)
    done, sweep.fix_s = ckptlint("--fix", "--unsafe-fixes", "--output-format", "json", cwd=copy, jobs=jobs)
    split_errors(done.stderr, sweep)
    sweep.problems += not_checked(json.loads(done.stdout or "[]"), copy)
    fixed = snapshot(files)
    changed = [path for path in files if fixed[path] != original[path]]
    sweep.fixed_files = len(changed)
    sweep.broken_by_fix = [str(p.relative_to(copy)) for p in changed if p in compiled_before and not compiles(p)]

    done, _ = ckptlint("--fix", "--unsafe-fixes", cwd=copy, jobs=jobs)
    split_errors(done.stderr, sweep)
    sweep.second_pass_changes = [
        str(p.relative_to(copy)) for p in files if hashlib.sha256(p.read_bytes()).hexdigest() != fixed[p]
    ]

    done, _ = ckptlint("--output-format", "json", cwd=copy, jobs=jobs)
    after = json.loads(done.stdout or "[]")
    fixable = [r for r in after if r["fix"] and r["fix"]["applicability"] in ("safe", "unsafe")]
    sweep.left_fixable = [
        f"{Path(r['filename']).relative_to(copy)}:{r['location']['row']}: {r['code']}" for r in fixable
    ]
    sweep.fixed_findings = len(before) - len(after)
    sweep.internal = sorted(set(sweep.internal))
    sweep.problems = sorted(set(sweep.problems))
    return sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="source trees to sweep (read-only)")
    parser.add_argument("--work", type=Path, help="scratch folder for the copies [default: a temporary folder]")
    parser.add_argument("--jobs", type=int, help="ckptlint -j")
    parser.add_argument("--keep", action="store_true", help="keep the fixed copies")
    parser.add_argument("--ungated", action="store_true", help="also parse and analyse every file the gate skips")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="ckptlint-sweep-"))
    work.mkdir(parents=True, exist_ok=True)
    sweeps = []
    try:
        for path in args.paths:
            sweeps.append(sweep_tree(path.resolve(), work, args.jobs, args.ungated))
            s = sweeps[-1]
            print(f"swept {s.name}: {s.files} files, lint {s.lint_s:.1f} s, fix {s.fix_s:.1f} s", file=sys.stderr)
            if args.ungated:
                print(f"  ungated: {s.ungated_s:.1f} s, slowest {s.slowest[0]} {s.slowest[1]:.1f} s", file=sys.stderr)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        "| repository | .py and .ipynb files | findings by rule | files fixed | findings fixed | 2nd-pass changes | "
        "broken by fix | fixable left | lint s | fix s | internal errors | other problems |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in sweeps:
        rules = ", ".join(f"{code} {n}" for code, n in sorted(s.findings.items())) or "-"
        print(
            f"| {s.name} | {s.files} | {rules} | {s.fixed_files} | {s.fixed_findings} | {len(s.second_pass_changes)} | "
            f"{len(s.broken_by_fix)} | {len(s.left_fixable)} | {s.lint_s:.1f} | {s.fix_s:.1f} | {len(s.internal)} | "
            f"{len(s.problems)} |"
        )
    failed = False
    for s in sweeps:
        for title, items in (
            ("internal errors", s.internal),
            ("second --fix changed", s.second_pass_changes),
            ("no longer compiles after --fix", s.broken_by_fix),
            ("still fixable after --fix", s.left_fixable),
            ("other problems (bad input)", s.problems),
        ):
            if items:
                failed = failed or title != "other problems (bad input)"
                print(f"\n{s.name}: {title} ({len(items)}):")
                print("\n".join(f"  {item}" for item in items[:50]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
