"""Speed benchmark: ckptlint cold, warm and after edits, next to ruff and TorchFix.

Usage::

    python benchmarks/run.py                      # a generated 10,000-file tree
    python benchmarks/run.py --files 2000         # a smaller generated tree
    python benchmarks/run.py --tree PATH          # any real tree (linted in a scratch copy)

Every tool runs in a subprocess on the same tree in the same invocation, so ratios compare
like with like on a busy machine. For each run it records the wall time, the CPU time
(user + system of the process and its children, from ``os.wait4``), the peak resident
memory of the largest single process (``ru_maxrss``), the peak of the summed resident
memory of the process tree (sampled every 20 ms from ``/proc``), files per second, and the
ratio of the wall time to ruff's. Scenarios:

- ``ruff``: ``ruff check --no-cache --isolated --select E9 TREE`` (parses every file);
- ``cold``: ckptlint with its cache folder emptied first;
- ``warm``: ckptlint again, nothing changed;
- ``touch 1``: ckptlint after changing the content of one file that has checkpoint sites;
- ``touch 1%``: ckptlint after changing the content of 1% of the files (chosen at random);
- ``torchfix``: ``torchfix --select TOR003`` when a ``torchfix`` executable is found
  (``--torchfix PATH``); it lints about 4-5 files a second, so on trees above
  ``--torchfix-files`` files it runs on a deterministic random subset of that many files and
  its time for the whole tree is extrapolated from its files per second (said so in the table).

Each ckptlint/ruff scenario runs ``--repeat`` times and the median is shown. ckptlint runs
with ``--isolated`` and a cache folder in the scratch directory, from this checkout
(``PYTHONPATH``), never touching the tree given with ``--tree`` (edits go to a copy).
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
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from generate import generate_tree


@dataclass
class Measurement:
    """One run of one command."""

    wall: float
    cpu: float
    max_rss_mb: float
    tree_rss_mb: float
    returncode: int


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
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115
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
    )


def _python_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.py") if p.is_file() and ".ckptlint_cache" not in p.parts)


def _touch(path: Path, counter: int) -> None:
    """Change the file's content (not just its modification time)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"\n# edited by the benchmark ({counter})\n")


