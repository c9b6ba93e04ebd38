"""``ckptlint server``: the real server process driven by a real LSP client (pytest-lsp):
diagnostics on open/change, quick fixes with their applicability, "disable for this line",
configuration from the file's pyproject.toml, and unsaved buffers reached by regions."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from ckptlint.text.source import split_lines

#: CKP001's fix here: unsafe (the variant changes; no fix ever writes use_reentrant=True)
FIX = "Pass `use_reentrant=False` (CKP001) (unsafe fix)"


SOURCE = "from torch.utils.checkpoint import checkpoint\n\n\ndef forward(block, x):\n    return checkpoint(block, x)\n"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "ckptlint", "server"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.ckptlint]\nunsafe-fixes = true\n")
    (tmp_path / "strict").mkdir()
    (tmp_path / "strict" / "pyproject.toml").write_text("[tool.ckptlint]\n")  # unsafe fixes not allowed here
    params = lsp.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri()
    )
    lsp_client.registrations = []  # type: ignore[attr-defined]

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:  # the server asks for a watcher of its configuration
        lsp_client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def _published(client: LanguageClient, uri: str, timeout: float = 60.0) -> list[lsp.Diagnostic]:
    """The diagnostics the server publishes for ``uri`` next (the caller popped the old ones)."""
    for _ in range(int(timeout / 0.02)):
        if uri in client.diagnostics:
            return list(client.diagnostics[uri])
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics published for {uri}")


async def _eventually(client: LanguageClient, uri: str, codes: list[str], timeout: float = 60.0) -> None:
    """Wait until the diagnostics last published for ``uri`` have these codes (documents that
    read an edited one are linted again a moment after the edit)."""
    for _ in range(int(timeout / 0.02)):
        if [d.code for d in client.diagnostics.get(uri, ())] == codes:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{uri}: {[d.code for d in client.diagnostics.get(uri, ())]}, not {codes}")


async def _barrier(client: LanguageClient, uri: str) -> None:
    """A request the server answers only after handling every message sent before it (pygls
    handles them in order, also those ``ckptlint server`` replays after its fast start), so
    every publication those messages caused has arrived when this returns. Without it, a
    replayed publication of an earlier version can be taken for the answer to the last edit."""
    zero = lsp.Position(line=0, character=0)
    await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(start=zero, end=zero),
            context=lsp.CodeActionContext(diagnostics=[], only=[lsp.CodeActionKind.QuickFix]),
        )
    )


async def _open(client: LanguageClient, path: Path, text: str, version: int = 1) -> list[lsp.Diagnostic]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    uri = path.as_uri()
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    await _barrier(client, uri)
    return await _published(client, uri)


async def _change(client: LanguageClient, path: Path, text: str, version: int) -> list[lsp.Diagnostic]:
    uri = path.as_uri()
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await _barrier(client, uri)
    return await _published(client, uri)


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP edits (text of the Basic Multilingual Plane: UTF-16 units are characters)
    from the last to the first; lines end at \\n, \\r\\n and \\r only (LSP 3.17)."""
    lines = split_lines(text, keepends=True)

    def offset(position: lsp.Position) -> int:
        return sum(len(line) for line in lines[: position.line]) + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def _actions(client: LanguageClient, uri: str, diagnostic: lsp.Diagnostic) -> list[lsp.CodeAction]:
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=lsp.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    return [a for a in result or [] if isinstance(a, lsp.CodeAction)]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_diagnostic_quick_fix_and_clean_after_the_edit(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    diagnostics = await _open(client, path, SOURCE)
    assert len(diagnostics) == 1
    d = diagnostics[0]
    assert d.code == "CKP001" and d.source == "ckptlint"
    assert d.severity == lsp.DiagnosticSeverity.Warning
    assert d.range == lsp.Range(start=lsp.Position(line=4, character=11), end=lsp.Position(line=4, character=31))
    assert d.code_description is not None and d.code_description.href.endswith("CKP001.md")

    actions = await _actions(client, path.as_uri(), d)
    titles = [a.title for a in actions]
    assert titles == [FIX, "Disable CKP001 for this line", "ckptlint: fix all auto-fixable problems"]
    assert actions[0].is_preferred is False  # unsafe: never the preferred action
    fix = actions[0]
    assert fix.kind == lsp.CodeActionKind.QuickFix and fix.edit is not None and fix.edit.changes is not None
    fixed = _apply(SOURCE, list(fix.edit.changes[path.as_uri()]))
    assert fixed.splitlines()[4] == "    return checkpoint(block, x, use_reentrant=False)"

    assert await _change(client, path, fixed, 2) == []


@pytest.mark.slow
@pytest.mark.asyncio
async def test_unsafe_fix_needs_the_configuration_and_noqa_action_works(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "strict" / "model.py"
    (d,) = await _open(client, path, SOURCE)
    actions = await _actions(client, path.as_uri(), d)
    titles = [a.title for a in actions]  # unsafe-fixes not set there: no fix offered (never use_reentrant=True)
    assert titles == ["Disable CKP001 for this line"]  # and nothing for "fix all" to apply
    edit = actions[0].edit
    assert edit is not None and edit.changes is not None
    silenced = _apply(SOURCE, list(edit.changes[path.as_uri()]))
    assert silenced.splitlines()[4] == "    return checkpoint(block, x)  # noqa: CKP001"
    assert await _change(client, path, silenced, 2) == []
    # saving re-reads the configuration: with unsafe fixes allowed, the fix is offered
    (tmp_path / "strict" / "pyproject.toml").write_text("[tool.ckptlint]\nunsafe-fixes = true\n")
    await _change(client, path, SOURCE, 3)
    client.diagnostics.pop(path.as_uri(), None)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=path.as_uri())))
    (d,) = await _published(client, path.as_uri())
    actions = await _actions(client, path.as_uri(), d)
    assert [a.title for a in actions][:2] == [FIX, "Disable CKP001 for this line"]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_excluded_files_get_no_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "vendored").mkdir()
    (tmp_path / "vendored" / "pyproject.toml").write_text('[tool.ckptlint]\nextend-exclude = ["third_party"]\n')
    assert await _open(client, tmp_path / "vendored" / "third_party" / "m.py", SOURCE) == []
    assert len(await _open(client, tmp_path / "vendored" / "own.py", SOURCE)) == 1


