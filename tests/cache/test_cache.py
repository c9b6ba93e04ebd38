"""The persistent result cache: hits, every kind of invalidation, robustness, --clean,
--no-cache, CKPTLINT_CACHE_DIR, and fixes with cached results."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

import ckptlint
from ckptlint.lint import cache as cache_module
from ckptlint.lint.cache import CACHEDIR_TAG, ResultCache

LAYERS = """\
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ff = nn.Linear(d, d)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            return x + self.drop(self.ff(x))
"""

LAYERS_WITHOUT_RANDOMNESS = LAYERS.replace("self.drop(self.ff(x))", "self.ff(x)")

MODEL = """\
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    from .layers import Block


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block(8)

        def forward(self, x):
            x = checkpoint(self.block, x, use_reentrant=False, preserve_rng_state=False)
            return checkpoint(self.block, x)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, content in {"pkg/__init__.py": "", "pkg/layers.py": LAYERS, "pkg/model.py": MODEL}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")
    return tmp_path


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of cache hits and misses of the runs made in the test."""
    counts = {"hits": 0, "misses": 0}
    original = ResultCache.save

    def save(self: ResultCache) -> None:
        counts["hits"] += self.hits
        counts["misses"] += self.misses
        original(self)

    monkeypatch.setattr(ResultCache, "save", save)
    return counts


def _run(run_cli, *args: str, cwd: Path | None = None, env: dict | None = None) -> list[tuple[str, int, str]]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", *args, cwd=cwd, env=env)
    assert result.exit_code == 0, result.stderr
    return [(Path(r["filename"]).name, r["location"]["row"], r["code"]) for r in json.loads(result.stdout)]


def _lint_and_count(run_cli, counted: dict[str, int], *args: str, **kwargs) -> tuple[list, int, int]:
    before = dict(counted)
    found = _run(run_cli, *args, **kwargs)
    return found, counted["hits"] - before["hits"], counted["misses"] - before["misses"]


EXPECTED = [("model.py", 13, "CKP101"), ("model.py", 14, "CKP001")]


def test_second_run_is_served_from_the_cache(project: Path, run_cli, counted) -> None:
    cold, hits, misses = _lint_and_count(run_cli, counted)
    assert (cold, hits, misses) == (EXPECTED, 0, 1)  # only model.py passes the gate
    warm, hits, misses = _lint_and_count(run_cli, counted)
    assert (warm, hits, misses) == (EXPECTED, 1, 0)
    folder = project / ".ckptlint_cache"
    assert (folder / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    [cache_file] = folder.glob("*/*.json")
    data = json.loads(cache_file.read_text())
    entry = data["files"][str(project / "pkg" / "model.py")]
    assert entry["module"] == ["pkg.model", False]
    assert str(project / "pkg" / "layers.py") in entry["deps"]


def test_content_change_invalidates(project: Path, run_cli, counted) -> None:
    _run(run_cli)
    model = project / "pkg" / "model.py"
    model.write_text(model.read_text().replace("return checkpoint(self.block, x)", "return self.block(x)"))
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == ([("model.py", 13, "CKP101")], 0, 1)


def test_dependency_change_invalidates(project: Path, run_cli, counted) -> None:
    _run(run_cli)
    (project / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS_WITHOUT_RANDOMNESS))
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == ([("model.py", 14, "CKP001")], 0, 1)  # no dropout: no CKP101


def test_new_file_at_a_looked_up_path_invalidates(project: Path, run_cli, counted) -> None:
    model = project / "pkg" / "model.py"
    model.write_text(model.read_text().replace("from .layers import Block", "from .blocks import Block"))
    assert _run(run_cli) == EXPECTED  # pkg/blocks.py does not exist yet: the block is unknown
    [cache_file] = (project / ".ckptlint_cache").glob("*/*.json")
    deps = json.loads(cache_file.read_text())["files"][str(model)]["deps"]
    assert deps[str(project / "pkg" / "blocks.py")] == [None, None, None]  # looked for, absent
    (project / "pkg" / "blocks.py").write_text(textwrap.dedent(LAYERS_WITHOUT_RANDOMNESS))
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == ([("model.py", 14, "CKP001")], 0, 1)


def test_module_name_change_invalidates(project: Path, run_cli, counted) -> None:
    (project / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS_WITHOUT_RANDOMNESS))
    assert _run(run_cli) == [("model.py", 14, "CKP001")]
    (project / "pkg" / "__init__.py").unlink()  # pkg.model becomes model
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == ([("model.py", 14, "CKP001")], 0, 1)  # `model` now, linted again


def test_settings_change_invalidates(project: Path, run_cli, counted) -> None:
    _run(run_cli)
    found, hits, misses = _lint_and_count(run_cli, counted, "--select", "CKP001")
    assert (found, hits, misses) == ([("model.py", 14, "CKP001")], 0, 1)
    found, hits, misses = _lint_and_count(run_cli, counted)  # the first settings' entries are kept
    assert (found, hits, misses) == (EXPECTED, 1, 0)


def test_config_file_change_invalidates(project: Path, run_cli, counted) -> None:
    result = run_cli("--output-format", "json", "--exit-zero")
    assert result.exit_code == 0
    (project / "ckptlint.toml").write_text('ignore = ["CKP101"]\n')
    result = run_cli("--output-format", "json", "--exit-zero")
    assert [r["code"] for r in json.loads(result.stdout)] == ["CKP001"]


def test_version_change_invalidates(project: Path, run_cli, counted, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(run_cli)
    monkeypatch.setattr(ckptlint, "__version__", "99.0.0")
    _, hits, misses = _lint_and_count(run_cli, counted)
    assert (hits, misses) == (0, 1)
    builds = {p.name.split("-")[0] for p in (project / ".ckptlint_cache").iterdir() if p.is_dir()}
    assert "99.0.0" in builds and len(builds) == 2


def test_source_edit_of_ckptlint_invalidates(project: Path, run_cli, counted, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(run_cli)
    real = cache_module._code_fingerprint()
    monkeypatch.setattr(cache_module, "_code_fingerprint", lambda: real + "-edited")
    _, hits, misses = _lint_and_count(run_cli, counted)
    assert (hits, misses) == (0, 1)


@pytest.mark.parametrize("damage", [b"{not json", b"", b"[]", b'{"format": 1, "files": {"x": 1}}', b"\xff\xfe\x00"])
def test_corrupt_cache_file_is_ignored_and_rewritten(project: Path, run_cli, counted, damage: bytes) -> None:
    _run(run_cli)
    [cache_file] = (project / ".ckptlint_cache").glob("*/*.json")
    cache_file.write_bytes(damage)
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == (EXPECTED, 0, 1)
    json.loads(cache_file.read_text())  # rewritten as valid JSON
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == (EXPECTED, 1, 0)


def test_damaged_entry_is_a_miss(project: Path, run_cli, counted) -> None:
    _run(run_cli)
    [cache_file] = (project / ".ckptlint_cache").glob("*/*.json")
    data = json.loads(cache_file.read_text())
    for entry in data["files"].values():
        entry["diagnostics"] = [{"code": "CKP001"}]  # missing fields
    cache_file.write_text(json.dumps(data))
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == (EXPECTED, 0, 1)


def test_unwritable_cache_dir_does_not_fail(project: Path, run_cli) -> None:
    blocker = project / "blocked"
    blocker.write_text("a file where the cache folder should be")
    assert _run(run_cli, "--cache-dir", str(blocker / "cache")) == EXPECTED


def test_no_cache_neither_reads_nor_writes(project: Path, run_cli, counted) -> None:
    assert _run(run_cli, "--no-cache") == EXPECTED
    assert not (project / ".ckptlint_cache").exists()
    _run(run_cli)
    _, hits, misses = _lint_and_count(run_cli, counted, "--no-cache")
    assert (hits, misses) == (0, 0)


def test_cache_dir_option_and_environment_variable(project: Path, tmp_path_factory, run_cli, counted) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    _run(run_cli, "--cache-dir", str(elsewhere / "by-option"))
    assert (elsewhere / "by-option" / "CACHEDIR.TAG").is_file()
    _run(run_cli, env={"CKPTLINT_CACHE_DIR": str(elsewhere / "by-env")})
    assert (elsewhere / "by-env" / "CACHEDIR.TAG").is_file()
    assert not (project / ".ckptlint_cache").exists()
    _, hits, misses = _lint_and_count(run_cli, counted, env={"CKPTLINT_CACHE_DIR": str(elsewhere / "by-env")})
    assert (hits, misses) == (1, 0)
    _run(run_cli, "--cache-dir", "relative-cache")  # relative to the working directory
    assert (project / "relative-cache" / "CACHEDIR.TAG").is_file()


def test_clean_removes_caches_and_exits_zero(project: Path, tmp_path_factory, run_cli) -> None:
    _run(run_cli)
    _run(run_cli, cwd=project / "pkg")  # a second cache in a subfolder
    assert (project / "pkg" / ".ckptlint_cache").is_dir()
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    _run(run_cli, env={"CKPTLINT_CACHE_DIR": str(elsewhere / "c")})
    foreign = project / "data" / ".ckptlint_cache"  # same name, not ours: kept
    foreign.mkdir(parents=True)
    (foreign / "keep.txt").write_text("x")
    result = run_cli("--clean", env={"CKPTLINT_CACHE_DIR": str(elsewhere / "c")})
    assert result.exit_code == 0
    assert not (project / ".ckptlint_cache").exists()
    assert not (project / "pkg" / ".ckptlint_cache").exists()
    assert not (elsewhere / "c").exists()
    assert (foreign / "keep.txt").is_file()
    assert (project / "pkg" / "model.py").is_file()
    assert run_cli("--clean").exit_code == 0  # nothing left: still fine


FIXABLE = """\
    from torch.utils.checkpoint import checkpoint


    def run(f, x):
        return checkpoint(f, x)
