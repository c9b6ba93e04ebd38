"""``benchmarks/run.py`` on a tiny tree: every scenario runs and reports, offline, ruff optional."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"

SITE = """import torch
from torch.utils.checkpoint import checkpoint


class Block(torch.nn.Module):
    def forward(self, x):
        return checkpoint(self.inner, x)
"""

PLAIN = "import os\n\n\ndef join(a):\n    return os.path.join(a, 'b')\n"


def _load_run():
    spec = importlib.util.spec_from_file_location("bench_run", RUN)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_run", module)  # dataclasses look their module up
    sys.path.insert(0, str(RUN.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(RUN.parent))
    return module


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree" / "pkg"
    tree.mkdir(parents=True)
    (tree / "__init__.py").write_text("")
    (tree / "model.py").write_text(SITE)
    (tree / "util.py").write_text(PLAIN)
    return tree.parent


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    ruff = shutil.which("ruff") or ""
    return subprocess.run(
        [sys.executable, str(RUN), *args, "--work", str(tmp_path / "work"), "--ruff", ruff, "--torchfix", ""],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )


def test_read_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _load_run()
    tree = _tree(tmp_path)  # the folder "tree" below tmp_path: the corpus root
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("# a comment\nowner/tree@abc123   # the tree\n\nowner/tree@abc123 pkg/model.py\n")
    folders, files = run.read_corpus(corpus, tmp_path)
    assert folders == [tree.resolve()]
    assert files == [(tree / "pkg" / "model.py").resolve()]
    monkeypatch.setenv(run.CORPUS_ROOT_ENV, str(tmp_path))
    assert run.read_corpus(corpus, None) == (folders, files)
    monkeypatch.delenv(run.CORPUS_ROOT_ENV)
    with pytest.raises(ValueError, match="corpus root"):
        run.read_corpus(corpus, None)
    corpus.write_text("owner/missing-folder@abc123\n")
    with pytest.raises(FileNotFoundError):
        run.read_corpus(corpus, tmp_path)
    assert run.read_corpus(corpus, tmp_path, missing_ok=True) == ([], [])
    corpus.write_text("/an/absolute/folder\n")
    with pytest.raises(ValueError, match="owner/name@commit"):
        run.read_corpus(corpus, tmp_path)


@pytest.mark.slow
def test_one_file_mode(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    plain, site = tree / "pkg" / "util.py", tree / "pkg" / "model.py"
    out = tmp_path / "one.json"
    proc = _run("--one-file", str(plain), "--one-file", str(site), "--one-file-repeat", "1", "--json", str(out), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "one file (pre-commit)" in proc.stdout
    cases = {Path(c["file"]).name: c for c in json.loads(out.read_text())["one_file"]}
    assert cases["util.py"]["ckptlint_exit"] == 0
    assert cases["model.py"]["ckptlint_exit"] == 1  # CKP001: use_reentrant not passed
    assert cases["util.py"]["imports"]["libcst"] is False  # the gate rejects it: no parser loaded
    assert cases["model.py"]["imports"]["libcst"] is False  # a finding is reported from ast alone
    assert cases["model.py"]["lines"] == SITE.count("\n")
    for case in cases.values():
        assert case["ckptlint_s"] > 0 and case["runs"] == 1
        assert (case["ruff_s"] is not None) == bool(shutil.which("ruff"))


@pytest.mark.slow
def test_tree_mode_reports_every_scenario(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    out = tmp_path / "tree.json"
    proc = _run("--tree", str(tree), "--repeat", "1", "--slowest", "2", "--alone", "1", "--json", str(out), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["files"] == 3
    assert report["identical"] is True and report["findings"] == 1
    scenarios = [(r["scenario"], r["tool"]) for r in report["rows"] if r["tool"] == "ckptlint"]
    assert scenarios == [("cold", "ckptlint"), ("warm", "ckptlint"), ("touch 1", "ckptlint"), ("touch 1%", "ckptlint")]
    assert all(r["max_rss_mb"] > 0 and r["wall"] > 0 for r in report["rows"])
    # the one file that passes the gate was timed in the cold run, then alone
    assert [Path(s["file"]).name for s in report["slowest"]] == ["model.py"]
    assert [Path(a["file"]).name for a in report["alone"]] == ["model.py"]
    assert "counters cold:" in proc.stdout
    assert (tree / "pkg" / "model.py").read_text() == SITE  # edits go to the scratch copy


def test_counters_are_read_when_written(tmp_path: Path) -> None:
    run = _load_run()
    perf = tmp_path / "perf.json"
    assert run._read_counters(perf) is None
    assert run._counters_text(None) == "n/a"
    perf.write_text(json.dumps({"files_linted": 3, "ast_parses": 4, "ast_chars_parsed": 900, "cst_parses": 1,
                                "cst_chars_parsed": 40, "evaluation_steps": 70, "files_parsed_whole": 1}))
    counters = run._read_counters(perf)
    assert counters == {"files_linted": 3, "ast_parses": 4, "ast_chars_parsed": 900, "cst_parses": 1,
                        "cst_chars_parsed": 40, "evaluation_steps": 70}
    assert run._counters_text(counters).startswith("files_linted=3 ast_parses=4 ast_chars_parsed=900")