@pytest.mark.slow
@pytest.mark.asyncio
async def test_unsaved_buffer_of_another_module_takes_precedence(client: LanguageClient, tmp_path: Path) -> None:
    blocks = tmp_path / "pkg" / "blocks.py"
    (tmp_path / "pkg" / "__init__.py").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    on_disk = "import torch\n\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    assert await _open(client, blocks, on_disk) == []
    unsaved = on_disk.replace("import torch\n", "import random\n\nimport torch\n").replace(
        "return x * 2", "return x * random.random()"
    )
    assert await _change(client, blocks, unsaved, 2) == []  # nothing checkpoints it yet
    model = tmp_path / "pkg" / "model.py"
    text = (
        "from torch.utils.checkpoint import checkpoint\n\nfrom pkg.blocks import Block\n\n\n"
        "def forward(x):\n    return checkpoint(Block(), x, use_reentrant=False)\n"
    )
    client.diagnostics.pop(blocks.as_uri(), None)
    assert await _open(client, model, text) == []
    found = await _published(client, blocks.as_uri())
    assert [d.code for d in found] == ["CKP103"]  # from the buffer: the file on disk has no random
    assert found[0].range.start.line == 7


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_reached_module_changed_on_disk_or_in_a_buffer_is_read_again(client: LanguageClient, tmp_path: Path) -> None:
    # the server keeps the modules a region reached between edits: never once they changed
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    blocks = tmp_path / "pkg" / "blocks.py"
    quiet = "import torch\n\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    noisy = quiet.replace("import torch\n", "import random\n\nimport torch\n").replace("x * 2", "x * random.random()")
    blocks.write_text(quiet)
    model = tmp_path / "pkg" / "model.py"
    text = (
        "from torch.utils.checkpoint import checkpoint\n\nfrom pkg.blocks import Block\n\n\n"
        "def forward(x):\n    return checkpoint(Block(), x, use_reentrant=False)\n"
    )
    assert await _open(client, model, text) == []
    blocks.write_text(noisy)  # saved by another program: the client's watcher reports it
    client.diagnostics.pop(blocks.as_uri(), None)
    event = lsp.FileEvent(uri=blocks.as_uri(), type=lsp.FileChangeType.Changed)
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[event]))
    await _barrier(client, model.as_uri())
    assert [d.code for d in await _published(client, blocks.as_uri())] == ["CKP103"]
    # then opened and edited back, unsaved (noisy on disk): the next edit of model.py reads the buffer
    assert [d.code for d in await _open(client, blocks, noisy)] == ["CKP103"]  # placed there by model.py's lint
    # the edit lints model.py again (it read blocks.py): its finding in blocks.py goes
    await _change(client, blocks, quiet, 2)
    await _eventually(client, blocks.as_uri(), [])
    assert await _change(client, model, text + "\n", 2) == []
    assert list(client.diagnostics[blocks.as_uri()]) == []


