"""Speed benchmark: ckptlint cold, warm and after edits, next to ruff and TorchFix.

Usage::

    python benchmarks/run.py --corpus benchmarks/corpus.txt --json out.json   # everything
    python benchmarks/run.py --tree PATH [--tree PATH ...]   # real trees (linted in a scratch copy)
    python benchmarks/run.py --one-file PATH [--one-file PATH ...]   # the pre-commit case only
    python benchmarks/run.py                      # a generated 10,000-file tree
    python benchmarks/run.py --files 2000         # a smaller generated tree

Inputs. ``--tree`` (repeatable) and ``--corpus FILE`` (one ``owner/name@commit`` a line,
``#`` comments, each repository in the folder ``name`` below ``--corpus-root`` or
``$CKPTLINT_BENCH_CORPUS``; ``owner/name@commit path/in/repo.py`` adds a one-file case)
name real trees; they are copied (``.git`` and caches left out) into one scratch folder
under ``--work`` and every tool lints the copies, given as one argument each, so nothing is
ever written into the originals. Without either, a generated tree (``generate.py``) is used.

Every tool runs in a subprocess on the same files in the same invocation, so ratios compare
like with like on a busy machine. For each run it records the wall time, the CPU time
(user + system of the process and its children, from ``os.wait4``), the peak resident
memory of the largest single process (``ru_maxrss`` of the process and its waited-for
workers), the peak of the summed resident memory of the process tree (sampled every 20 ms
from ``/proc``), files per second, and the ratio of the wall time to ruff's. Scenarios:

- ``ruff``: ``ruff check --no-cache --isolated --select E9 TREES`` (parses every file), run
  once right before each ckptlint run;
- ``cold``: ckptlint with its cache folder emptied first (it writes the cache, as a first
  run does); run through ``timed_ckptlint.py``, which records the time of each parsed file;
- ``warm``: ckptlint again, nothing changed;
- ``touch 1``: after appending a comment line to one file that passes the gate;
- ``touch 1%``: after appending a comment line to 1% of the ``.py`` files (chosen at random);
- ``torchfix``: ``torchfix --select TOR003`` when a ``torchfix`` executable is given
  (``--torchfix PATH``); it lints a few files a second, so on more than ``--torchfix-files``
  files it runs on a deterministic random subset of that many and its time for all the files
  is extrapolated from its files per second (said so in the table).

Each ckptlint/ruff scenario runs ``--repeat`` times and the median is shown. The cold and
warm outputs must be byte-identical (exit status 1 otherwise).

Counters: every ckptlint run gets ``CKPTLINT_PERF_JSON=PATH`` in its environment; when the
ckptlint being measured writes that file (keys ``files_linted``, ``ast_parses``,
``ast_chars_parsed``, ``cst_parses``, ``cst_chars_parsed``, ``evaluation_steps``; see
``ckptlint/perf.py``), they are shown, else ``n/a`` (a key it does not write: ``None``).

Slowest files: the per-file times of the cold run (in its workers), the ``--slowest``
largest; the ``--alone`` slowest of them are then linted alone, as pre-commit would
(``ckptlint --isolated --no-cache FILE``, median of 3).

One file (``--one-file``, the pre-commit case): for each file, ``ckptlint --isolated
--no-cache FILE`` against ``ruff check --no-cache --isolated FILE`` (ruff's default rules),
alternated ``--one-file-repeat`` times, medians; plus ``python -c pass`` (the interpreter's
own start) and, from one ``python -X importtime`` run, the modules ckptlint imported, their
summed import time and whether libcst was among them. The file is linted where it is (a
region may read its neighbours); nothing is written.

ckptlint's modules are compiled to bytecode first (``compileall``, as ``pip install`` does)
and ``PYTHONDONTWRITEBYTECODE`` is removed from the children's environment.

``--ckptlint-src DIR`` measures the ckptlint of another checkout (``PYTHONPATH``), e.g. main
for a baseline, with this harness.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from generate import generate_tree  # noqa: E402

COUNTERS = (
    "files_linted",
    "ast_parses",
    "ast_chars_parsed",
    "cst_parses",
    "cst_chars_parsed",
    "evaluation_steps",
)


@dataclass
class Measurement:
    """One run of one command."""

    wall: float
    cpu: float
    max_rss_mb: float
    tree_rss_mb: float
    returncode: int
    counters: dict | None = None


@dataclass
class Row:
    scenario: str
    tool: str
    files: int
    wall: float
    cpu: float
    max_rss_mb: float
    tree_rss_mb: float
    runs: int
    note: str = ""
    ratio: float | None = None
    counters: dict | None = None
    walls: list[float] = field(default_factory=list)

    @property
    def files_per_second(self) -> float:
        return self.files / self.wall if self.wall else float("inf")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                out += [int(c) for c in handle.read().split()]
    except OSError:
        pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss_kb(pid: int) -> int:
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        total += _rss_kb(current)
        stack += _children(current)
    return total


_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def measure(command: list[str], *, cwd: Path, env: dict[str, str] | None = None, stdout: Path | None = None) -> Measurement:
    """Run ``command``; wall time, CPU time and memory of it and its children.

    CPU time and the largest single process's peak RSS come from ``wait4`` on the command,
    done by GNU ``/usr/bin/time`` when present: a process started directly from this
    (larger) Python process would report this process's size as its peak (Linux carries the
    high-water mark over ``exec``). The process tree's summed RSS is sampled every 20 ms.
    """
    report = Path(cwd) / ".time-report"
    if _TIME:
        command = [_TIME, "-f", "%U %S %M", "-o", str(report), *command]
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    peak = [0]
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.DEVNULL)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(process.pid) - (_rss_kb(process.pid) if _TIME else 0))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    if stdout:
        out.close()  # type: ignore[union-attr]
    if _TIME:
        lines = report.read_text().split("\n")
        user, system, max_rss_kb = (line for line in lines if line.strip() and line[0].isdigit()).__next__().split()
        cpu, max_rss = float(user) + float(system), int(max_rss_kb)
        report.unlink()
    else:
        cpu, max_rss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    return Measurement(wall, cpu, max_rss / 1024, peak[0] / 1024, process.returncode)


def _median_row(scenario: str, tool: str, files: int, runs: list[Measurement], note: str = "") -> Row:
    return Row(
        scenario,
        tool,
        files,
        statistics.median(m.wall for m in runs),
        statistics.median(m.cpu for m in runs),
        max(m.max_rss_mb for m in runs),
        max(m.tree_rss_mb for m in runs),
        len(runs),
        note,
        counters=runs[-1].counters,
        walls=[round(m.wall, 3) for m in runs],
    )


def _python_files(roots: list[Path]) -> list[Path]:
    return sorted(
        p for root in roots for p in root.rglob("*.py") if p.is_file() and ".ckptlint_cache" not in p.parts
    )


def _touch(path: Path, counter: int) -> None:
    """Change the file's content (not just its modification time)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"\n# edited by the benchmark ({counter})\n")


