"""The documentation stays true: every relative link of README.md, docs/, ARCHITECTURE.md and
rules/ points to a file that exists (and to a heading of it, for an anchor); every command
shown in a ``console`` block of README.md or docs/ runs, exits as the block says (``# exit N``
after the command, else 0) and prints what the block shows (``...`` stands for any text); and
the configuration and YAML examples are valid."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ckptlint.config.files import load_config

ROOT = Path(__file__).resolve().parent.parent

#: The pages whose relative links must resolve.
LINKED_PAGES = sorted(
    [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "rules").glob("*.md")]
)
#: The pages whose ``console`` commands are run.
COMMAND_PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

_EXIT_COMMENT = re.compile(r"\s+#\s*exit (?P<code>\d+)$")


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@cache
def _tokens(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))


def _inline_text(token: Token) -> str:
    return "".join(child.content for child in token.children or () if child.type in ("text", "code_inline"))


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation other than ``-`` and ``_``
    dropped, each space a ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file's headings (a repeated heading gets ``-1``, ``-2``...)."""
    tokens = _tokens(path)
    seen: dict[str, int] = {}
    found = set()
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type != "heading_open":
            continue
        slug = github_slug(_inline_text(inline))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(found)


def links(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, href)`` of every Markdown link and image of a file (not those in code)."""
    for token in _tokens(path):
        for child in token.children or ():
            href = child.attrs.get("href") if child.type == "link_open" else child.attrs.get("src") if child.type == "image" else None
            if isinstance(href, str):
                yield (token.map[0] + 1 if token.map else 0), href


def _broken_link(page: Path, href: str) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.IGNORECASE):
        return None  # a URL (https:, mailto:); not fetched
    target, _, anchor = href.partition("#")
    path = (page.parent / unquote(target)).resolve() if target else page
    if not path.exists():
        return f"{target} does not exist"
    if ROOT not in path.parents and path != ROOT:
        return f"{target} lies outside the repository"
    if anchor:
        if path.suffix != ".md":
            return f"#{anchor}: anchors are checked in Markdown files only"
        if anchor not in anchors(path):
            return f"{_relative(path)} has no heading #{anchor}"
    return None


@pytest.mark.parametrize("page", LINKED_PAGES, ids=_relative)
def test_relative_links_point_to_existing_files_and_headings(page: Path) -> None:
    broken = [f"{_relative(page)}:{line}: {href}: {why}" for line, href in links(page) if (why := _broken_link(page, href))]
    assert broken == []


def test_the_link_check_sees_links_anchors_and_breakage() -> None:
    readme = ROOT / "README.md"
    hrefs = [href for _, href in links(readme)]
    assert "docs/usage.md" in hrefs and "rules/CKP001.md" in hrefs
    assert "memory-and-time-measure-compare_memory" in anchors(ROOT / "docs" / "runtime-block.md")
    assert _broken_link(readme, "docs/usage.md#exit-codes") is None
    assert _broken_link(readme, "docs/usage.md#no-such-heading") == "docs/usage.md has no heading #no-such-heading"
    assert _broken_link(readme, "docs/missing.md") == "docs/missing.md does not exist"
    assert _broken_link(readme, "https://example.org/x") is None


@dataclass(frozen=True)
class ShownCommand:
    """A command of a ``console`` block, its exit code and the output shown after it."""

    where: str
    command: str
    exit_code: int
    output: tuple[str, ...]


def shown_commands() -> list[ShownCommand]:
    """Every ``$ command`` of the ``console`` blocks of README.md and docs/, once each."""
    found: list[tuple[str, str, int, list[str]]] = []
    for page in COMMAND_PAGES:
        for token in _tokens(page):
            if token.type != "fence" or token.info.strip() != "console":
                continue
            first_line = token.map[0] + 2 if token.map else 0
            for offset, line in enumerate(token.content.splitlines()):
                where = f"{_relative(page)}:{first_line + offset}"
                if line.startswith("$ "):
                    match = _EXIT_COMMENT.search(line)
                    command = line[2 : match.start() if match else None]
                    found.append((where, command, int(match.group("code")) if match else 0, []))
                elif offset == 0:
                    raise AssertionError(f"{where}: a console block starts with `$ command`")
                else:
                    found[-1][3].append(line)
    unique: dict[tuple[str, int, tuple[str, ...]], ShownCommand] = {}
    for where, command, exit_code, output in found:
        shown = ShownCommand(where, command, exit_code, tuple(output))
        unique.setdefault((command, exit_code, shown.output), shown)
    return list(unique.values())


def output_pattern(lines: tuple[str, ...]) -> re.Pattern[str]:
    """A line ``...`` stands for any lines (none included); ``...`` in a line for any text."""
    parts = []
    for line in lines:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(piece) for piece in line.rstrip().split("...")) + r"\n")
    return re.compile("".join(parts))


def _argv(command: str) -> list[str]:
    words = shlex.split(command)
    if words[0] == "ckptlint":
        # the console script of this environment, as a user runs it (its --help names `ckptlint`)
        script = shutil.which("ckptlint", path=str(Path(sys.executable).parent)) or shutil.which("ckptlint")
        assert script is not None, "the ckptlint command is not installed (pip install -e .)"
        return [script, *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    raise AssertionError(f"`{command}`: a console block shows ckptlint or python commands only (use `bash` for others)")


def _environment(cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CKPTLINT_", "GITHUB_"))}
    env.update(CKPTLINT_CACHE_DIR=str(cache_dir), NO_COLOR="1", COLUMNS="100")
    return env


COMMANDS = shown_commands()


def test_the_docs_show_the_cheap_commands() -> None:
    shown = {c.command for c in COMMANDS}
    for expected in (
        "ckptlint --help",
        "ckptlint --version",
        "ckptlint --list-rules",
        "ckptlint --explain CKP001",
        "ckptlint --show-settings docs/examples/model.py",
        "ckptlint --show-sites docs/examples/model.py",
        "ckptlint docs/examples/model.py",
        "python -m ckptlint.docs --check",
    ):
        assert expected in shown


@pytest.mark.slow
@pytest.mark.parametrize("shown", COMMANDS, ids=[f"{c.where} {c.command}" for c in COMMANDS])
def test_shown_command_exits_and_prints_as_documented(shown: ShownCommand, tmp_path: Path) -> None:
    proc = subprocess.run(
        _argv(shown.command), cwd=ROOT, env=_environment(tmp_path), capture_output=True, text=True, timeout=120
    )
    printed = "".join(line.rstrip() + "\n" for line in (proc.stdout + proc.stderr).splitlines())
    assert proc.returncode == shown.exit_code, f"{shown.where}: `{shown.command}` exited {proc.returncode}\n{printed}"
    assert output_pattern(shown.output).fullmatch(printed), f"{shown.where}: `{shown.command}` printed\n{printed}"


def test_output_pattern_ellipses() -> None:
    pattern = output_pattern(("Usage: x", "...", "end ... here"))
    assert pattern.fullmatch("Usage: x\nend it here\n")
    assert pattern.fullmatch("Usage: x\na\nb\nend  here\n")
    assert not pattern.fullmatch("Usage: y\nend here\n")


def _fences(language: str) -> Iterator[tuple[str, str]]:
    for page in COMMAND_PAGES:
        for token in _tokens(page):
            if token.type == "fence" and token.info.strip() == language:
                yield f"{_relative(page)}:{token.map[0] + 1 if token.map else 0}", token.content


def test_configuration_examples_are_valid(tmp_path: Path) -> None:
    checked = []
    for where, text in _fences("toml"):
        if "[tool.ckptlint]" not in text:
            continue
        path = tmp_path / "pyproject.toml"
        path.write_text(text, encoding="utf-8")
        raw = load_config(path)  # raises ConfigError on an unknown key, code or value
        assert raw.values, where
        checked.append(where)
    assert any(w.startswith("README.md") for w in checked) and any(w.startswith("docs/configuration.md") for w in checked)


def test_yaml_examples_parse() -> None:
    parsed = [(where, yaml.safe_load(text)) for where, text in _fences("yaml")]
    assert len(parsed) >= 2
    for where, data in parsed:
        assert isinstance(data, dict), where