#: pkg/utils.py: a function that only calls its argument, and the helper that checkpoints it
PLAIN_RUN = "def run_checkpoint(fn, *args, **kwargs):\n    return fn(*args, **kwargs)\n"
HELPER_RUN = "from torch.utils.checkpoint import checkpoint\n\n\n" + PLAIN_RUN.replace("return fn(", "return checkpoint(fn, ")
#: pkg/model.py: its caller (CKP001 at 5:12 when the helper checkpoints without use_reentrant)
CALLER = "from pkg.utils import run_checkpoint\n\n\ndef go(f, x):\n    return run_checkpoint(f, x)\n"


def _package(root: Path) -> tuple[Path, Path]:
    """``pkg/utils.py`` (not written) and ``pkg/model.py`` of a package made under ``root``."""
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    return root / "pkg" / "utils.py", root / "pkg" / "model.py"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_an_unsaved_helper_makes_sites_and_its_edits_relint_the_callers(client: LanguageClient, tmp_path: Path) -> None:
    utils, model = _package(tmp_path)
    assert await _open(client, utils, PLAIN_RUN) == []
    # unsaved: the helper checkpoints its parameter (the file on disk does not)
    assert await _change(client, utils, HELPER_RUN, 2) == []
    found = await _open(client, model, CALLER)
    assert [(d.code, d.range.start.line) for d in found] == [("CKP001", 4)]
    # the helper's next unsaved edit lints model.py again, without an edit of model.py
    await _change(client, utils, HELPER_RUN.replace("**kwargs)\n", "use_reentrant=False, **kwargs)\n"), 3)
    await _eventually(client, model.as_uri(), [])
    await _change(client, utils, HELPER_RUN, 4)
    await _eventually(client, model.as_uri(), ["CKP001"])
    # closed unsaved: model.py reads the file on disk again, where nothing checkpoints
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=utils.as_uri())))
    await _eventually(client, model.as_uri(), [])


@pytest.mark.slow
@pytest.mark.asyncio
async def test_opening_a_changed_buffer_relints_its_readers(client: LanguageClient, tmp_path: Path) -> None:
    # an editor restores an unsaved buffer after its readers were linted from the file on disk
    utils, model = _package(tmp_path)
    utils.write_text(PLAIN_RUN)
    assert await _open(client, model, CALLER) == []
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=utils.as_uri(), language_id="python", version=1, text=HELPER_RUN)
        )
    )
    await _eventually(client, model.as_uri(), ["CKP001"])


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_path_with_a_space_is_linted_after_an_edit(client: LanguageClient, tmp_path: Path) -> None:
    # the client escapes the space (my%20project); pygls keeps the document unescaped
    model = tmp_path / "my project" / "model.py"
    assert "%20" in model.as_uri()
    text = "from torch.utils.checkpoint import checkpoint\n\n\ndef forward(block, x):\n    return checkpoint(block, x)\n"
    assert [d.code for d in await _open(client, model, text)] == ["CKP001"]
    assert await _change(client, model, text.replace("x)\n", "x, use_reentrant=False)\n"), 2) == []
    assert await _change(client, model, text, 3) != []


def test_an_open_helper_module_is_scanned_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    from ckptlint.checkpoint.sites.ast_helper_calls import _may_define_helper

    helper_calls = inspect.getmodule(_may_define_helper)  # the module that scans the bytes
    assert helper_calls is not None
    scans: list[int] = []
    real = helper_calls._helper_names
    monkeypatch.setattr(helper_calls, "_helper_names", lambda raw: scans.append(len(raw)) or real(raw))
    text = "import torch.utils.checkpoint as cp\n\n\ndef run(fn, *args):\n    return cp.checkpoint(fn, *args)\n"
    for _ in range(50):  # a lint asks once per call site
        assert helper_calls._may_define_helper(Path("/p/utils.py"), "run", "".join([text]))
    assert len(scans) == 1
    assert not helper_calls._may_define_helper(Path("/p/utils.py"), "run", text.replace("cp.checkpoint(fn", "fn("))
    assert len(scans) == 2


