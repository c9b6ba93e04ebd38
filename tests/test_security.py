"""ckptlint reads code and configuration as data: it never imports or runs the files it lints
(nor the modules their regions reach), configuration cannot execute anything, and JSON output
escapes whatever a path or message holds."""

from __future__ import annotations

import json
import sys

import pytest

PAYLOAD = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nraise SystemExit('executed')\n"


@pytest.mark.parametrize(
    "args", [("--select", "ALL"), ("--select", "ALL", "--fix", "--unsafe-fixes"), ("--diff", "--unsafe-fixes")]
)
def test_linted_code_is_never_imported_or_run(run_cli, write, tmp_path, args):
    marker = tmp_path / "MARKER"
    write("pkg/__init__.py", PAYLOAD.format(marker=str(marker)))
    write("pkg/layers.py", PAYLOAD.format(marker=str(marker)) + "def block(x):\n    return x\n")
    model = write(
        "pkg/model.py",
        PAYLOAD.format(marker=str(marker))
        + "import torch\nfrom torch.utils.checkpoint import checkpoint\nfrom .layers import block\n"
        "def forward(x):\n    return checkpoint(block, x)\n",
    )
    write("setup.py", PAYLOAD.format(marker=str(marker)))
    write("conftest.py", PAYLOAD.format(marker=str(marker)))
    result = run_cli(*args)
    assert result.exit_code in (0, 1), result.stderr
    assert "pkg/model.py" in result.stdout or "use_reentrant=False" in model.read_text()  # it was linted
    assert not marker.exists()
    assert not {"pkg", "pkg.model", "pkg.layers"} & set(sys.modules)


def test_configuration_is_data_only(run_cli, write, tmp_path):
    marker = tmp_path / "MARKER"
    write("m.py", "from torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)\n")
    config = write(
        "ckptlint.toml",
        f"select = [\"__import__('pathlib').Path({str(marker)!r}).touch()\"]\n",
    )
    result = run_cli(".")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {config}: `select`: unknown rule selector")
    assert not marker.exists()


def test_json_output_escapes_paths_and_messages(run_cli, write, tmp_path):
    name = 'we"ird\\na\nme \u2028 \x1b[31m.py'
    write(name, 'from torch.utils.checkpoint import checkpoint\ncheckpoint(f, x)  # "quoted" \\ \n')
    result = run_cli(".", "--output-format", "json")
    assert result.exit_code == 1
    [record] = json.loads(result.stdout)
    assert record["filename"] == str(tmp_path / name)
    assert record["code"] == "CKP001"
    assert "\x1b" not in result.stdout.replace("\\u001b", "")  # control characters are escaped
