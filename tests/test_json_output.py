"""``--output-format json``: ruff's record shape with real values."""

from __future__ import annotations

import json

IMPORT = "from torch.utils.checkpoint import checkpoint\n"
MESSAGE = (
    "`checkpoint()` without `use_reentrant`: PyTorch warns and silently runs the legacy reentrant "
    "variant; pass `use_reentrant=False` (recommended)"
)


def test_json_records(run_cli, write, tmp_path) -> None:  # noqa: ANN001
    write("pkg/m.py", IMPORT + "y = checkpoint(f, x)\nz = checkpoint(\n    g,\n    y\n)  # noqa: E501\n")
    result = run_cli("--output-format", "json", "pkg")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    filename = str((tmp_path / "pkg" / "m.py").resolve())
    assert records == [
        {
            "cell": None,
            "code": "CKP001",
            "end_location": {"column": 21, "row": 2},
            "filename": filename,
            "fix": {
                "applicability": "unsafe",
                "edits": [
                    {
                        "content": ", use_reentrant=False",
                        "end_location": {"column": 20, "row": 2},
                        "location": {"column": 20, "row": 2},
                    }
                ],
                "message": "Pass `use_reentrant=False`",
            },
            "location": {"column": 5, "row": 2},
            "message": MESSAGE,
            "name": "checkpoint-without-use-reentrant",
            "noqa_row": 2,
            "severity": "warning",
            "url": "https://github.com/ckptlint/ckptlint/blob/main/rules/CKP001.md",
        },
        {
            "cell": None,
            "code": "CKP001",
            "end_location": {"column": 2, "row": 6},
            "filename": filename,
            "fix": {
                "applicability": "unsafe",
                # two insertions at one position, in the order they apply
                "edits": [
                    {"content": ",", "end_location": {"column": 6, "row": 5}, "location": {"column": 6, "row": 5}},
                    {
                        "content": "\n    use_reentrant=False",
                        "end_location": {"column": 6, "row": 5},
                        "location": {"column": 6, "row": 5},
                    },
                ],
                "message": "Pass `use_reentrant=False`",
            },
            "location": {"column": 5, "row": 3},
            "message": MESSAGE,
            "name": "checkpoint-without-use-reentrant",
            "noqa_row": 3,
            "severity": "warning",
            "url": "https://github.com/ckptlint/ckptlint/blob/main/rules/CKP001.md",
        },
    ]


def test_json_safe_fix_and_no_fix(run_cli, write) -> None:  # noqa: ANN001
    write(
        "m.py",
        IMPORT + "a = checkpoint(f, x, mask=m)\nopts = {'debug': False}\nb = checkpoint(f, x, **opts)\n",
    )
    records = json.loads(run_cli("--output-format", "json", "--select", "CKP001", "m.py").stdout)
    assert [(r["location"]["row"], r["fix"] and r["fix"]["applicability"]) for r in records] == [(2, "safe"), (4, None)]


def test_json_empty_list_when_clean(run_cli, write) -> None:  # noqa: ANN001
    write("m.py", IMPORT + "a = checkpoint(f, x, use_reentrant=False)\n")
    result = run_cli("--output-format", "json", "m.py")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


def test_json_from_environment_and_config(run_cli, write) -> None:  # noqa: ANN001
    write("m.py", IMPORT + "a = checkpoint(f, x)\n")
    result = run_cli("m.py", env={"CKPTLINT_OUTPUT_FORMAT": "json"})
    assert json.loads(result.stdout)[0]["code"] == "CKP001"
    write("pyproject.toml", '[tool.ckptlint]\noutput-format = "json"\n')
    result = run_cli("m.py")
    assert json.loads(result.stdout)[0]["code"] == "CKP001"