def test_typing_in_a_reached_module_lints_its_readers_once_it_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    from ckptlint.server import lsp as server_lsp

    server = server_lsp.CkptlintLanguageServer()
    linted: list[tuple[str, float]] = []
    monkeypatch.setattr(server, "lint_dependents", lambda uri: linted.append((uri, asyncio.get_running_loop().time())))

    async def type_then_pause() -> float:
        for _ in range(10):  # ten edits in a row
            server.schedule_dependents("file:///p/utils.py")
        server.schedule_dependents("file:///p/other.py")
        last = asyncio.get_running_loop().time()
        await asyncio.sleep(server_lsp.DEPENDENTS_DELAY * 3)
        return last

    last = asyncio.run(type_then_pause())
    assert sorted(uri for uri, _ in linted) == ["file:///p/other.py", "file:///p/utils.py"]  # once each
    assert all(at >= last + server_lsp.DEPENDENTS_DELAY * 0.9 for _, at in linted)
    assert server.dependents_due == {}

    async def edit_then_save() -> None:  # a save lints every open document: nothing left pending
        server.schedule_dependents("file:///p/utils.py")
        server.lint_open_documents()
        await asyncio.sleep(server_lsp.DEPENDENTS_DELAY * 3)

    linted.clear()
    asyncio.run(edit_then_save())
    assert linted == [] and server.dependents_due == {}


def test_server_without_the_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from ckptlint import server

    monkeypatch.delitem(sys.modules, "ckptlint.server.lsp", raising=False)
    monkeypatch.setitem(sys.modules, "pygls", None)  # `import pygls` fails as when it is not installed
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    assert server.main([]) == 2
    assert capsys.readouterr().err == (
        'error: `ckptlint server` needs the `server` extra (pygls), which is not installed; '
        'install it with: pip install "ckptlint[server]"\n'
    )


def test_the_install_command_names_the_extra_that_brings_pygls() -> None:
    import re

    from ckptlint import server

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: tomli, a dependency there
        import tomli as tomllib

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for text in (server.MISSING, server.USAGE):
        named = re.findall(r"ckptlint\[(\w+)\]", text)
        assert named == ["server"]
        assert {re.split(r"[<>=!~ ]", r)[0] for r in extras[named[0]]} == {"pygls", "lsprotocol"}


def test_server_command_without_pygls_exits_with_the_install_command(run_process, tmp_path: Path) -> None:
    # a child process in which `import pygls` fails as in an environment without the extra
    hidden = tmp_path / "hide"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text("import sys\n\nsys.modules['pygls'] = None\n")
    root = Path(__file__).resolve().parents[2]
    result = run_process("server", cwd=tmp_path, env={"PYTHONPATH": f"{hidden}{os.pathsep}{root}"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        'error: `ckptlint server` needs the `server` extra (pygls), which is not installed; '
        'install it with: pip install "ckptlint[server]"\n'
    )


def test_server_rejects_unknown_arguments_and_has_help(run_cli) -> None:
    result = run_cli("server", "--tcp")
    assert result.exit_code == 2
    assert result.stderr == "error: `ckptlint server` takes only --stdio, not --tcp\n"
    shown = run_cli("server", "--help")
    assert shown.exit_code == 0 and shown.stdout.startswith("Usage: ckptlint server [--stdio]\n")


def test_columns_in_each_position_encoding() -> None:
    from ckptlint.server.lsp import _units

    line = 'y = "\U0001F600é"; checkpoint(f, x)'
    column = line.index("checkpoint") + 1  # ckptlint's 1-based character column
    assert _units(line, column, "utf-32") == column - 1
    assert _units(line, column, "utf-16") == column  # the emoji is two UTF-16 units
    assert _units(line, column, "utf-8") == column + 3  # four bytes and two bytes


@pytest.mark.slow
@pytest.mark.asyncio
async def test_range_after_an_astral_character_is_in_utf16_units(client: LanguageClient, tmp_path: Path) -> None:
    text = SOURCE.replace("    return checkpoint(block, x)", '    s = "\U0001F600"; return checkpoint(block, x)')
    (d,) = await _open(client, tmp_path / "emoji.py", text)
    assert d.range.start == lsp.Position(line=4, character=len('    s = "\U0001F600"; return ') + 1)


def _raw_session(env: dict[str, str], capabilities: dict) -> tuple[dict, dict, list[dict]]:
    """Drive ``ckptlint server`` with raw JSON-RPC: (initialize result, first diagnostics,
    messages up to the shutdown response)."""
    import os
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-m", "ckptlint", "server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **env},
    )

    def send(message: dict) -> None:
        body = json.dumps(message).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        proc.stdin.flush()

    def read() -> dict:
        length = 0
        while (line := proc.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length"):
                length = int(line.split(b":")[1])
        return json.loads(proc.stdout.read(length))

    try:
        params = {"processId": None, "rootUri": None, "capabilities": capabilities}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        initialized = read()
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        document = {"uri": "file:///nonexistent/m.py", "languageId": "python", "version": 1, "text": SOURCE}
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}})
        first = read()
        send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        rest = []
        while (message := read()).get("id") != 2:
            rest.append(message)
        send({"jsonrpc": "2.0", "method": "exit"})
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return initialized["result"], first, rest