"""


def test_fix_does_not_trust_cached_results(tmp_path: Path, run_cli, counted) -> None:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(FIXABLE))
    assert _run(run_cli) == [("train.py", 5, "CKP001")]  # fills the cache
    result = run_cli("--isolated", "--fix", "--unsafe-fixes")  # the cached entry's fix applies: linted again
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "use_reentrant=False" in path.read_text()
    _, hits, misses = _lint_and_count(run_cli, counted)
    assert (hits, misses) == (0, 1)  # the file changed
    found, hits, misses = _lint_and_count(run_cli, counted, "--fix", "--unsafe-fixes")
    assert (found, hits, misses) == ([], 1, 0)  # nothing to fix: the cached result is used


UNSAFE_ONLY = """\
    def run(model):
        model.gradient_checkpointing_enable()
"""


def test_fix_uses_cached_results_whose_fixes_do_not_apply(tmp_path: Path, run_cli, counted) -> None:
    (tmp_path / "train.py").write_text(textwrap.dedent(UNSAFE_ONLY))
    _run(run_cli)
    found, hits, misses = _lint_and_count(run_cli, counted, "--fix")  # the fix is unsafe: not applied
    assert (found, hits, misses) == ([("train.py", 2, "CKP001")], 1, 0)
    assert "use_reentrant" not in (tmp_path / "train.py").read_text()


def test_fix_does_not_use_a_cached_result_whose_safe_fix_applies(tmp_path: Path, run_cli, counted) -> None:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(FIXABLE).replace("checkpoint(f, x)", "checkpoint(f, x, debug=True)"))
    _run(run_cli)
    found, hits, misses = _lint_and_count(run_cli, counted, "--fix")  # the reentrant variant raises: safe, applied
    assert (found, hits, misses) == ([], 0, 1)
    assert "return checkpoint(f, x, debug=True, use_reentrant=False)" in path.read_text()


def test_diff_uses_cache_only_without_applicable_fixes(tmp_path: Path, run_cli, counted) -> None:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(FIXABLE))
    _run(run_cli)
    result = run_cli("--isolated", "--diff", "--unsafe-fixes")
    assert result.exit_code == 1 and "+    return checkpoint(f, x, use_reentrant=False)" in result.stdout
    assert "use_reentrant" not in path.read_text()  # --diff writes nothing
    result = run_cli("--isolated", "--diff", "--unsafe-fixes")  # and the cache did not record the fixed text
    assert "+    return checkpoint(f, x, use_reentrant=False)" in result.stdout


def test_fixed_file_is_linted_again_next_run(project: Path, run_cli, counted) -> None:
    _run(run_cli)
    result = run_cli("--isolated", "--fix", "--unsafe-fixes")
    assert (result.exit_code, result.stdout) == (0, "Found 2 errors (2 fixed, 0 remaining).\n")
    text = (project / "pkg" / "model.py").read_text()
    assert "return checkpoint(self.block, x, use_reentrant=False)" in text
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == ([], 0, 1)


@pytest.mark.slow
def test_concurrent_runs_leave_a_valid_cache(project: Path, run_cli, counted) -> None:
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(repo))
    extra = [project / f"pkg/extra_{i}.py" for i in range(4)]
    for i, path in enumerate(extra):  # each run lints a different set, so their entries differ
        path.write_text(textwrap.dedent(MODEL).replace("ModelA", f"Model{i}"))
    # json, as the run that checks the cache: a run that prints no edits stores none (Fix.built)
    command = [sys.executable, "-m", "ckptlint", "--isolated", "--exit-zero", "-q", "--output-format", "json"]
    runs = [
        subprocess.Popen([*command, "pkg/model.py", str(path)], cwd=project, env=env, stdout=subprocess.DEVNULL)
        for path in extra
    ]
    assert [run.wait(timeout=120) for run in runs] == [0, 0, 0, 0]
    [cache_file] = (project / ".ckptlint_cache").glob("*/*.json")
    entries = json.loads(cache_file.read_text())["files"]
    assert str(project / "pkg" / "model.py") in entries  # valid JSON holding at least the shared file
    assert not list((project / ".ckptlint_cache").glob("*/.tmp-*"))  # no temporary file left
    _, hits, misses = _lint_and_count(run_cli, counted, "pkg/model.py")
    assert (hits, misses) == (1, 0)


def test_dependency_touched_without_a_change_is_still_a_hit(project: Path, run_cli, counted) -> None:
    """A dependency whose modification time changed is read and compared by digest; one whose
    size and time are unchanged is not read at all."""
    _run(run_cli)
    layers = project / "pkg" / "layers.py"
    stat = layers.stat()
    os.utime(layers, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == (EXPECTED, 1, 0)
    [cache_file] = (project / ".ckptlint_cache").glob("*/*.json")
    digest, size, mtime = json.loads(cache_file.read_text())["files"][str(project / "pkg" / "model.py")]["deps"][str(layers)]
    assert (size, isinstance(digest, str)) == (stat.st_size, True)


def _same_size_rewrite(path: Path, old: str, new: str) -> os.stat_result:
    """Rewrite ``path`` with ``old`` replaced by ``new`` (same length), then put its size and
    modification time back: what the cache cannot tell from the file it recorded."""
    assert len(old) == len(new)
    stat = path.stat()
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return stat


def test_a_file_with_its_recorded_size_and_time_is_not_read(project: Path, run_cli, counted) -> None:
    """As ruff's cache: an unchanged size and modification time means an unchanged file, so a
    warm run does not read it; a new modification time makes it read and compared."""
    _run(run_cli)
    model = project / "pkg" / "model.py"
    # `x)` -> `y)`: the call on line 14 still lacks use_reentrant, line 13's is unchanged
    stat = _same_size_rewrite(model, "preserve_rng_state=False", "preserve_rng_state=True ")
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == (EXPECTED, 1, 0)  # the recorded result, not the new text's
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == ([("model.py", 14, "CKP001")], 0, 1)


def test_a_file_the_gate_rejected_is_remembered_by_size_and_time(project: Path, run_cli, counted) -> None:
    plain = project / "pkg" / "plain.py"
    plain.write_text("x = 1\n")
    _run(run_cli)
    [cache_file] = (project / ".ckptlint_cache").glob("*/*.json")
    entries = json.loads(cache_file.read_text())["files"]
    stat = plain.stat()
    assert entries[str(plain)] == {"rejected": [stat.st_size, stat.st_mtime_ns]}
    assert "rejected" not in entries[str(project / "pkg" / "model.py")]
    plain.write_text("from torch.utils.checkpoint import checkpoint\n\n\ndef f(g, x):\n    return checkpoint(g, x)\n")
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert ("plain.py", 5, "CKP001") in found and misses == 1


def test_a_touched_file_is_a_hit_and_its_new_time_is_recorded(project: Path, run_cli, counted) -> None:
    _run(run_cli)
    model = project / "pkg" / "model.py"
    stat = model.stat()
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    found, hits, misses = _lint_and_count(run_cli, counted)
    assert (found, hits, misses) == (EXPECTED, 1, 0)  # read, same digest
    [cache_file] = (project / ".ckptlint_cache").glob("*/*.json")
    assert json.loads(cache_file.read_text())["files"][str(model)]["stat"] == [stat.st_size, stat.st_mtime_ns + 2_000_000_000]


def test_fix_reads_every_file_whatever_its_time(project: Path, run_cli) -> None:
    _run(run_cli)
    model = project / "pkg" / "model.py"
    _same_size_rewrite(model, "preserve_rng_state=False", "preserve_rng_state=True ")
    result = run_cli("--isolated", "--exit-zero", "--diff", "--unsafe-fixes")
    assert "preserve_rng_state=True " in result.stdout  # the diff is of the text on disk
