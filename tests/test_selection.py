"""Rule selection (ruff's semantics): --select/--extend-select/--ignore with prefixes and ALL,
the most specific selector wins, the command line over the configuration, per-file-ignores."""

from __future__ import annotations

import pytest

from ckptlint.config.files import CliOverrides, build_settings
from ckptlint.config.settings import RuleSelection, SelectionLayer, default_enabled

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
# one CKP001 finding (line 2) and one CKP999 syntax error (line 3)
BOTH = IMPORT + "y = checkpoint(f, x)\nz = (\n"


def codes(run_cli, *args: str) -> list[str]:
    result = run_cli("-q", *args, "m.py")
    assert result.exit_code in (0, 1), result.stderr
    return [line.split(" ")[1] for line in result.stdout.splitlines() if line]


@pytest.fixture
def both(write):
    write("m.py", BOTH)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # a file that does not parse has only CKP999, and (as ruff's syntax errors) it is
        # reported whatever the selection: it says the file was not checked
        ((), ["CKP999"]),
        (("--select", "CKP001"), ["CKP999"]),
        (("--select", "CKP9"), ["CKP999"]),
        (("--select", "ALL", "--ignore", "CKP999"), ["CKP999"]),
        (("--ignore", "ALL"), ["CKP999"]),
        (("--ignore", "CKP"), ["CKP999"]),
    ],
)
def test_selection_on_a_broken_file(run_cli, both, args, expected) -> None:
    assert codes(run_cli, *args) == expected


@pytest.fixture
def bad(write):
    write("m.py", IMPORT + "y = checkpoint(f, x)\n")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), ["CKP001"]),
        (("--select", "CKP001"), ["CKP001"]),
        (("--select", "ckp00"), ["CKP001"]),
        (("--select", "CKP999"), []),
        (("--select", "ALL"), ["CKP001"]),
        (("--ignore", "CKP0"), []),
        (("--select", "CKP0", "--ignore", "CKP"), ["CKP001"]),  # the more specific selector wins
        (("--select", "CKP", "--ignore", "CKP0"), []),
        (("--select", "CKP001", "--ignore", "CKP001"), []),  # on a tie, ignore wins
        (("--ignore", "ALL", "--extend-select", "CKP001"), ["CKP001"]),
        (("--select", "CKP999", "--extend-select", "CKP00"), ["CKP001"]),
        (("--select", "CKP999,CKP001"), ["CKP001"]),
        (("--select", "CKP999", "--select", "CKP001"), ["CKP001"]),
    ],
)
def test_cli_selection(run_cli, bad, args, expected) -> None:
    assert codes(run_cli, *args) == expected


@pytest.mark.parametrize(
    ("config", "args", "expected"),
    [
        ('select = ["CKP999"]', (), []),
        ('select = ["CKP999"]', ("--select", "CKP001"), ["CKP001"]),  # the CLI's select replaces the config's
        ('select = ["CKP999"]', ("--extend-select", "CKP001"), ["CKP001"]),
        ('ignore = ["CKP001"]', (), []),
        ('ignore = ["CKP001"]', ("--extend-select", "CKP001"), ["CKP001"]),
        ('ignore = ["CKP001"]', ("--select", "CKP001"), ["CKP001"]),
        ('select = ["CKP001"]', ("--ignore", "CKP0"), []),
        ('extend-select = ["CKP001"]\nignore = ["CKP"]', (), ["CKP001"]),
        ('select = ["CKP999"]', ("--isolated",), ["CKP001"]),
    ],
)
def test_config_and_cli_layers(run_cli, write, bad, config: str, args, expected) -> None:
    write("pyproject.toml", f"[tool.ckptlint]\n{config}\n")
    assert codes(run_cli, *args) == expected


@pytest.mark.parametrize(
    ("pattern", "ignored"),
    [
        ("m.py", ["m.py"]),
        ("*.py", ["m.py", "tests/test_m.py", "src/pkg/gen_m.py"]),
        ("tests/*", ["tests/test_m.py"]),
        ("tests/", ["tests/test_m.py"]),
        ("**/gen_*.py", ["src/pkg/gen_m.py"]),
        ("src/**", ["src/pkg/gen_m.py"]),
        ("/m.py", ["m.py"]),
    ],
)
def test_per_file_ignores_globs(run_cli, write, pattern: str, ignored: list[str]) -> None:
    files = ["m.py", "tests/test_m.py", "src/pkg/gen_m.py"]
    for name in files:
        write(name, IMPORT + "y = checkpoint(f, x)\n")
    write("pyproject.toml", f'[tool.ckptlint.per-file-ignores]\n"{pattern}" = ["CKP001"]\n')
    result = run_cli("-q", ".")
    reported = sorted(line.split(":")[0] for line in result.stdout.splitlines() if line)
    assert reported == sorted(set(files) - set(ignored))


def test_per_file_ignores_are_relative_to_the_config_folder(run_cli, write, tmp_path) -> None:
    write("proj/pyproject.toml", '[tool.ckptlint.per-file-ignores]\n"tests/*" = ["CKP0"]\n')
    write("proj/tests/t.py", IMPORT + "y = checkpoint(f, x)\n")
    write("proj/src/m.py", IMPORT + "y = checkpoint(f, x)\n")
    result = run_cli("-q", "proj")  # run from the folder above the configuration
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["proj/src/m.py"]
    result = run_cli("-q", ".", cwd=tmp_path / "proj" / "tests")
    assert result.stdout == ""


def test_extend_per_file_ignores(run_cli, write) -> None:
    write("a.py", IMPORT + "y = checkpoint(f, x)\n")
    write("b.py", IMPORT + "y = checkpoint(f, x)\n")
    write(
        "pyproject.toml",
        '[tool.ckptlint.per-file-ignores]\n"a.py" = ["CKP001"]\n'
        '[tool.ckptlint.extend-per-file-ignores]\n"b.py" = ["CKP001"]\n',
    )
    assert run_cli("-q", ".").stdout == ""


def test_rule_selection_layers_directly() -> None:
    from ckptlint.rules import ALL_RULES

    default = default_enabled()
    assert default == {c for c, r in ALL_RULES.items() if getattr(r, "default_enabled", True)}
    ckp0 = {c for c in ALL_RULES if c.startswith("CKP0")}
    assert RuleSelection((SelectionLayer(select=("CKP0",), ignore=("CKP",)),)).enabled(default) == ckp0
    assert RuleSelection((SelectionLayer(select=("CKP",), ignore=("CKP0",)),)).enabled(default) == set(ALL_RULES) - ckp0
    layers = (SelectionLayer(select=("CKP9",)), SelectionLayer(extend_select=("CKP001",)))
    assert RuleSelection(layers).enabled(default) == {c for c in ALL_RULES if c.startswith("CKP9")} | {"CKP001"}
    layers = (SelectionLayer(ignore=("ALL",)), SelectionLayer(select=("ALL",)))
    assert RuleSelection(layers).enabled(default) == set(ALL_RULES)


def test_build_settings_cli_over_config(tmp_path) -> None:
    settings = build_settings(None, CliOverrides(select=("CKP999",)), tmp_path)
    assert settings.enabled == {"CKP999"}
    assert settings.root == tmp_path