@pytest.mark.slow
@pytest.mark.parametrize("encodings", [None, ["utf-8", "utf-16"]])
def test_fast_start_answers_as_pygls_does(encodings: list[str] | None) -> None:
    capabilities = {"general": {"positionEncodings": encodings}} if encodings else {}
    fast = _raw_session({}, capabilities)
    plain = _raw_session({"CKPTLINT_SERVER_FAST_START": "0"}, capabilities)
    assert fast[0]["capabilities"] == plain[0]["capabilities"]
    assert fast[1] == plain[1]  # the same first diagnostics
    assert fast[1]["params"]["diagnostics"][0]["code"] == "CKP001"
    assert fast[2] == [plain[1]]  # pygls publishes them again after the hand-over, nothing else


# a form feed or U+2028 inside a line is no line break for LSP (str.splitlines says it is)
PAGED = "from torch.utils.checkpoint import checkpoint\n\x0c\n# see \u2028 below\ndef forward(fn, x):\n    return checkpoint(fn, x)\n"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_positions_quick_fix_and_noqa_with_form_feed_and_u2028(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "paged.py"
    (d,) = await _open(client, path, PAGED)
    assert d.range == lsp.Range(start=lsp.Position(line=4, character=11), end=lsp.Position(line=4, character=28))
    actions = {a.title: a for a in await _actions(client, path.as_uri(), d)}
    fix = actions["Pass `use_reentrant=False` (CKP001) (unsafe fix)"]
    assert fix.edit is not None and fix.edit.changes is not None
    fixed = _apply(PAGED, list(fix.edit.changes[path.as_uri()]))
    assert fixed == PAGED.replace("checkpoint(fn, x)\n", "checkpoint(fn, x, use_reentrant=False)\n")
    silence = actions["Disable CKP001 for this line"]
    assert silence.edit is not None and silence.edit.changes is not None
    silenced = _apply(PAGED, list(silence.edit.changes[path.as_uri()]))
    assert silenced == PAGED.replace("checkpoint(fn, x)\n", "checkpoint(fn, x)  # noqa: CKP001\n")
    assert await _change(client, path, silenced, 2) == []


@pytest.mark.slow
@pytest.mark.asyncio
async def test_incremental_change_after_a_form_feed_lands_on_its_line(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "paged.py"
    (d,) = await _open(client, path, PAGED)
    uri = path.as_uri()
    client.diagnostics.pop(uri, None)
    at = lsp.Position(line=4, character=d.range.end.character - 1)  # before the call's closing parenthesis
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangePartial(range=lsp.Range(start=at, end=at), text=", use_reentrant=False")],
        )
    )
    await _barrier(client, uri)
    assert await _published(client, uri) == []  # the edit made the call explicit: it landed on line 5


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_document_over_the_size_limit_says_it_was_not_linted(client: LanguageClient, tmp_path: Path) -> None:
    big = SOURCE + "x = 1  # " + "a" * 70 + "\n" * 1 + ("y = 2  # " + "b" * 70 + "\n") * 44_000  # 3.4 MiB
    (d,) = await _open(client, tmp_path / "big.py", big)
    assert d.code == "CKP902" and d.message.startswith("too large to lint (3.")
    assert d.range.start == lsp.Position(line=0, character=0)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_code_action_on_a_document_never_opened_is_empty(client: LanguageClient, tmp_path: Path) -> None:
    zero = lsp.Position(line=0, character=0)
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=(tmp_path / "never.py").as_uri()),
            range=lsp.Range(start=zero, end=zero),
            context=lsp.CodeActionContext(diagnostics=[]),
        )
    )
    assert result is not None and len(result) == 0  # an answer, not an error


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["didSave", "didChangeWatchedFiles"])
async def test_a_changed_pyproject_lints_open_documents_again(client: LanguageClient, tmp_path: Path, how: str) -> None:
    path = tmp_path / "strict" / "model.py"
    assert len(await _open(client, path, SOURCE)) == 1
    config = tmp_path / "strict" / "pyproject.toml"
    config.write_text('[tool.ckptlint]\nignore = ["CKP001"]\n')
    client.diagnostics.pop(path.as_uri(), None)
    if how == "didSave":
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=config.as_uri(), language_id="toml", version=1, text=config.read_text())
            )
        )
        client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=config.as_uri())))
    else:
        event = lsp.FileEvent(uri=config.as_uri(), type=lsp.FileChangeType.Changed)
        client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[event]))
    await _barrier(client, path.as_uri())
    assert await _published(client, path.as_uri()) == []
    assert [r.method for r in client.registrations] == ["workspace/didChangeWatchedFiles"]  # type: ignore[attr-defined]


