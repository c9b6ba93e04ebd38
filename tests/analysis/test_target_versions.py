"""Declared library versions: each declaration format, includes, markers, extras, the nearest
declaring folder, overrides, and unreadable files (a warning, nothing declared)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ckptlint.cli.app import main
from ckptlint.config.declarations import DeclaredVersions, InvalidTargetVersion, parse_target_version_option
from ckptlint.config.files import CliOverrides, ConfigError, SettingsResolver
from ckptlint.facts.versions import Placement, TargetVersion, decide, specifier_range


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _declared(root: Path, warnings: list[str] | None = None) -> dict[str, TargetVersion]:
    target = _write(root, "pkg/train.py", "x = 1\n")
    reader = DeclaredVersions(warn=(warnings.append if warnings is not None else DeclaredVersions().warn))
    return {t.library: t for t in reader.for_path(target)}


def _range(target: TargetVersion) -> str:
    return str(target.range)


# ---------------------------------------------------------------- formats


def test_requirements_txt_with_includes_and_constraints(tmp_path: Path) -> None:
    _write(tmp_path, "requirements.txt", """\
        # training
        -r reqs/base.txt
        -c constraints.txt
        transformers[torch]>=4.40 ; python_version >= "3.10"  # markers and extras are read past
        -e .
        git+https://example.org/repo.git
        --index-url https://example.org/simple
        """)
    _write(tmp_path, "reqs/base.txt", "torch>=2.1\n")
    _write(tmp_path, "constraints.txt", "transformers<5\ntorch<2.14\n")
    found = _declared(tmp_path)
    assert _range(found["transformers"]) == ">=4.40,<5"
    assert found["transformers"].line == 4
    assert _range(found["torch"]) == ">=2.1,<2.14"


def test_two_requirements_files_are_alternatives(tmp_path: Path) -> None:
    _write(tmp_path, "requirements.txt", "transformers==4.57.1\n")
    _write(tmp_path, "requirements-new.txt", "transformers>=5.4\n")
    found = _declared(tmp_path)
    assert _range(found["transformers"]) == "==4.57.1 or >=5.4"


def test_pyproject_dependencies_extras_and_groups(tmp_path: Path) -> None:
    _write(tmp_path, "pyproject.toml", """\
        [project]
        name = "demo"
        dependencies = ["torch>=2.4", "transformers>=5.4.0"]

        [project.optional-dependencies]
        old = ["transformers[torch]>=4.45,<5; python_version < '3.12'"]

        [dependency-groups]
        base = ["diffusers>=0.30"]
        dev = [{include-group = "base"}, "diffusers<0.40"]
        """)
    found = _declared(tmp_path)
    # the extra installs on top of the main list: it adds no version (here it cannot install at all)
    assert _range(found["transformers"]) == ">=5.4.0"
    assert found["transformers"].line == 3
    assert _range(found["torch"]) == ">=2.4"
    # only groups name diffusers: `dev` includes `base` (intersected), `base` alone is an alternative
    assert _range(found["diffusers"]) == ">=0.30"


def test_poetry_caret_tilde_and_alternatives(tmp_path: Path) -> None:
    _write(tmp_path, "pyproject.toml", """\
        [tool.poetry.dependencies]
        python = "^3.10"
        transformers = "^4.40"
        torch = {version = "~2.4", source = "pytorch"}
        peft = [{version = "0.12.0", python = "<3.11"}, {version = ">=0.13", python = ">=3.11"}]
        """)
    found = _declared(tmp_path)
    assert _range(found["transformers"]) == ">=4.40,<5"
    assert _range(found["torch"]) == ">=2.4,<2.5"
    assert _range(found["peft"]) == "==0.12.0 or >=0.13"


def test_setup_cfg(tmp_path: Path) -> None:
    _write(tmp_path, "setup.cfg", """\
        [metadata]
        name = demo

        [options]
        install_requires =
            torch>=2.1
            transformers>=5.0

        [options.extras_require]
        legacy = transformers<5
        """)
    found = _declared(tmp_path)
    assert _range(found["transformers"]) == ">=5.0"  # the extra installs on top of install_requires
    assert _range(found["torch"]) == ">=2.1"


def test_setup_py_literal_and_named_list(tmp_path: Path) -> None:
    _write(tmp_path, "setup.py", """\
        from setuptools import setup

        REQUIRED = ["transformers==5.5.3", "accelerate>=1.0"]
        setup(name="demo", install_requires=REQUIRED, extras_require={"deep": ["deepspeed>=0.15"]})
        """)
    found = _declared(tmp_path)
    assert _range(found["transformers"]) == "==5.5.3"
    assert found["transformers"].line == 3
    assert _range(found["deepspeed"]) == ">=0.15"


def test_setup_py_that_builds_its_list_declares_nothing(tmp_path: Path) -> None:
    _write(tmp_path, "setup.py", """\
        from setuptools import setup
        setup(name="demo", install_requires=open("requirements.in").read().split())
        """)
    assert _declared(tmp_path) == {}


def test_conda_environment_with_pip_section(tmp_path: Path) -> None:
    _write(tmp_path, "environment.yml", """\
        name: demo
        channels: [pytorch, conda-forge]
        dependencies:
          - python=3.11
          - pytorch::pytorch=2.4
          - timm 1.0.*
          - pip
          - pip:
              - transformers>=4.46,<5
        """)
    found = _declared(tmp_path)
    assert _range(found["torch"]) == ">=2.4,<2.5"
    assert _range(found["timm"]) == ">=1.0,<1.1"
    assert _range(found["transformers"]) == ">=4.46,<5"
    assert found["transformers"].line == 9


# ---------------------------------------------------------------- nearest folder, unreadable files


def test_nearest_declaring_folder_wins_per_library(tmp_path: Path) -> None:
    _write(tmp_path, "requirements.txt", "transformers>=5.4\ntorch==2.13.*\n")
    _write(tmp_path, "pkg/requirements.txt", "transformers<5\n")
    found = _declared(tmp_path)
    assert _range(found["transformers"]) == "<5"
    assert found["transformers"].source.endswith(str(Path("pkg") / "requirements.txt"))
    assert _range(found["torch"]) == ">=2.13,<2.14"  # from the folder above


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("pyproject.toml", "[project\ndependencies = [", "invalid TOML"),
        ("requirements.txt", "transformers>=>5\n", "cannot parse requirement"),
        ("requirements.txt", "-r missing.txt\n", "not found"),
        ("setup.py", "setup(install_requires=[\n", "cannot parse setup.py"),
        ("setup.cfg", "[options\ninstall_requires = torch\n", "invalid setup.cfg"),
        ("environment.yml", "dependencies: [a\n", "invalid YAML"),
        ("pyproject.toml", '[tool.poetry.dependencies]\ntransformers = "^^4"\n', "cannot parse the constraint"),
    ],
)
def test_unreadable_file_warns_and_declares_nothing(tmp_path: Path, name: str, text: str, reason: str) -> None:
    _write(tmp_path, name, text)
    warnings: list[str] = []
    assert _declared(tmp_path, warnings) == {}
    assert len(warnings) == 1 and reason in warnings[0] and name in warnings[0]


def test_unreadable_file_cli_warning_and_todays_behaviour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "requirements.txt", "transformers>=>5\n")
    _write(tmp_path, "train.py", "model.gradient_checkpointing_enable()\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--no-cache", "train.py"])
    assert result.exit_code == 1
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "requirements.txt" in warnings[0]
    assert "transformers before 5.0 runs the legacy reentrant checkpoint" in result.stdout


# ---------------------------------------------------------------- overrides


def test_config_override_and_cli_override(tmp_path: Path) -> None:
    _write(tmp_path, "requirements.txt", "transformers>=4.40\ntorch>=2.1\n")
    _write(tmp_path, "pyproject.toml", """\
        [tool.ckptlint]
        target-versions = { transformers = "5.5" }
        """)
    target = _write(tmp_path, "train.py", "x = 1\n")

    def versions(cli: CliOverrides, isolated: bool = False) -> dict[str, str]:
        settings = SettingsResolver(cli, cwd=tmp_path, isolated=isolated).for_path(target)
        return {t.library: str(t.range) for t in settings.target_versions}

    assert versions(CliOverrides()) == {"torch": ">=2.1", "transformers": ">=5.5,<5.6"}
    cli = CliOverrides(target_versions=(parse_target_version_option("transformers>=5.24"),))
    assert versions(cli) == {"torch": ">=2.1", "transformers": ">=5.24"}
    assert versions(CliOverrides(), isolated=True) == {}
    assert versions(cli, isolated=True) == {"transformers": ">=5.24"}


def test_override_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidTargetVersion, match="numpy"):
        parse_target_version_option("numpy=2.0")
    with pytest.raises(InvalidTargetVersion):
        parse_target_version_option("transformers=five")
    _write(tmp_path, "pyproject.toml", '[tool.ckptlint]\ntarget-versions = { transformers = 5 }\n')
    with pytest.raises(ConfigError, match="target-versions"):
        SettingsResolver(CliOverrides(), cwd=tmp_path).for_path(_write(tmp_path, "a.py", "\n"))


def test_show_settings_prints_each_range_and_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "requirements.txt", "transformers>=5.4\n")
    _write(tmp_path, "train.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--show-settings", "--target-version", "torch=2.13", "train.py"])
    assert result.exit_code == 0
    assert f'"transformers >=5.4 (transformers>=5.4 in {tmp_path / "requirements.txt"}:1)"' in result.stdout
    assert '"torch >=2.13,<2.14 (torch==2.13.* in --target-version)"' in result.stdout


# ---------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    ("declared", "placement"),
    [(">=5.4", Placement.INSIDE), ("==5.5.3", Placement.INSIDE), (">=4.40", Placement.PARTLY),
     ("~=4.57", Placement.OUTSIDE), ("<5", Placement.OUTSIDE), (">=5,<4", Placement.UNDECLARED)],
)
def test_decide(declared: str, placement: Placement) -> None:
    target = TargetVersion("transformers", (declared,), "requirements.txt", 1)
    assert decide(target, specifier_range(">=5.0")).placement is placement
    assert decide(None, specifier_range(">=5.0")).placement is Placement.UNDECLARED


# ---------------------------------------------------------------- requirements files read with pip's parser


def test_pip_compile_hashes_are_read(tmp_path: Path) -> None:
    """``pip-compile --generate-hashes``: continuation lines with ``--hash`` options."""
    _write(tmp_path, "requirements.txt", """\
        #
        # This file is autogenerated by pip-compile with Python 3.11
        #
        transformers==5.30.0 \\
            --hash=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef \\
            --hash=sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210
            # via -r requirements.in
        torch==2.13.0 \\
            --hash=sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
        """)
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert (_range(found["transformers"]), found["transformers"].line) == ("==5.30.0", 4)
    assert _range(found["torch"]) == "==2.13.0"
    assert warnings == []


def test_editable_urls_and_options_are_said_not_dropped(tmp_path: Path) -> None:
    _write(tmp_path, "requirements.txt", """\
        --index-url https://download.example.org/whl/cu121
        --extra-index-url https://example.org/simple
        --pre
        --find-links ./wheels
        -e git+https://github.com/huggingface/peft.git#egg=peft
        timm @ https://example.org/timm-0.9.16.tar.gz
        https://download.example.org/whl/torch-2.4.1%2Bcu121-cp311-cp311-linux_x86_64.whl
        -e .
        numpy @ https://example.org/numpy.tar.gz
        transformers>=4.40
        """)
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert _range(found["transformers"]) == ">=4.40"
    assert _range(found["torch"]) == "==2.4.1"  # the wheel's file name gives its version
    assert "peft" not in found and "timm" not in found
    assert len(warnings) == 2  # the untracked numpy and the project itself (-e .) say nothing
    assert "requirements.txt:5: `-e git+https://github.com/huggingface/peft.git#egg=peft`: an editable checkout" in warnings[0]
    assert "requirements.txt:6: `timm @ https://example.org/timm-0.9.16.tar.gz`: a URL or path" in warnings[1]


def test_markers_are_evaluated_for_the_environments_torch_installs_in(tmp_path: Path) -> None:
    _write(tmp_path, "requirements.txt", """\
        torch==2.1.0 ; sys_platform == "darwin"
        torch==2.4.0 ; sys_platform != "darwin"
        transformers>=4.40 ; python_version >= "3.10"
        transformers<5 ; python_version < "3.12"
        accelerate==0.20.0 ; python_version < "3.8"
        diffusers>=0.20 ; platform_machine == "armv7l"
        """)
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert _range(found["torch"]) == "==2.1.0 or ==2.4.0"  # alternatives, not an empty intersection
    assert _range(found["transformers"]) == ">=4.40"  # <5 on Python 3.10 and 3.11 only
    assert "accelerate" not in found and "diffusers" not in found
    assert len(warnings) == 2 and all("holds in no environment torch 2.13 installs in" in w for w in warnings)


def test_pyproject_extra_markers_use_their_extra(tmp_path: Path) -> None:
    _write(tmp_path, "pyproject.toml", """\
        [project]
        dependencies = ["torch>=2.1"]
        [project.optional-dependencies]
        hf = ['transformers>=5.4 ; extra == "hf"', 'peft==0.1 ; extra == "other"']
        """)
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert _range(found["transformers"]) == ">=5.4"
    assert "peft" not in found and len(warnings) == 1


def test_include_loops_end_and_constraints_join(tmp_path: Path) -> None:
    _write(tmp_path, "requirements.txt", "-r reqs/base.txt\n--constraint reqs/pins.txt\ntorch>=2.1\n")
    _write(tmp_path, "reqs/base.txt", "-r ../requirements.txt\n--requirement=dev.txt\ntransformers>=4.40\n")
    _write(tmp_path, "reqs/dev.txt", "-r base.txt\n")
    _write(tmp_path, "reqs/pins.txt", "torch<2.14\n")
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert _range(found["torch"]) == ">=2.1,<2.14"
    assert _range(found["transformers"]) == ">=4.40"
    assert warnings == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("pytorch >= 1.13", ">=1.13"),
        ("pytorch>=1.13, <2", ">=1.13,<2"),
        ("pytorch 2.1.* py3.10_cuda12.1_cudnn8_0", ">=2.1,<2.2"),
        ("conda-forge::pytorch=2.1", ">=2.1,<2.2"),
        ("pytorch ==2.1.0", "==2.1.0"),
    ],
)
def test_conda_specs_with_spaces(tmp_path: Path, spec: str, expected: str) -> None:
    _write(tmp_path, "environment.yml", f"dependencies:\n  - python=3.11\n  - {spec}\n")
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert warnings == [] and _range(found["torch"]) == expected


def test_pyproject_wheel_urls_give_their_versions(tmp_path: Path) -> None:
    # unsloth's pyproject.toml pins torch by wheel URLs in its extras
    _write(tmp_path, "pyproject.toml", """\
        [project]
        name = "p"
        dependencies = [
            "torch @ https://download.pytorch.org/whl/cu121/torch-2.4.1%2Bcu121-cp310-cp310-linux_x86_64.whl#sha256=00",
            "timm @ https://example.org/timm-0.9.16.tar.gz",
        ]
        """)
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert _range(found["torch"]) == "==2.4.1"
    assert "timm" not in found
    assert len(warnings) == 1 and "`timm @ https://example.org/timm-0.9.16.tar.gz`: a URL or path" in warnings[0]


def test_many_requirements_skipped_alike_are_counted(tmp_path: Path) -> None:
    lines = "".join(f'    "torch=={minor} ; python_version == \\"3.{minor}\\"",\n' for minor in range(5, 9))
    _write(tmp_path, "pyproject.toml", '[project]\nname = "p"\ndependencies = [\n' + lines + ']\n')
    warnings: list[str] = []
    found = _declared(tmp_path, warnings)
    assert "torch" not in found
    assert len(warnings) == 3
    assert "`torch==5 ; python_version == \"3.5\"`: its marker" in warnings[0]
    assert "`torch==6 ; python_version == \"3.6\"`: its marker" in warnings[1]
    assert warnings[2].endswith(
        "pyproject.toml: 2 more requirements of tracked libraries are not read as declared versions: their markers hold"
        " in no environment torch 2.13 installs in (Python 3.10 to 3.15)"
    )


def test_single_versions_left_out_read_as_exceptions() -> None:
    # unsloth's `transformers!=4.52.0,...,!=5.1.0,<=5.5.0,>=4.51.3`
    assert str(specifier_range(">=4.4,!=4.5")) == ">=4.4 except 4.5"
    assert str(specifier_range("!=4.52.0,!=4.52.1,<5")) == "<5 except 4.52.0 and 4.52.1"
    assert str(specifier_range("!=4.52.0,!=4.52.1,!=4.53.0,<=5.5.0,>=4.51.3")) == ">=4.51.3,<=5.5.0 except 3 single versions"
    assert str(specifier_range("<4.0,>=3")) == ">=3,<4.0"
    assert str(specifier_range("!=3.*")) == "<3 or >=4"  # a gap wider than one version stays
