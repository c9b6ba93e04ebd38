"""Rule decisions from declared transformers versions: CKP001 on transformers' default, the
5.24 names as sites, CKP004's rename; the cache re-lints when a declaration changes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ckptlint.cli.app import main
from ckptlint.testing import assert_clean, assert_lints, fix

ENABLE = "model.gradient_checkpointing_enable()\n"
ARGS = """\
from transformers import TrainingArguments
args = TrainingArguments("out", gradient_checkpointing=True)
"""


# ---------------------------------------------------------------- CKP001: inside, partly, outside a row


@pytest.mark.parametrize("source", [ENABLE, ARGS])
@pytest.mark.parametrize("declared", [">=5.4", "==5.5.3", ">=5.0,<6"])
def test_ckp001_silent_when_every_declared_version_defaults_to_non_reentrant(source: str, declared: str) -> None:
    assert_clean(source, "CKP001", versions={"transformers": declared})


@pytest.mark.parametrize("source", [ENABLE, ARGS])
def test_ckp001_inside_the_reentrant_range_names_the_declaration(source: str) -> None:
    assert_lints(
        source,
        "CKP001",
        message="with `transformers==4.57.1` (target_versions), transformers runs the legacy reentrant checkpoint",
        versions={"transformers": "4.57.1"},
    )


@pytest.mark.parametrize("source", [ENABLE, ARGS])
def test_ckp001_partly_inside_names_the_reentrant_versions(source: str) -> None:
    assert_lints(
        source,
        "CKP001",
        message="with transformers >=4.40,<5.0, which `transformers>=4.40` (target_versions) allows, transformers runs",
        versions={"transformers": ">=4.40"},
    )


@pytest.mark.parametrize("source", [ENABLE, ARGS])
def test_ckp001_undeclared_keeps_todays_message(source: str) -> None:
    assert_lints(source, "CKP001", message="transformers before 5.0 runs the legacy reentrant checkpoint")


def test_ckp001_kwargs_without_the_key_is_reported_whatever_the_version() -> None:
    source = 'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"preserve_rng_state": True})\n'
    assert_lints(source, "CKP001", message="so torch runs the legacy reentrant checkpoint", versions={"transformers": ">=5.4"})


def test_ckp001_torch_sites_do_not_depend_on_transformers() -> None:
    source = "from torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)\n"
    assert_lints(source, "CKP001", message="without `use_reentrant`", versions={"transformers": ">=5.4"})


# ---------------------------------------------------------------- the 5.24 names


def test_new_names_default_to_non_reentrant() -> None:
    assert_clean("model.activation_checkpointing_enable(every_n_layers=2, offload=True)\n", "CKP001")
    assert_clean('from transformers import TrainingArguments\nTrainingArguments("o", activation_checkpointing=True)\n', "CKP001")


def test_new_names_with_kwargs_lacking_the_key_are_reported_and_fixed() -> None:
    source = 'model.activation_checkpointing_enable({"preserve_rng_state": True})\n'
    assert_lints(
        source,
        "CKP001",
        message='`activation_checkpointing_enable()`: `activation_checkpointing_kwargs` has no "use_reentrant" key',
        fixed='model.activation_checkpointing_enable({"preserve_rng_state": True, "use_reentrant": False})\n',
    )
    source = (
        "from transformers import TrainingArguments\n"
        'TrainingArguments("o", activation_checkpointing=True, activation_checkpointing_kwargs={})\n'
    )
    assert_lints(source, "CKP001", message="`TrainingArguments(activation_checkpointing=True)`")


def test_show_sites_lists_the_new_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\n"
        "model.activation_checkpointing_enable(every_n_layers=2, offload=True)\n"
        'TrainingArguments("o", activation_checkpointing=True, activation_checkpointing_kwargs={"use_reentrant": False})\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--show-sites", "--no-cache", "--output-format", "json", "train.py"])
    sites = json.loads(result.stdout)
    sites = sites["sites"] if isinstance(sites, dict) else sites
    assert [s["api"] for s in sites] == ["activation_checkpointing_enable", "TrainingArguments"]
    assert sites[0]["options"]["every_n_layers"] == 2 and sites[0]["options"]["offload"] is True
    assert sites[1]["options"]["activation_checkpointing"] is True
    assert sites[1]["options"]["use_reentrant"] is False


# ---------------------------------------------------------------- CKP004


def test_ckp004_inside_renames() -> None:
    source = "model.gradient_checkpointing_enable({'use_reentrant': False}, every_n_layers=2)\n"
    assert_lints(
        source,
        "CKP004",
        message="with `transformers>=5.24` (target_versions)",
        fixed="model.activation_checkpointing_enable({'use_reentrant': False}, every_n_layers=2)\n",
        versions={"transformers": ">=5.24"},
    )


@pytest.mark.parametrize("declared", [None, "<5", "==5.5.3", ">=5.4", ">=4.56.2"])
def test_ckp004_silent_unless_every_declared_version_has_the_new_names(declared: str | None) -> None:
    # partly inside (>=5.4, >=4.56.2): the versions before 5.24 may lack the new names
    assert_clean(ENABLE, "CKP004", versions={"transformers": declared} if declared else None)


def test_ckp004_both_spellings_are_not_renamed() -> None:
    source = (
        "from transformers import TrainingArguments\n"
        'TrainingArguments("o", gradient_checkpointing=True, activation_checkpointing=True)\n'
    )
    assert_lints(source, "CKP004", message="deprecated alias", fixed=None, versions={"transformers": ">=5.24"})


def test_ckp004_fix_of_a_tree_model_and_not_of_its_own_method() -> None:
    source = textwrap.dedent("""\
        from transformers import PreTrainedModel

        class Net(PreTrainedModel):
            pass

        class Own:
            def gradient_checkpointing_enable(self):
                pass

        Net.from_pretrained("p").gradient_checkpointing_enable()
        Own().gradient_checkpointing_enable()
        """)
    assert fix(source, "CKP004", versions={"transformers": "5.24.0"}) == source.replace(
        'Net.from_pretrained("p").gradient_checkpointing_enable()',
        'Net.from_pretrained("p").activation_checkpointing_enable()',
    )


# ---------------------------------------------------------------- the cache keys on declarations


def _run(root: Path, *extra: str) -> str:
    result = CliRunner().invoke(main, ["--output-format", "json", *extra, str(root / "train.py")])
    return json.dumps(sorted((d["code"], d["message"]) for d in json.loads(result.stdout)))


def test_cached_run_equals_no_cache_after_editing_the_declaration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(ENABLE, encoding="utf-8")
    requirements = tmp_path / "requirements.txt"
    expected = {
        "transformers==4.57.1\n": ["CKP001"],
        "transformers>=5.4\n": [],
        "transformers>=4.40\n": ["CKP001"],
        "transformers==5.24.0\n": ["CKP004"],
    }
    for text, codes in expected.items():
        requirements.write_text(text, encoding="utf-8")
        cached, fresh = _run(tmp_path), _run(tmp_path, "--no-cache")
        assert cached == fresh
        assert [code for code, _ in json.loads(cached)] == codes
        assert _run(tmp_path) == fresh  # read from the cache this time
