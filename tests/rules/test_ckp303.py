"""CKP303 distributed-checkpoint-misuse: DCP given a module, a positional path, or load()'s
None used."""

from __future__ import annotations

import pytest

from ckptlint.testing import findings


@pytest.mark.parametrize(
    "imports",
    [
        "import torch.distributed.checkpoint as dcp\n",
        "from torch.distributed import checkpoint as dcp\n",
        "import torch\ndcp = torch.distributed.checkpoint\n",
    ],
)
def test_module_passed_as_state_dict(imports: str) -> None:
    src = imports + "def save(model, path):\n    dcp.save(model, checkpoint_id=path)\n"
    (d,) = findings(src, "CKP303")
    row = src.count("\n")
    assert (d.start, d.end) == ((row, 14), (row, 19))
    assert d.message == (
        "`dcp.save()` takes a state dict, but it is given `model`, named like a module (an `nn.Module`): it "
        "fails with AttributeError (no attribute 'items'); pass `{\"model\": model.state_dict()}` or "
        "`get_state_dict(...)` from torch.distributed.checkpoint.state_dict"
    )
    assert d.fix is None


def test_module_built_here_and_from_import() -> None:
    src = (
        "from torch import nn\nfrom torch.distributed.checkpoint import load, save\n"
        "class Net(nn.Module):\n    pass\n"
        "net = Net()\nsave(net, checkpoint_id='ckpt')\nload(state_dict=nn.Linear(2, 2), checkpoint_id='ckpt')\n"
    )
    first, second = findings(src, "CKP303")
    assert "`save()` takes a state dict, but it is given `net`, a module (`Net(...)`)" in first.message
    assert "`load()` takes a state dict, but it is given a module (`nn.Linear(...)`)" in second.message
    assert "(no attribute 'keys')" in second.message


def test_load_return_value_used() -> None:
    src = "import torch.distributed.checkpoint as dcp\nstate = dcp.load(sd, checkpoint_id=path)\n"
    (d,) = findings(src, "CKP303")
    assert (d.start, d.end) == ((2, 9), (2, 41))
    assert d.message.startswith("`dcp.load()` loads in place into the state dict it is given and returns None")
    (d,) = findings("import torch.distributed.checkpoint as dcp\nmodel.load_state_dict(dcp.load(sd, checkpoint_id=p))\n", "CKP303")
    assert d.start == (2, 23)
    (d,) = findings("import torch.distributed.checkpoint as dcp\ndef f():\n    return dcp.load_state_dict(sd, reader)\n", "CKP303")
    assert d.message.startswith("`dcp.load_state_dict()` loads in place")


def test_path_passed_positionally() -> None:
    src = "import torch.distributed.checkpoint as dcp\ndcp.save(sd, f'ckpt/step-{step}')\n"
    (d,) = findings(src, "CKP303")
    assert (d.start, d.end) == ((2, 14), (2, 33))
    assert d.message == (
        "`dcp.save()`: its second positional argument is taken as `storage_writer`, not as the checkpoint path, "
        "and a path there fails with AttributeError (for `save`/`load` wrapped in CheckpointException); "
        "pass the path as `checkpoint_id=` (keyword-only)"
    )
    (d,) = findings("import torch.distributed.checkpoint as dcp\ndcp.load_state_dict(sd, storage_reader=ckpt_dir)\n", "CKP303")
    assert "`storage_reader=` is taken as `storage_reader`" in d.message
    assert "pass a `FileSystemReader(path)`, or use `load(..., checkpoint_id=path)`" in d.message


@pytest.mark.parametrize(
    "src",
    [
        "dcp.save({'model': model.state_dict()}, checkpoint_id=path)\n",
        "dcp.load(state_dict, checkpoint_id=path)\n",
        "dcp.load({'model': model}, checkpoint_id=path)\n",  # Stateful values are supported
        "sd = {'model': model.state_dict()}\ndcp.load(sd, checkpoint_id=path)\n",
        "model = {'model': net.state_dict()}\ndcp.save(model, checkpoint_id=path)\n",
        "dcp.save(model_state_dict, checkpoint_id=path)\n",
        "dcp.save(get_model_state_dict(model), checkpoint_id=path)\n",
        "meta = dcp.save(sd, checkpoint_id=path)\n",
        "fut = dcp.async_save(sd, checkpoint_id=path)\n",
        "dcp.save(sd, dcp.FileSystemWriter(path))\n",
        "dcp.save_state_dict(sd, RemoteFileSystemWriter(path))\n",
        "dcp.load(hf_state_dict, storage_reader=HuggingFaceStorageReader(path=input_dir))\n",
        "pool.submit(lambda: dcp.load(sd, checkpoint_id=path))\n",
        "model.load_state_dict(sd)\n",
    ],
)
def test_correct_dcp_use_is_silent(src: str) -> None:
    assert findings("import torch.distributed.checkpoint as dcp\n" + src, "CKP303") == []


def test_local_functions_named_save_and_load_are_not_dcp() -> None:
    src = "def save(model, path):\n    pass\ndef load(sd, path):\n    return sd\nx = load(model, path)\nsave(model, 'a/b')\n"
    assert findings(src, "CKP303") == []


def test_parameter_annotations_decide_over_names() -> None:
    head = "import torch.distributed.checkpoint as dcp\nfrom torch import nn\n"
    assert findings(head + "def save(model: dict, path):\n    dcp.save(model, checkpoint_id=path)\n", "CKP303") == []
    assert findings(head + "def save(model: 'Mapping[str, Any]', path):\n    dcp.save(model, checkpoint_id=path)\n", "CKP303") == []
    (d,) = findings(head + "def save(state: nn.Module, path):\n    dcp.save(state, checkpoint_id=path)\n", "CKP303")
    assert "it is given `state`, annotated `nn.Module`" in d.message
