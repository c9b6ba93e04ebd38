"""The cache never crashes a run, never reports what the linted file did not give, and
``--clean`` removes only what ckptlint wrote.

- a dependency is a real path or nothing: a module attribute known only at run time
  (``getattr(litgpt.model, self.mlp_class_name)``) names no file, and a cached run over every
  test program gives what an uncached one gives;
- a cache entry of the wrong shape (types, codes, paths) is a miss, never output;
- ``--clean`` leaves user files beside and inside the cache folder, ``--cache-dir .`` too.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from ckptlint.lint.cache import CACHEDIR_TAG, ResultCache
from ckptlint.lint.results import FileResult

ROOT = Path(__file__).resolve().parents[2]
SHARED_CASES = ROOT.parent / "shared" / "cases"

#: litgpt's pattern (Lightning-AI/litgpt, litgpt/config.py ``Config.mlp_class``): the MLP
#: class is looked up on the model module by a name held in the config.
DYNAMIC = {
    "litgpt/__init__.py": """\
        from litgpt.config import Config
        from litgpt.model import GPT
    """,
    "litgpt/config.py": """\
        from typing import Type


        class Config:
            mlp_class_name = "LLaMAMLP"

            @property
            def mlp_class(self) -> Type:
                import litgpt.model

                return getattr(litgpt.model, self.mlp_class_name)
    """,
    "litgpt/model.py": """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        from litgpt.config import Config


        class LLaMAMLP(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.drop = nn.Dropout(0.1)

            def forward(self, x):
                return self.drop(self.fc(x))


        class Block(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
                self.mlp = config.mlp_class(config)
                self.norm_name = "norm"
                self.add_module(self.norm_name, nn.LayerNorm(4))

            def forward(self, x):
                x = getattr(self, self.norm_name)(x)
                return checkpoint(self.mlp, x, use_reentrant=False)


        class GPT(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
                self.blocks = nn.ModuleList(Block(config) for _ in range(2))

            def forward(self, x):
                for block in self.blocks:
                    x = checkpoint(block, x)
                return x


        def run(block: Block, x):
            return checkpoint(block.mlp, x, use_reentrant=False)
    """,
}


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _findings(run_cli, root: Path, *args: str) -> tuple[int, list]:
    result = run_cli("--output-format", "json", "--isolated", *args, ".", cwd=root)
    assert result.exit_code in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "error:" not in result.stderr, result.stderr
    found = [(r["filename"], r["location"]["row"], r["location"]["column"], r["code"], r["message"]) for r in json.loads(result.stdout)]
    return result.exit_code, found


def _cache_keys(root: Path) -> list[str]:
    """Every path a cache file of ``root`` names: entries and dependencies."""
    keys = []
    for cache_file in (root / ".ckptlint_cache").glob("*/*.json"):
        data = json.loads(cache_file.read_text(encoding="utf-8"))
        for path, entry in data["files"].items():
            keys += [path, *entry.get("deps", {})]
        for deps in data.get("depsets", {}).values():
            keys += list(deps)
    return keys


def test_a_module_attribute_known_only_at_run_time_is_no_dependency(tmp_path: Path, run_cli) -> None:
    _write_tree(tmp_path, DYNAMIC)
    uncached = _findings(run_cli, tmp_path, "--no-cache")
    assert [(Path(f).name, row, code) for f, row, _, code, _ in uncached[1]] == [("model.py", 36, "CKP001")]
    assert _findings(run_cli, tmp_path) == uncached  # cold cache
    keys = _cache_keys(tmp_path)
    assert keys and all("\0" not in key for key in keys)
    assert str(tmp_path / "litgpt" / "config.py") in keys  # the real dependency is kept
    assert _findings(run_cli, tmp_path) == uncached  # warm cache


def test_a_dependency_that_is_not_a_path_is_not_stored(tmp_path: Path) -> None:
    from ckptlint.config.settings import Settings

    settings = Settings(root=tmp_path, cache_dir=str(tmp_path / "cache"))
    source = tmp_path / "m.py"
    source.write_bytes(b"x = 1\n")
    real = tmp_path / "dep.py"
    real.write_bytes(b"y = 2\n")
    cache = ResultCache(build="0.0.0-000000000000")
    assert cache.lookup(str(source), source.read_bytes(), settings) is None
    fake = str(tmp_path / "pkg" / "\0self" / "mlp_class_name.py")
    cache.store(FileResult(str(source), dependencies=[fake, str(real)]), settings)
    cache.save()
    [cache_file] = (tmp_path / "cache").glob("*/*.json")
    entry = json.loads(cache_file.read_text())["files"][str(source)]
    assert list(entry["deps"]) == [str(real)]
    again = ResultCache(build="0.0.0-000000000000")
    assert again.lookup(str(source), source.read_bytes(), settings) is not None


def _programs(tmp_path: Path) -> Path:
    """Every test program in one tree: the case programs (and the shared cases when present),
    the snapshot project, the dynamic-attribute tree."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "tests" / "cases", tree / "cases")
    if SHARED_CASES.is_dir():
        shutil.copytree(SHARED_CASES, tree / "shared_cases")
    shutil.copytree(ROOT / "tests" / "snapshot_project", tree / "snapshot_project")
    _write_tree(tree / "dynamic", DYNAMIC)
    return tree


@pytest.mark.slow
def test_the_cached_path_over_every_test_program_gives_the_uncached_findings(tmp_path: Path, run_cli) -> None:
    tree = _programs(tmp_path)
    uncached = _findings(run_cli, tree, "--no-cache", "-j", "1")
    assert len(uncached[1]) > (50 if SHARED_CASES.is_dir() else 25)  # the shared cases hold ~25 more
    assert _findings(run_cli, tree, "-j", "1") == uncached
    assert all("\0" not in key for key in _cache_keys(tree))
    assert _findings(run_cli, tree, "-j", "1") == uncached


# ------------------------------------------------------------ cache entries of the wrong shape
CALL = "from torch.utils.checkpoint import checkpoint\n\ny = checkpoint(f, x)\n"


def _damage(entry: dict, how: str) -> None:
    diagnostic = entry["diagnostics"][0]
    if how == "start as text":
        diagnostic["start"] = "24:13"
    elif how == "another file":
        diagnostic["path"] = "/etc/passwd"
    elif how == "unknown code":
        diagnostic["code"] = "CKP777"
    elif how == "row zero":
        diagnostic["start"] = [0, 5]
    elif how == "bool row":
        diagnostic["end"] = [True, 5]
    elif how == "fix edits not a list":
        diagnostic["fix"] = {"applicability": "safe", "message": "m", "edits": 5}
    elif how == "message not text":
        diagnostic["message"] = ["m"]
    elif how == "diagnostics a dict":
        entry["diagnostics"] = {"a": 1}
    elif how == "module a string":
        entry["module"] = "m"
    elif how == "deps a list":
        entry["deps"] = ["x"]
    elif how == "depset unhashable":
        entry["depset"] = ["x"]
    elif how == "dependency with NUL":
        entry["deps"] = {"/a/\0b.py": [None, None, None]}
    elif how == "stat as text":
        entry["stat"] = "1:2"
    elif how == "hash a number":
        entry["hash"] = 5
    elif how == "problem of unknown kind":
        entry["problems"] = [["internal", "boom"]]
    elif how == "noqa_used with NUL":
        entry["noqa_used"] = [["\0", 1]]


DAMAGES = [
    "start as text",
    "another file",
    "unknown code",
    "row zero",
    "bool row",
    "fix edits not a list",
    "message not text",
    "diagnostics a dict",
    "module a string",
    "deps a list",
    "depset unhashable",
    "dependency with NUL",
    "stat as text",
    "hash a number",
    "problem of unknown kind",
    "noqa_used with NUL",
]


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("touched", [False, True], ids=["same-stat", "touched"])
def test_a_cache_entry_of_the_wrong_shape_is_a_miss(tmp_path: Path, run_cli, how: str, touched: bool) -> None:
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    expected = _findings(run_cli, tmp_path, "--no-cache")
    assert [f[3] for f in expected[1]] == ["CKP001"]
    assert _findings(run_cli, tmp_path) == expected
    [cache_file] = (tmp_path / ".ckptlint_cache").glob("*/*.json")
    data = json.loads(cache_file.read_text())
    _damage(data["files"][str(tmp_path / "m.py")], how)
    cache_file.write_text(json.dumps(data))
    if touched:  # read and compared by digest instead of trusted by size and time
        (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    assert _findings(run_cli, tmp_path) == expected
    assert _findings(run_cli, tmp_path) == expected  # rewritten whole


def test_a_cache_file_with_entries_of_every_wrong_type_still_saves(tmp_path: Path, run_cli) -> None:
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    expected = _findings(run_cli, tmp_path, "--no-cache")
    _findings(run_cli, tmp_path)
    [cache_file] = (tmp_path / ".ckptlint_cache").glob("*/*.json")
    data = json.loads(cache_file.read_text())
    data["files"].update({"/gone/\0x.py": {}, "/gone/y.py": 5, "/gone/z.py": {"depset": ["x"]}})
    data["depsets"] = {"x": 5}
    cache_file.write_text(json.dumps(data))
    (tmp_path / "m.py").write_text(CALL + "\n", encoding="utf-8")
    assert _findings(run_cli, tmp_path)[1] == expected[1]
    assert json.loads(cache_file.read_text())["files"].keys() == {str(tmp_path / "m.py")}


# ------------------------------------------------------------------ --clean removes only ours
def test_clean_keeps_user_files_beside_and_inside_the_cache_folder(tmp_path: Path, run_cli) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "m.py").write_text(CALL, encoding="utf-8")
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    (shared / "other-tool").mkdir()
    (shared / "other-tool" / "data.bin").write_bytes(b"\0\1")
    (shared / "notes.txt").write_text("mine")
    run_cli("--cache-dir", str(shared), ".", cwd=project)
    [cache_file] = shared.glob("*/*.json")
    build = cache_file.parent
    assert not (shared / "CACHEDIR.TAG").exists() and not (shared / ".gitignore").exists()  # not ours to mark
    (build / "0123456789abcdef.json").write_text("a user's file named like a cache file")
    # the default cache folder, with a user's file inside
    run_cli(".", cwd=project)
    own = project / ".ckptlint_cache"
    assert (own / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    (own / "README.md").write_text("put here by hand")

    result = run_cli("--cache-dir", str(shared), "--clean", ".", cwd=project)
    assert result.exit_code == 0
    assert not cache_file.exists()
    assert (build / "0123456789abcdef.json").read_text() == "a user's file named like a cache file"
    assert (shared / "other-tool" / "data.bin").read_bytes() == b"\0\1"
    assert (shared / "notes.txt").read_text() == "mine"
    assert (project / "m.py").read_text() == CALL
    # its cache files gone; the marks stay while the folder holds anything else
    assert sorted(p.name for p in own.rglob("*")) == [".gitignore", "CACHEDIR.TAG", "README.md"]
    assert (own / "README.md").read_text() == "put here by hand"
    assert f"Removed ckptlint's cache files from: {own}" in result.stderr

    (own / "README.md").unlink()
    assert run_cli("--clean", ".", cwd=project).exit_code == 0
    assert not own.exists()  # nothing else left: the folder goes


def test_clean_with_the_cache_in_the_project_folder_keeps_the_project(tmp_path: Path, run_cli) -> None:
    (tmp_path / "m.py").write_text(CALL, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "data.json").write_text('{"format": 4}')
    first = run_cli("--cache-dir", ".", ".")
    assert first.exit_code == 1 and "CKP001" in first.stdout
    assert not (tmp_path / ".gitignore").exists()  # a project folder is never git-ignored
    assert not (tmp_path / "CACHEDIR.TAG").exists()
    assert run_cli("--cache-dir", ".", ".").stdout == first.stdout  # served from the cache, same
    assert list(tmp_path.glob("*/*.json"))
    result = run_cli("--cache-dir", ".", "--clean", ".")
    assert result.exit_code == 0
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["data.json", "m.py", "sub", "sub/n.py"]
    assert (tmp_path / "m.py").read_text() == CALL


def test_a_shared_dependency_set_is_checked_and_serves_its_entries(tmp_path: Path) -> None:
    """A result that read more than 64 files keeps its dependencies in a set shared by name; a
    finding may lie in one of them (CKP202 reports where a side effect is written)."""
    from ckptlint.config.settings import Settings
    from ckptlint.text.diagnostics import Diagnostic

    settings = Settings(root=tmp_path, cache_dir=str(tmp_path / "cache"))
    deps = []
    for i in range(70):
        dep = tmp_path / f"dep{i}.py"
        dep.write_text(f"X{i} = {i}\n")
        deps.append(str(dep))
    source = tmp_path / "m.py"
    source.write_bytes(CALL.encode())
    elsewhere = Diagnostic("CKP202", "side effect", deps[3], (1, 1), (1, 3))
    cache = ResultCache(build="0.0.0-000000000000")
    cache.lookup(str(source), source.read_bytes(), settings)
    cache.store(FileResult(str(source), diagnostics=[elsewhere], dependencies=deps), settings)
    cache.save()
    [cache_file] = (tmp_path / "cache").glob("*/*.json")
    data = json.loads(cache_file.read_text())
    [ref] = data["depsets"]
    assert data["files"][str(source)]["depset"] == ref and len(data["depsets"][ref]) == 71

    def lookup() -> FileResult | None:
        return ResultCache(build="0.0.0-000000000000").lookup(str(source), source.read_bytes(), settings)

    hit = lookup()
    assert hit is not None and [d.path for d in hit.diagnostics] == [deps[3]]
    data["depsets"][ref][deps[5]] = ["not a digest", 1, 2]
    cache_file.write_text(json.dumps(data))
    assert lookup() is None
    del data["depsets"][ref][deps[5]]
    data["depsets"][ref][deps[3]] = data["depsets"][ref].pop(deps[3])  # still there: a hit again
    cache_file.write_text(json.dumps(data))
    assert lookup() is not None
    del data["depsets"][ref][deps[3]]  # the finding's file is no longer one the result read
    cache_file.write_text(json.dumps(data))
    assert lookup() is None
