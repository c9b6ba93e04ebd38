"""Check a release end to end, as a user would meet it: build the wheel and sdist (``python -m
build``, isolated), ``twine check`` them, install the wheel with the ``server`` and ``runtime``
extras into a fresh virtual environment (no packages of this one), and there run ``ckptlint``
on a sample project, start ``ckptlint server`` and answer its ``initialize``, and run the runtime
helper on a small model; then run the GitHub Action's install and run steps (``action.yml``) as
the runner would. Needs the package index (the build backend, the dependencies); torch is held
at 2.13.0 (``TORCH_INDEX_URL`` names an index for its CPU wheel when the default one would pull
the CUDA build).

Usage: ``python scripts/release_check.py [--keep WORK_FOLDER]``; prints one line per check with
its time and exits 1 when one fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
RUNTIME_SAMPLE = """
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from ckptlint.runtime import assert_checkpointing_equivalent

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        self.use_checkpointing = False
    def forward(self, x):
        if self.use_checkpointing:
            return checkpoint(self.block, x, use_reentrant=False)
        return self.block(x)

def enable(model):
    model.use_checkpointing = True

report = assert_checkpointing_equivalent(Model().train(), torch.randn(4, 8), enable=enable)
print("runtime helper:", type(report).__name__)
"""


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)  # type: ignore[call-overload]


class Checks:
    def __init__(self) -> None:
        self.failed = 0

    def check(self, name: str, ok: bool, started: float, detail: str = "") -> bool:
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({time.monotonic() - started:.1f} s){': ' + detail if detail else ''}", flush=True)
        self.failed += not ok
        return ok


def _lsp_message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _server_answers(ckptlint: Path, cwd: Path) -> tuple[bool, str]:
    """Start ``ckptlint server``, send initialize, shutdown and exit; read the answers."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": cwd.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    proc = subprocess.run(
        [str(ckptlint), "server"], input=b"".join(_lsp_message(m) for m in messages), cwd=cwd, capture_output=True, timeout=120
    )
    answers, data = [], proc.stdout
    while b"\r\n\r\n" in data:
        head, data = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
        answers.append(json.loads(data[:length]))
        data = data[length:]
    initialized = next((a for a in answers if a.get("id") == 1), {})
    name = initialized.get("result", {}).get("serverInfo", {}).get("name", "")
    return proc.returncode == 0 and "capabilities" in initialized.get("result", {}), f"exit {proc.returncode}, serverInfo {name!r}"


def _action_steps(work: Path, project: Path, checks: Checks) -> None:
    """The action's install step (pip install "$GITHUB_ACTION_PATH") and run step, for real."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps = {s["id"]: s for s in action["runs"]["steps"]}
    runner = work / "runner"
    runner.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "VIRTUAL_ENV", "PYTHON"))},
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_PATH": str(runner / "path"),
        "GITHUB_OUTPUT": str(runner / "output"),
        "RUNNER_TEMP": str(runner),
    }
    started = time.monotonic()
    install = _run(["bash", "-e", "-c", steps["install"]["run"]], cwd=project, env={**env, "CKPTLINT_VERSION": ""})
    output = (runner / "output").read_text() if (runner / "output").exists() else ""
    if not checks.check("action: install step", install.returncode == 0, started, output.strip() or install.stderr[-500:]):
        return
    path = (runner / "path").read_text().strip()
    started = time.monotonic()
    env["PATH"] = f"{path}{os.pathsep}{env.get('PATH', '')}"
    ran = _run(["bash", "-e", "-c", steps["run"]["run"]], cwd=project, env={**env, "CKPTLINT_ARGS": "", "CKPTLINT_SRC": "."})
    first = ran.stdout.splitlines()[0] if ran.stdout else ran.stderr[-300:]
    ok = ran.returncode == 1 and first.startswith("::warning file=m.py,line=2")
    checks.check("action: run step", ok, started, f"exit {ran.returncode}: {first}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ckptlint-release-"))
    work.mkdir(parents=True, exist_ok=True)
    checks = Checks()
    try:
        started = time.monotonic()
        dist = work / "dist"
        built = _run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)])
        wheels = sorted(dist.glob("*.whl"))
        detail = built.stderr[-500:] if built.returncode else ""
        if not checks.check("python -m build", built.returncode == 0 and len(wheels) == 1, started, detail):
            return 1
        started = time.monotonic()
        twine = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))])
        checks.check("twine check --strict", twine.returncode == 0, started, twine.stdout.strip().replace("\n", "; "))

        started = time.monotonic()
        venv = work / "venv"
        _run([sys.executable, "-m", "venv", str(venv)])
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        constraints = work / "constraints.txt"
        constraints.write_text("torch==2.13.0\n")
        extra = ["--extra-index-url", os.environ["TORCH_INDEX_URL"]] if os.environ.get("TORCH_INDEX_URL") else []
        installed = _run([*pip, "-c", str(constraints), *extra, f"{wheels[0]}[server,runtime]"])
        detail = installed.stderr[-500:] if installed.returncode else ""
        checks.check("clean venv: pip install wheel[server,runtime]", installed.returncode == 0, started, detail)
        ckptlint = venv / "bin" / "ckptlint"

        project = work / "project"
        project.mkdir()
        (project / "m.py").write_text(SAMPLE)
        started = time.monotonic()
        version = _run([str(ckptlint), "--version"], cwd=project)
        linted = _run([str(ckptlint), "check", "."], cwd=project)
        checks.check(
            "clean venv: ckptlint --version; ckptlint check .",
            version.returncode == 0 and linted.returncode == 1 and "m.py:2:5: CKP001" in linted.stdout,
            started,
            f"{version.stdout.strip()}; exit {linted.returncode}",
        )
        started = time.monotonic()
        ok, detail = _server_answers(ckptlint, project)
        checks.check("clean venv: ckptlint server answers initialize", ok, started, detail)
        started = time.monotonic()
        runtime = _run([str(venv / "bin" / "python"), "-c", RUNTIME_SAMPLE], cwd=project)
        detail = runtime.stdout.strip() if runtime.returncode == 0 else runtime.stderr.strip()[-300:]
        checks.check("clean venv: ckptlint.runtime helper", runtime.returncode == 0, started, detail)

        _action_steps(work, project, checks)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{checks.failed} check{'s' if checks.failed != 1 else ''} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
