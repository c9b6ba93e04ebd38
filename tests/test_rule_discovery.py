"""Rules are found in the modules of the rules package: one ``ckpNNN_<name>`` module a rule,
its class's code its number, every registered code with its module; anything else is a clear
error naming the module or the code."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import ckptlint.rules
from ckptlint.registry import RULE_CODES
from ckptlint.rules import ALL_RULES
from ckptlint.rules.discovery import RuleDiscoveryError, discover_rules

_names = itertools.count()

RULE_SOURCE = """\
from ckptlint.rules.base import Rule


class {cls}(Rule):
    code = "{code}"

    def check(self, ctx):
        pass
"""

MakePackage = Callable[[dict[str, str]], tuple[list[str], str]]


@pytest.fixture
def make_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakePackage]:
    """Write a package of the given ``module name -> source`` into a temporary folder on
    ``sys.path``; returns its ``__path__`` and name. Its modules leave ``sys.modules`` after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(modules: dict[str, str]) -> tuple[list[str], str]:
        name = f"discovery_example_{next(_names)}"
        folder = tmp_path / name
        folder.mkdir()
        (folder / "__init__.py").write_text("", encoding="utf-8")
        for module, source in modules.items():
            (folder / f"{module}.py").write_text(source, encoding="utf-8")
        made.append(name)
        return [str(folder)], name

    yield make
    for key in [k for k in sys.modules if k.split(".")[0] in made]:
        del sys.modules[key]


def test_the_rules_package_defines_every_registered_rule_in_registry_order() -> None:
    assert tuple(ALL_RULES) == RULE_CODES
    for code, rule in ALL_RULES.items():
        assert rule.code == code
        assert rule.__module__.startswith(f"ckptlint.rules.ckp{code[3:]}_")


def test_discovery_is_repeatable() -> None:
    again = discover_rules(ckptlint.rules.__path__, ckptlint.rules.__name__, RULE_CODES)
    assert list(again.items()) == list(ALL_RULES.items())


def test_helper_modules_and_imported_rules_are_not_rules(make_package: MakePackage) -> None:
    path, name = make_package(
        {
            "ckp001_example": RULE_SOURCE.format(cls="Example", code="CKP001"),
            # a helper that defines a rule-like class, and a rule module importing another's rule
            "helpers": RULE_SOURCE.format(cls="NotDiscovered", code="CKP002"),
            "ckp003_example": RULE_SOURCE.format(cls="Three", code="CKP003")
            + "from ckptlint.rules.ckp001_use_reentrant import CheckpointWithoutUseReentrant\n",
        }
    )
    rules = discover_rules(path, name, ("CKP001", "CKP003"))
    assert [(code, rule.__name__, rule.__module__) for code, rule in rules.items()] == [
        ("CKP001", "Example", f"{name}.ckp001_example"),
        ("CKP003", "Three", f"{name}.ckp003_example"),
    ]
    assert f"{name}.helpers" not in sys.modules


def test_a_rule_module_without_a_rule_is_an_error(make_package: MakePackage) -> None:
    path, name = make_package({"ckp001_empty": "X = 1\n"})
    with pytest.raises(RuleDiscoveryError, match=rf"^{name}\.ckp001_empty defines no rule"):
        discover_rules(path, name, ("CKP001",))


def test_a_registered_code_without_a_module_is_an_error(make_package: MakePackage) -> None:
    path, name = make_package({"ckp001_example": RULE_SOURCE.format(cls="Example", code="CKP001")})
    with pytest.raises(RuleDiscoveryError, match=r"^no rule module defines CKP002, CKP101:") as error:
        discover_rules(path, name, ("CKP001", "CKP002", "CKP101"))
    assert f"{name}/ckp002_<name>.py" in str(error.value)


def test_a_module_whose_rule_has_another_number_is_an_error(make_package: MakePackage) -> None:
    path, name = make_package({"ckp001_example": RULE_SOURCE.format(cls="Example", code="CKP002")})
    with pytest.raises(RuleDiscoveryError, match=r"defines Example with code CKP002; .* must define the rule CKP001"):
        discover_rules(path, name, ("CKP001", "CKP002"))


def test_two_rules_in_one_module_are_an_error(make_package: MakePackage) -> None:
    source = RULE_SOURCE.format(cls="One", code="CKP001") + RULE_SOURCE.format(cls="Other", code="CKP001")
    path, name = make_package({"ckp001_example": source})
    with pytest.raises(RuleDiscoveryError, match=r"defines 2 rules \(One \(CKP001\), Other \(CKP001\)\)"):
        discover_rules(path, name, ("CKP001",))


def test_two_modules_of_one_code_are_an_error(make_package: MakePackage) -> None:
    path, name = make_package(
        {
            "ckp001_first": RULE_SOURCE.format(cls="First", code="CKP001"),
            "ckp001_second": RULE_SOURCE.format(cls="Second", code="CKP001"),
        }
    )
    with pytest.raises(RuleDiscoveryError, match=rf"{name}\.ckp001_first and {name}\.ckp001_second both define CKP001"):
        discover_rules(path, name, ("CKP001",))


def test_a_rule_the_codes_do_not_list_is_an_error(make_package: MakePackage) -> None:
    path, name = make_package(
        {
            "ckp001_example": RULE_SOURCE.format(cls="Example", code="CKP001"),
            "ckp002_example": RULE_SOURCE.format(cls="Two", code="CKP002"),
        }
    )
    with pytest.raises(RuleDiscoveryError, match=r"^rule CKP002 not among the registered codes"):
        discover_rules(path, name, ("CKP001",))
