"""CKP105 recompute-without-autocast-restore: home-made recompute where autocast can be on.
"""

from __future__ import annotations

import json
from pathlib import Path

from programs import GLM_CHECKPOINT


def _codes(run_cli, *args: str) -> list[tuple[str, str]]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--select", "CKP105", *args)
    return sorted((Path(r["filename"]).name, r["code"]) for r in json.loads(result.stdout))


def test_home_made_recompute_is_reported_whatever_the_rest_of_the_code_base_does(tmp_path: Path, run_cli):
    # GLM, improved-diffusion: fp16 by converting the weights, no autocast today; the
    # implementation is still wrong under autocast, and the message says so. Only the module's
    # own text decides: a file of the package that enters autocast changes nothing.
    (tmp_path / "mpu").mkdir()
    (tmp_path / "mpu" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "mpu" / "random.py").write_text(GLM_CHECKPOINT, encoding="utf-8")
    (tmp_path / "mpu" / "fp16.py").write_text("def convert(model):\n    return model.half()\n", encoding="utf-8")
    assert _codes(run_cli, "--no-cache", ".") == [("random.py", "CKP105")]
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--no-cache", "--select", "CKP105", "mpu/random.py")
    assert "when forward runs under `torch.autocast` (mixed precision)" in json.loads(result.stdout)[0]["message"]
    cache = str(tmp_path / "cache")
    assert _codes(run_cli, "--cache-dir", cache, "mpu/random.py") == [("random.py", "CKP105")]
    (tmp_path / "mpu" / "train.py").write_text(
        "import torch\n\n\ndef train_step(model, x, amp):\n"
        "    with torch.cuda.amp.autocast(enabled=amp):\n        return model(x)\n",
        encoding="utf-8",
    )
    assert _codes(run_cli, "--cache-dir", cache, "mpu/random.py") == [("random.py", "CKP105")]
    assert _codes(run_cli, "--no-cache", "mpu/random.py") == [("random.py", "CKP105")]
