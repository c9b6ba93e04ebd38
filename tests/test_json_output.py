"""``--output-format json``: ruff's record shape with real values."""

from __future__ import annotations

import json

IMPORT = "from torch.utils.checkpoint import checkpoint\n"


def test_json_safe_fix_and_no_fix(run_cli, write) -> None:
    write(
        "m.py",
        IMPORT + "a = checkpoint(f, x, mask=m)\nopts = {'debug': False}\nb = checkpoint(f, x, **opts)\n",
    )
    records = json.loads(run_cli("--output-format", "json", "--select", "CKP001", "m.py").stdout)
    assert [(r["location"]["row"], r["fix"] and r["fix"]["applicability"]) for r in records] == [(2, "safe"), (4, None)]


def test_json_empty_list_when_clean(run_cli, write) -> None:
    write("m.py", IMPORT + "a = checkpoint(f, x, use_reentrant=False)\n")
    result = run_cli("--output-format", "json", "m.py")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


def test_json_from_environment_and_config(run_cli, write) -> None:
    write("m.py", IMPORT + "a = checkpoint(f, x)\n")
    result = run_cli("m.py", env={"CKPTLINT_OUTPUT_FORMAT": "json"})
    assert json.loads(result.stdout)[0]["code"] == "CKP001"
    write("pyproject.toml", '[tool.ckptlint]\noutput-format = "json"\n')
    result = run_cli("m.py")
    assert json.loads(result.stdout)[0]["code"] == "CKP001"