IMPORT = "from torch.utils.checkpoint import checkpoint\n"


@pytest.mark.parametrize(
    ("text", "row", "new_line"),
    [
        (IMPORT + 'a = checkpoint(f, """x\ny""")\n', 3, 'y""")  # noqa: CKP001'),
        (IMPORT + "b = checkpoint(f, \\\n    x)\n", 3, "    x)  # noqa: CKP001"),
        (IMPORT + "c = checkpoint(f, x)\n", 2, "c = checkpoint(f, x)  # noqa: CKP001"),
    ],
)
def test_server_disable_for_this_line_uses_the_noqa_line(tmp_path, text, row, new_line) -> None:
    # the server's "Disable CKP001 for this line" replaced the finding's first line by itself
    # (no comment) when that line ends inside a triple-quoted string or with a backslash
    pytest.importorskip("pygls")
    from ckptlint.config.files import CliOverrides, SettingsResolver
    from ckptlint.lint.linter import FileLinter
    from ckptlint.server.lsp import CkptlintLanguageServer, _Lines

    path = tmp_path / "m.py"
    path.write_text(text)
    settings = SettingsResolver(CliOverrides(), cwd=tmp_path).for_path(path)
    (d,) = FileLinter().lint(str(path), text.encode(), settings).diagnostics
    edit = CkptlintLanguageServer._noqa_edit(d, text, _Lines(text))
    assert edit is not None
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.line) == (row - 1, 0, row - 1)
    assert edit.new_text == new_line


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_broken_configuration_once_fixed_lints_the_open_documents_again(client: LanguageClient, tmp_path: Path) -> None:
    """A document opened under a broken pyproject.toml is linted once it is fixed: when the
    client's watcher reports the change, and when the fixed file is saved in the editor."""
    config = tmp_path / "later" / "pyproject.toml"
    config.parent.mkdir()
    path, uri = config.parent / "m.py", (config.parent / "m.py").as_uri()
    elsewhere = (tmp_path / "never_opened.py").as_uri()  # a barrier that lints nothing itself
    for notice in ("watched", "saved"):
        config.write_text("[tool.ckptlint]\nbogus = 1\n")
        client.messages.clear()
        if notice == "watched":
            path.write_text(SOURCE)
            client.text_document_did_open(
                lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE))
            )
        else:
            client.workspace_did_change_watched_files(
                lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=config.as_uri(), type=lsp.FileChangeType.Changed)])
            )
        await _barrier(client, elsewhere)
        assert [m.message.split(": ", 2)[-1][:25] for m in client.messages] == ["unknown key `tool.ckptlin"]
        client.diagnostics.pop(uri, None)
        config.write_text("[tool.ckptlint]\n")
        if notice == "watched":
            event = lsp.FileEvent(uri=config.as_uri(), type=lsp.FileChangeType.Changed)
            client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[event]))
        else:
            client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=config.as_uri())))
        await _barrier(client, elsewhere)
        assert [d.code for d in await _published(client, uri)] == ["CKP001"], notice