def _gated(files: list[Path]) -> list[Path]:
    """The files that pass ckptlint's gate (those that hold the word ``checkpoint`` when the
    gate of the measured ckptlint cannot be imported)."""
    try:
        from ckptlint.lint.gate import may_have_findings
    except ImportError:  # pragma: no cover - another layout
        return [p for p in files if b"checkpoint" in p.read_bytes()]
    return [p for p in files if may_have_findings(p.read_bytes())]


def _machine() -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpus} CPUs ({model}), Python {platform.python_version()}, {platform.system()} {platform.release()}"


def _version(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "?"


def _git_commit(folder: Path) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=30, check=False
        ).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


#: The environment variable naming the corpus root (the folder holding one folder per repository).
CORPUS_ROOT_ENV = "CKPTLINT_BENCH_CORPUS"


def read_corpus(path: Path, root: Path | None, *, missing_ok: bool = False) -> tuple[list[Path], list[Path]]:
    """The folders and the one-file cases a corpus file names.

    One ``owner/name@commit`` a line (the repository's folder is ``root / name``), or
    ``owner/name@commit path/in/repo.py`` for a one-file case; ``#`` starts a comment.
    ``root`` defaults to the environment variable :data:`CORPUS_ROOT_ENV`. Raises
    ``ValueError`` for a malformed line or when no root is given, ``FileNotFoundError`` for
    a folder or file that does not exist (skipped instead with ``missing_ok``)."""
    if root is None:
        named = os.environ.get(CORPUS_ROOT_ENV)
        if not named:
            raise ValueError(f"{path}: give the corpus root with --corpus-root or {CORPUS_ROOT_ENV}")
        root = Path(named)
    folders: list[Path] = []
    files: list[Path] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        spec, _, inner = line.partition(" ")
        repository, at, commit = spec.partition("@")
        if not at or repository.count("/") != 1 or not commit:
            raise ValueError(f"{path}:{number}: expected owner/name@commit, got {line!r}")
        folder = root.expanduser() / repository.split("/")[1]
        entry = folder / inner.strip() if inner.strip() else folder
        if not entry.exists():
            if missing_ok:
                continue
            raise FileNotFoundError(f"{path}:{number}: {entry} does not exist")
        (files if inner.strip() else folders).append(entry.resolve())
    return folders, files