def _gated(files: list[Path]) -> list[Path]:
    from ckptlint.lint.gate import may_have_findings

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ckptlint speed benchmark (cold/warm/touched) against ruff and TorchFix")
    parser.add_argument("--files", type=int, default=10_000, help="files of the generated tree [10000]")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated tree and of the edits [0]")
    parser.add_argument("--tree", type=Path, help="benchmark this tree instead (a scratch copy is edited)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ckptlint-bench"), help="scratch folder")
    parser.add_argument("--repeat", type=int, default=3, help="runs per ckptlint/ruff scenario (median shown) [3]")
    parser.add_argument("--jobs", type=int, help="ckptlint -j (default: its own choice)")
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="ruff executable")
    parser.add_argument("--torchfix", default=shutil.which("torchfix"), help="torchfix executable (skipped when absent)")
    parser.add_argument("--torchfix-files", type=int, default=400, help="largest tree TorchFix lints whole; else a subset [400]")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.tree is None:
        tree = work / f"synthetic-{args.files}-{args.seed}"
        if not (tree / ".complete").exists():
            shutil.rmtree(tree, ignore_errors=True)
            print(f"generating {args.files} files into {tree} ...", file=sys.stderr)
            generate_tree(tree, args.files, args.seed)
            (tree / ".complete").write_text("")
        # a copy to edit, so the pristine tree is reused by later invocations
        scratch = work / f"{tree.name}-edited"
    else:
        tree = args.tree.resolve()
        scratch = work / f"{tree.name}-copy"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(tree, scratch, symlinks=True, ignore=shutil.ignore_patterns(".git", ".ckptlint_cache"))
    tree = scratch
    files = _python_files(tree)
    count = len(files)
    cache = work / "ckptlint-cache"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ckptlint = [sys.executable, "-m", "ckptlint", str(tree), "--isolated", "--cache-dir", str(cache), "-q"]
    if args.jobs:
        ckptlint += ["-j", str(args.jobs)]
    rows: list[Row] = []
    load_before = os.getloadavg()

    ruff = [args.ruff, "check", "--no-cache", "--isolated", "--select", "E9", str(tree)] if args.ruff else None
    ruff_runs: dict[str, list[Measurement]] = {}

    def ruff_then(scenario: str, step) -> Measurement:
        """One ruff run right before each ckptlint run, so both see the same load."""
        if ruff is not None:
            ruff_runs.setdefault(scenario, []).append(measure(ruff, cwd=work))
        return step()

    outputs: dict[str, bytes] = {}

    def cold_run() -> Measurement:
        shutil.rmtree(cache, ignore_errors=True)
        run = measure(ckptlint, cwd=work, env=env, stdout=work / "out-cold.txt")
        outputs.setdefault("cold", (work / "out-cold.txt").read_bytes())
        return run

    cold = [ruff_then("cold", cold_run) for _ in range(args.repeat)]
    rows.append(_median_row("cold", "ckptlint", count, cold))
    warm = [
        ruff_then("warm", lambda: measure(ckptlint, cwd=work, env=env, stdout=work / "out-warm.txt"))
        for _ in range(args.repeat)
    ]
    outputs["warm"] = (work / "out-warm.txt").read_bytes()
    rows.append(_median_row("warm", "ckptlint", count, warm))

    rng = random.Random(args.seed)
    gated = _gated(files)
    counter = 0
    one: list[Measurement] = []
    for _ in range(args.repeat):
        counter += 1
        _touch(rng.choice(gated or files), counter)
        one.append(ruff_then("touch 1", lambda: measure(ckptlint, cwd=work, env=env)))
    rows.append(_median_row("touch 1", "ckptlint", count, one, "a file with checkpoint sites"))
    percent: list[Measurement] = []
    for _ in range(args.repeat):
        for path in rng.sample(files, max(1, count // 100)):
            counter += 1
            _touch(path, counter)
        percent.append(ruff_then("touch 1%", lambda: measure(ckptlint, cwd=work, env=env)))
    rows.append(_median_row("touch 1%", "ckptlint", count, percent, f"{max(1, count // 100)} random files"))
    if ruff is not None:
        every = [m for runs in ruff_runs.values() for m in runs]
        rows.insert(0, _median_row("cold", "ruff E9", count, every, f"{len(every)} runs, one before each ckptlint run"))

    if args.torchfix:
        subset = files if count <= args.torchfix_files else sorted(random.Random(args.seed).sample(files, args.torchfix_files))
        command = [args.torchfix, "--select", "TOR003", *map(str, subset)]
        run = measure(command, cwd=work)
        row = _median_row("cold", "torchfix TOR003", len(subset), [run])
        if len(subset) < count:
            rate = row.files_per_second
            row = Row("cold", "torchfix TOR003", count, count / rate, run.cpu * count / len(subset), row.max_rss_mb,
                      row.tree_rss_mb, 1, f"extrapolated from a random subset of {len(subset)} files ({run.wall:.1f} s)")
        rows.append(row)
    load_after = os.getloadavg()

    ruff_wall = next((r.wall for r in rows if r.tool == "ruff E9"), None)
    ruff_near = {k: statistics.median(m.wall for m in v) for k, v in ruff_runs.items()}
    print(f"tree: {args.tree or 'generated'} ({count} files); machine: {_machine()}")
    print(f"ckptlint from {REPO}; {_version([args.ruff, '--version']) if args.ruff else 'ruff: absent'}; "
          f"{_version([args.torchfix, '--version']) if args.torchfix else 'torchfix: absent'}")
    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f}; runs per scenario: {args.repeat} (median)")
    header = f"{'scenario':<9} {'tool':<16} {'wall s':>8} {'CPU s':>8} {'RSS MB':>7} {'tree MB':>8} {'files/s':>9} {'x ruff':>7}  note"
    print(header)
    print("-" * len(header))
    for row in rows:
        reference = ruff_near.get(row.scenario) if row.tool == "ckptlint" else ruff_wall
        ratio = f"{row.wall / reference:.2f}" if reference else "-"
        print(
            f"{row.scenario:<9} {row.tool:<16} {row.wall:8.2f} {row.cpu:8.2f} {row.max_rss_mb:7.0f} {row.tree_rss_mb:8.0f} "
            f"{row.files_per_second:9.0f} {ratio:>7}  {row.note}"
        )
    print("x ruff: ckptlint rows against the median of the ruff runs made just before them")
    cold_wall = next(r.wall for r in rows if r.tool == "ckptlint" and r.scenario == "cold")
    for row in rows:
        if row.tool.startswith("torchfix"):
            print(f"TorchFix / ckptlint cold: {row.wall / cold_wall:.0f}x; TorchFix / ckptlint warm: "
                  f"{row.wall / next(r.wall for r in rows if r.scenario == 'warm'):.0f}x")
    same = outputs.get("cold") == outputs.get("warm")
    print(f"cold and warm ckptlint output identical: {same} ({outputs['cold'].count(b'CKP')} findings)")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"files_per_second": r.files_per_second} for r in rows], indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