def _copy_trees(trees: list[Path], into: Path) -> list[Path]:
    """Copy each tree under ``into`` (one folder each, names made unique); the copies."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    copies: list[Path] = []
    for tree in trees:
        name, n = tree.name, 1
        while (into / name).exists():
            n += 1
            name = f"{tree.name}-{n}"
        shutil.copytree(tree, into / name, symlinks=True, ignore=shutil.ignore_patterns(".git", ".ckptlint_cache"))
        copies.append(into / name)
    return copies


def _read_counters(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return {key: data.get(key) for key in COUNTERS} if isinstance(data, dict) else None


def _counters_text(counters: dict | None) -> str:
    if not counters:
        return "n/a"
    return " ".join(f"{key}={counters.get(key, 'n/a')}" for key in COUNTERS)


def _imports(python: str, command: list[str], env: dict[str, str], cwd: Path) -> dict:
    """Modules imported by ``python -X importtime COMMAND``: how many, their summed own
    import time (ms; the interpreter's start-up modules included), whether libcst is among
    them, and the ckptlint modules."""
    proc = subprocess.run(
        [python, "-X", "importtime", *command], capture_output=True, text=True, cwd=cwd, env=env, timeout=300, check=False
    )
    modules: list[str] = []
    own_us = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:"):].split("|")
        if not parts[0].strip().isdigit():
            continue  # the header
        own_us += int(parts[0])
        modules.append(parts[-1].strip())
    return {
        "modules": len(modules),
        "import_ms": round(own_us / 1000, 1),
        "libcst": any(m == "libcst" or m.startswith("libcst.") for m in modules),
        "ckptlint_modules": sorted({m for m in modules if m.startswith("ckptlint")}),
    }


def one_file_cases(files: list[Path], args: argparse.Namespace, env: dict[str, str], work: Path) -> list[dict]:
    """The pre-commit case for each of ``files``: ckptlint against ruff on that file alone."""
    python = sys.executable
    bare = measure_median([python, "-c", "pass"], work, env, args.one_file_repeat)
    out: list[dict] = []
    for path in files:
        ckptlint = [python, "-m", "ckptlint", "--isolated", "--no-cache", str(path)]
        ruff = [args.ruff, "check", "--no-cache", "--isolated", str(path)] if args.ruff else None
        ck_runs: list[Measurement] = []
        ruff_runs: list[Measurement] = []
        for _ in range(args.one_file_repeat):
            if ruff:
                ruff_runs.append(measure(ruff, cwd=work))
            ck_runs.append(_ckptlint_run(ckptlint, work, env, work / "perf-one.json"))
        imports = _imports(python, ckptlint[1:], env, work)
        ck = statistics.median(m.wall for m in ck_runs)
        rf = statistics.median(m.wall for m in ruff_runs) if ruff_runs else None
        out.append(
            {
                "file": str(path),
                "lines": len(path.read_bytes().splitlines()),
                "ckptlint_s": round(ck, 4),
                "ckptlint_walls": [round(m.wall, 4) for m in ck_runs],
                "ckptlint_cpu_s": round(statistics.median(m.cpu for m in ck_runs), 4),
                "ckptlint_rss_mb": round(max(m.max_rss_mb for m in ck_runs), 1),
                "ckptlint_exit": ck_runs[-1].returncode,
                "ruff_s": round(rf, 4) if rf else None,
                "ruff_cpu_s": round(statistics.median(m.cpu for m in ruff_runs), 4) if ruff_runs else None,
                "ratio": round(ck / rf, 1) if rf else None,
                "python_start_s": round(bare, 4),
                "imports": imports,
                "counters": ck_runs[-1].counters,
                "runs": len(ck_runs),
            }
        )
    return out


def measure_median(command: list[str], cwd: Path, env: dict[str, str], repeat: int) -> float:
    return statistics.median(measure(command, cwd=cwd, env=env).wall for _ in range(max(1, repeat)))


def _ckptlint_run(command: list[str], cwd: Path, env: dict[str, str], perf: Path, stdout: Path | None = None,
                  extra_env: dict[str, str] | None = None) -> Measurement:
    perf.unlink(missing_ok=True)
    run = measure(command, cwd=cwd, env=dict(env, CKPTLINT_PERF_JSON=str(perf), **(extra_env or {})), stdout=stdout)
    run.counters = _read_counters(perf)
    return run


def _print_one_file(cases: list[dict]) -> None:
    if not cases:
        return
    print()
    print("one file (pre-commit): ckptlint --isolated --no-cache FILE vs ruff check --no-cache --isolated FILE, medians")
    header = (f"{'file':<60} {'lines':>6} {'ckptlint s':>10} {'CPU s':>6} {'ruff s':>7} {'CPU s':>6} {'x ruff':>7} {'RSS MB':>7} "
              f"{'modules':>7} {'import ms':>9} libcst")
    print(header)
    print("-" * len(header))
    for case in cases:
        name = case["file"] if len(case["file"]) <= 60 else "..." + case["file"][-57:]
        ruff = f"{case['ruff_s']:.3f}" if case["ruff_s"] else "-"
        ratio = f"{case['ratio']:.1f}" if case["ratio"] else "-"
        ruff_cpu = f"{case['ruff_cpu_s']:.3f}" if case["ruff_cpu_s"] is not None else "-"
        print(f"{name:<60} {case['lines']:>6} {case['ckptlint_s']:>10.3f} {case['ckptlint_cpu_s']:>6.3f} "
              f"{ruff:>7} {ruff_cpu:>6} {ratio:>7} {case['ckptlint_rss_mb']:>7.0f} {case['imports']['modules']:>7} "
              f"{case['imports']['import_ms']:>9.0f} {'yes' if case['imports']['libcst'] else 'no'}")
        print(f"    counters: {_counters_text(case['counters'])}")
    print(f"python -c pass: {cases[0]['python_start_s']:.3f} s; runs per file: {cases[0]['runs']}; x ruff: wall times")


def _file_times(times: Path) -> dict[str, float]:
    """The seconds each file took in the workers (the longest of its runs), from the
    ``SECONDS<TAB>PATH`` lines ``timed_ckptlint.py`` wrote; empty when none were."""
    per_file: dict[str, float] = {}
    if times.exists():
        for line in times.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
            seconds, _, path = line.partition("\t")
            per_file[path] = max(per_file.get(path, 0.0), float(seconds))
    return per_file


def _torchfix_row(args: argparse.Namespace, files: list[Path], work: Path) -> Row:
    """TorchFix's TOR003 over the tree: over every file, or over ``--torchfix-files`` random
    ones with the time extrapolated to the whole tree."""
    count = len(files)
    subset = files if count <= args.torchfix_files else sorted(random.Random(args.seed).sample(files, args.torchfix_files))
    command = [args.torchfix, "--select", "TOR003", *map(str, subset)]
    run = measure(command, cwd=work, stdout=work / "out-torchfix.txt")
    row = _median_row("cold", "torchfix TOR003", len(subset), [run], f"exit {run.returncode}")
    if len(subset) < count:
        rate = row.files_per_second
        row = Row("cold", "torchfix TOR003", count, count / rate, run.cpu * count / len(subset), row.max_rss_mb,
                  row.tree_rss_mb, 1, f"extrapolated from {len(subset)} random files ({run.wall:.1f} s, exit {run.returncode})")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ckptlint speed benchmark (cold/warm/touched/one file) against ruff and TorchFix")
    parser.add_argument("--files", type=int, default=10_000, help="files of the generated tree [10000]")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated tree, the edits and subsets [0]")
    parser.add_argument("--tree", type=Path, action="append", default=[], help="a real tree (repeatable; a scratch copy is linted)")
    parser.add_argument("--corpus", type=Path, help="a file listing owner/name@commit trees (and one-file cases), one a line")
    parser.add_argument("--corpus-root", type=Path, help=f"the folder holding the corpus trees [${CORPUS_ROOT_ENV}]")
    parser.add_argument("--missing-ok", action="store_true", help="skip corpus trees that are not there")
    parser.add_argument("--one-file", type=Path, action="append", default=[], help="a file for the pre-commit case (repeatable)")
    parser.add_argument("--one-file-repeat", type=int, default=10, help="runs per one-file case (median) [10]")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ckptlint-bench"), help="scratch folder")
    parser.add_argument("--repeat", type=int, help="runs per ckptlint/ruff scenario (median) [3 generated, 1 real trees]")
    parser.add_argument("--jobs", type=int, help="ckptlint -j (default: its own choice)")
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="ruff executable")
    parser.add_argument("--torchfix", default=shutil.which("torchfix"), help="torchfix executable (skipped when absent)")
    parser.add_argument("--torchfix-files", type=int, default=300, help="most files TorchFix lints; more: a subset [300]")
    parser.add_argument("--slowest", type=int, default=10, help="slowest files of the cold run to list [10]")
    parser.add_argument("--alone", type=int, default=3, help="of those, how many to lint alone [3]")
    parser.add_argument("--ckptlint-src", type=Path, default=REPO, help="the checkout whose ckptlint is measured [this one]")
    parser.add_argument("--json", type=Path, help="also write everything as JSON here")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    source = args.ckptlint_src.resolve()
    sys.path.insert(0, str(source))
    env = dict(os.environ, PYTHONPATH=str(source) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CKPTLINT_CACHE_DIR", None)
    # Measure ckptlint as pip installs it, with its modules compiled to bytecode: an
    # environment with PYTHONDONTWRITEBYTECODE would otherwise compile every module at each
    # start (about 0.15 s CPU).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(source / "ckptlint"), str(HERE)], env=env, check=False)
    trees = [t.resolve() for t in args.tree]
    one_files = [f.resolve() for f in args.one_file]
    if args.corpus:
        folders, listed = read_corpus(args.corpus.resolve(), args.corpus_root, missing_ok=args.missing_ok)
        trees += folders
        one_files += listed if not args.one_file else []
    report: dict = {
        "machine": _machine(),
        "ckptlint_src": str(source),
        "ckptlint_commit": _git_commit(source),
        "ruff": _version([args.ruff, "--version"]) if args.ruff else None,
        "torchfix": _version([args.torchfix, "--version"]) if args.torchfix else None,
        "command": " ".join([Path(sys.executable).name, *sys.argv]) if argv is None else None,
    }
    print(f"machine: {report['machine']}; ckptlint from {source} ({report['ckptlint_commit']}); "
          f"{report['ruff'] or 'ruff: absent'}; {('torchfix ' + report['torchfix']) if args.torchfix else 'torchfix: absent'}")

    if one_files and not trees and not args.corpus:
        cases = one_file_cases(one_files, args, env, work)
        _print_one_file(cases)
        report["one_file"] = cases
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return 0

    repeat = args.repeat or (1 if trees else 3)
    if trees:
        roots = _copy_trees(trees, work / "trees")
        label = f"{len(trees)} real trees"
    else:
        tree = work / f"synthetic-{args.files}-{args.seed}"
        if not (tree / ".complete").exists():
            shutil.rmtree(tree, ignore_errors=True)
            print(f"generating {args.files} files into {tree} ...", file=sys.stderr)
            generate_tree(tree, args.files, args.seed)
            (tree / ".complete").write_text("")
        roots = _copy_trees([tree], work / "trees")  # a copy to edit; the pristine tree is reused
        label = f"generated tree ({args.files} files, seed {args.seed})"
    files = _python_files(roots)
    count = len(files)
    cache = work / "ckptlint-cache"
    times = work / "file-times.tsv"
    perf = work / "perf.json"
    paths = [str(r) for r in roots]
    options = ["--isolated", "--cache-dir", str(cache), "-q"] + (["-j", str(args.jobs)] if args.jobs else [])
    ckptlint = [sys.executable, "-m", "ckptlint", *paths, *options]
    ckptlint_timed = [sys.executable, str(HERE / "timed_ckptlint.py"), *paths, *options]
    rows: list[Row] = []
    load_before = os.getloadavg()
    print(f"trees: {label}, {count} .py files; runs per scenario: {repeat} (median)", flush=True)

    ruff = [args.ruff, "check", "--no-cache", "--isolated", "--select", "E9", *paths] if args.ruff else None
    ruff_runs: dict[str, list[Measurement]] = {}

    def ruff_then(scenario: str, step) -> Measurement:
        """One ruff run right before each ckptlint run, so both see the same load."""
        if ruff is not None:
            ruff_runs.setdefault(scenario, []).append(measure(ruff, cwd=work))
        run = step()
        print(f"  {scenario}: ckptlint {run.wall:.2f} s" + (f", ruff {ruff_runs[scenario][-1].wall:.2f} s" if ruff else ""),
              file=sys.stderr, flush=True)
        return run

    outputs: dict[str, bytes] = {}

    def cold_run() -> Measurement:
        shutil.rmtree(cache, ignore_errors=True)
        times.unlink(missing_ok=True)
        run = _ckptlint_run(ckptlint_timed, work, env, perf, work / "out-cold.txt", {"CKPTLINT_BENCH_TIMES": str(times)})
        outputs.setdefault("cold", (work / "out-cold.txt").read_bytes())
        return run

    cold = [ruff_then("cold", cold_run) for _ in range(repeat)]
    rows.append(_median_row("cold", "ckptlint", count, cold, "cache folder emptied first"))
    warm = [
        ruff_then("warm", lambda: _ckptlint_run(ckptlint, work, env, perf, work / "out-warm.txt"))
        for _ in range(repeat)
    ]
    outputs["warm"] = (work / "out-warm.txt").read_bytes()
    rows.append(_median_row("warm", "ckptlint", count, warm, "nothing changed"))

    # slowest files of the (last) cold run, then the worst few alone, before any edit
    per_file = _file_times(times)
    slowest = sorted(per_file.items(), key=lambda item: -item[1])[: args.slowest]
    alone: list[dict] = []
    for path, _ in slowest[: args.alone]:
        command = [sys.executable, "-m", "ckptlint", "--isolated", "--no-cache", path]
        alone.append({"file": path, "alone_s": round(measure_median(command, work, env, 3), 3)})

    rng = random.Random(args.seed)
    gated = _gated(files)
    counter = 0
    one: list[Measurement] = []
    for _ in range(repeat):
        counter += 1
        _touch(rng.choice(gated or files), counter)
        one.append(ruff_then("touch 1", lambda: _ckptlint_run(ckptlint, work, env, perf)))
    rows.append(_median_row("touch 1", "ckptlint", count, one, "a file that passes the gate"))
    percent: list[Measurement] = []
    hundredth = max(1, count // 100)
    for _ in range(repeat):
        for path in rng.sample(files, hundredth):
            counter += 1
            _touch(path, counter)
        percent.append(ruff_then("touch 1%", lambda: _ckptlint_run(ckptlint, work, env, perf)))
    rows.append(_median_row("touch 1%", "ckptlint", count, percent, f"{hundredth} random files"))
    ruff_near = {k: statistics.median(m.wall for m in v) for k, v in ruff_runs.items()}
    ruff_wall = None
    if ruff is not None:
        every = [m for runs in ruff_runs.values() for m in runs]
        rows.insert(0, _median_row("cold", "ruff E9", count, every, f"{len(every)} runs, one before each ckptlint run"))
        ruff_wall = rows[0].wall
    for row in rows:
        reference = ruff_near.get(row.scenario) if row.tool == "ckptlint" else ruff_wall
        row.ratio = row.wall / reference if reference else None

    if args.torchfix:
        row = _torchfix_row(args, files, work)
        row.ratio = row.wall / ruff_wall if ruff_wall else None
        rows.append(row)

    cases = one_file_cases(one_files, args, env, work) if one_files else []
    load_after = os.getloadavg()

    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f}")
    header = f"{'scenario':<9} {'tool':<16} {'wall s':>8} {'CPU s':>8} {'RSS MB':>7} {'tree MB':>8} {'files/s':>9} {'x ruff':>7}  note"
    print(header)
    print("-" * len(header))
    for row in rows:
        ratio = f"{row.ratio:.2f}" if row.ratio else "-"
        print(
            f"{row.scenario:<9} {row.tool:<16} {row.wall:8.2f} {row.cpu:8.2f} {row.max_rss_mb:7.0f} {row.tree_rss_mb:8.0f} "
            f"{row.files_per_second:9.0f} {ratio:>7}  {row.note}"
        )
    print("x ruff: ckptlint rows against the median of the ruff runs made just before them; RSS MB: the largest "
          "single process; tree MB: summed over the process and its workers")
    for row in rows:
        if row.tool == "ckptlint":
            print(f"counters {row.scenario}: {_counters_text(row.counters)}")
    cold_wall = next(r.wall for r in rows if r.tool == "ckptlint" and r.scenario == "cold")
    warm_wall = next(r.wall for r in rows if r.tool == "ckptlint" and r.scenario == "warm")
    for row in rows:
        if row.tool.startswith("torchfix"):
            print(f"TorchFix / ckptlint cold: {row.wall / cold_wall:.0f}x; TorchFix / ckptlint warm: {row.wall / warm_wall:.0f}x")
    print()
    over = sum(1 for seconds in per_file.values() if seconds > 1.0)
    print(f"slowest files of the cold run ({len(per_file)} files timed in the workers; {over} took over 1 s):")
    for path, seconds in slowest:
        print(f"  {seconds:7.3f} s  {path}")
    for entry in alone:
        print(f"  alone (ckptlint --isolated --no-cache FILE, median of 3): {entry['alone_s']:.3f} s  {entry['file']}")
    _print_one_file(cases)
    same = outputs.get("cold") == outputs.get("warm")
    findings = outputs["cold"].count(b"CKP")
    print(f"\ncold and warm ckptlint output identical: {same} ({findings} findings)")
    elapsed = time.perf_counter() - started
    print(f"benchmark took {elapsed / 60:.1f} min")
    if args.json:
        report.update(
            trees=[str(t) for t in trees] or [label],
            files=count,
            repeat=repeat,
            load_before=load_before[0],
            load_after=load_after[0],
            rows=[asdict(r) | {"files_per_second": r.files_per_second} for r in rows],
            slowest=[{"file": p, "seconds": round(s, 4)} for p, s in slowest],
            files_timed=len(per_file),
            over_1s=over,
            alone=alone,
            one_file=cases,
            identical=same,
            findings=findings,
            minutes=round(elapsed / 60, 1),
        )
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
