"""CKP001 at ``x.gradient_checkpointing_enable()`` where ``x`` is not a Hugging Face model: a
class of the tree with its own method (no ``gradient_checkpointing_kwargs``), reached directly,
through a DeepSpeed engine (which forwards the attributes it does not have to its module), as
an attribute set in ``__init__`` from a constructor argument, or a vendored model of the format
before 4.35 (``_set_gradient_checkpointing(self, module, value=False)``). The advised keyword
raises TypeError there (or is ignored), and the call inside the class's own method is reported
already. A receiver only partly known stays reported."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ckptlint.testing import located

# the shape of DeepSpeed-Chat's critic: a reward model of the project wraps a transformers model
REWARD_MODEL = """\
    import deepspeed
    from torch import nn
    from transformers import AutoModel


    class RewardModel(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.rwtransformer = base

        def gradient_checkpointing_enable(self):
            self.rwtransformer.gradient_checkpointing_enable()


"""


def _reward(body: str) -> str:
    return textwrap.dedent(REWARD_MODEL) + textwrap.dedent(body)


def test_the_project_class_called_directly_keeps_only_the_call_inside_its_method() -> None:
    source = _reward(
        """\
        def build(name):
            critic = RewardModel(AutoModel.from_pretrained(name))
            critic.gradient_checkpointing_enable()
        """
    )
    assert located(source) == [(12, "CKP001")]


def test_a_deepspeed_engine_forwards_the_call_to_the_project_class() -> None:
    # deepspeed/runtime/engine.py DeepSpeedEngine.__getattr__ (0.19.6): an attribute the engine
    # does not have is the module's; initialize returns (engine, optimizer, dataloader, scheduler)
    source = _reward(
        """\
        from deepspeed import initialize


        def build(args, name, ds_config):
            critic = RewardModel(AutoModel.from_pretrained(name))
            engine, *_ = deepspeed.initialize(model=critic, config=ds_config)
            engine.gradient_checkpointing_enable()
            model_engine, optimizer, _, scheduler = deepspeed.initialize(args=args, model=critic)
            model_engine.gradient_checkpointing_enable()
            deepspeed.initialize(args, critic)[0].gradient_checkpointing_enable()
            imported, *_ = initialize(model=critic)
            imported.gradient_checkpointing_enable()
            imported.module.gradient_checkpointing_enable()
        """
    )
    assert located(source) == [(12, "CKP001")]


def test_an_engine_around_a_hugging_face_or_unknown_model_stays_reported() -> None:
    source = _reward(
        """\
        def build(name, model, ds_config):
            hf, *_ = deepspeed.initialize(model=AutoModel.from_pretrained(name), config=ds_config)
            hf.gradient_checkpointing_enable()
            unknown, *_ = deepspeed.initialize(model=model, config=ds_config)
            unknown.gradient_checkpointing_enable()
        """
    )
    assert located(source) == [(12, "CKP001"), (17, "CKP001"), (19, "CKP001")]


def test_an_attribute_set_from_a_constructor_argument() -> None:
    source = _reward(
        """\
        class Critic(nn.Module):
            def __init__(self, reward, head):
                super().__init__()
                self.reward = reward
                self.head = head


        def build(name):
            critic = Critic(RewardModel(AutoModel.from_pretrained(name)), AutoModel.from_pretrained(name))
            critic.reward.gradient_checkpointing_enable()
            critic.head.gradient_checkpointing_enable()
        """
    )
    assert located(source) == [(12, "CKP001"), (25, "CKP001")]


def test_a_model_only_partly_known_stays_reported() -> None:
    # the name's bindings are not ordered: the model may be the transformers model itself, or
    # what a wrapper's attribute holds; each unknown part counts
    source = _reward(
        """\
        def build(name, reward, unwrap):
            model = AutoModel.from_pretrained(name)
            if reward:
                model = RewardModel(model)
            model.gradient_checkpointing_enable()
            critic = RewardModel(AutoModel.from_pretrained(name))
            if unwrap:
                critic = critic.rwtransformer
            critic.gradient_checkpointing_enable()
            loaded = load(name, reward)
            loaded.gradient_checkpointing_enable()


        def load(name, reward):
            if reward:
                return RewardModel(AutoModel.from_pretrained(name))
            return AutoModel.from_pretrained(name)
        """
    )
    assert located(source) == [(12, "CKP001"), (19, "CKP001"), (23, "CKP001"), (25, "CKP001")]


def test_a_model_passed_through_helpers_that_return_it() -> None:
    # DeepSpeed-Chat: `critic_model = convert_linear_layer_to_lora(critic_model, ...)` under flags
    source = _reward(
        """\
        def convert(model, dim):
            return model


        def build(name, lora_dim, only_lora):
            critic = RewardModel(AutoModel.from_pretrained(name))
            if lora_dim > 0:
                critic = convert(critic, lora_dim)
                if only_lora:
                    critic = convert(critic, 0)
                    critic = convert(critic, 1)
            engine, *_ = deepspeed.initialize(model=critic)
            engine.gradient_checkpointing_enable()
        """
    )
    assert located(source) == [(12, "CKP001")]


def _project(tmp_path: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")


def _rows(run_cli, *paths: str) -> list[tuple[str, str, int]]:
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--no-cache", *paths)
    assert result.exit_code == 0, result.stderr
    return sorted((Path(r["filename"]).name, r["code"], r["location"]["row"]) for r in json.loads(result.stdout))


# DeepSpeed-VisualChat's shape: a vision-language model of the project holds a vendored LLaMA
# of the format before 4.35 (set from a constructor argument), built by a helper of another
# module, and is trained through a DeepSpeed engine
VENDORED = {
    "vl/__init__.py": "",
    "vl/modeling_llama.py": """\
        from transformers import PreTrainedModel


        class LlamaPreTrainedModel(PreTrainedModel):
            supports_gradient_checkpointing = True

            def _set_gradient_checkpointing(self, module, value=False):
                module.gradient_checkpointing = value


        class LlamaForCausalLM(LlamaPreTrainedModel):
            pass
    """,
    "vl/model.py": """\
        from torch import nn

        from .modeling_llama import LlamaForCausalLM


        class VisionLanguageModel(nn.Module):
            def __init__(self, lang_decoder):
                super().__init__()
                self.lang_decoder = lang_decoder

            def gradient_checkpointing_enable(self):
                self.lang_decoder.gradient_checkpointing_enable()


        def create_model(path):
            return VisionLanguageModel(LlamaForCausalLM.from_pretrained(path))
    """,
    "vl/train.py": """\
        import deepspeed

        from .model import create_model


        def main(args):
            model = create_model(args.path)
            model.lang_decoder.gradient_checkpointing_enable()
            engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config=args.ds_config)
            if args.gradient_checkpointing:
                engine.gradient_checkpointing_enable()
    """,
}


def test_vendored_old_format_model_behind_a_project_class_and_an_engine(tmp_path: Path, run_cli) -> None:
    _project(tmp_path, VENDORED)
    # the call inside the class's own method is reported (who constructs the class is not read)
    assert _rows(run_cli, "vl") == [("model.py", "CKP001", 12)]


def test_the_same_tree_with_a_model_of_the_current_format_is_reported(tmp_path: Path, run_cli) -> None:
    files = dict(VENDORED)
    files["vl/modeling_llama.py"] = files["vl/modeling_llama.py"].replace(
        "self, module, value=False", "self, enable=True, gradient_checkpointing_func=None"
    )
    _project(tmp_path, files)
    # the lang_decoder is a model that takes the kwargs: reported where it is called on it;
    # the engine still calls the project class's own method, which takes none
    assert _rows(run_cli, "vl") == [("model.py", "CKP001", 12), ("train.py", "CKP001", 8)]


def test_the_assignment_just_before_the_read_decides() -> None:
    # LAVIS's BLIP-2 Vicuna: a vendored LLaMA of the old format is switched on, then wrapped by
    # peft in the same block; a read after the wrapping may be the peft model (not known)
    source = """\
        from peft import get_peft_model
        from torch import nn
        from transformers import PreTrainedModel


        class OldLlama(PreTrainedModel):
            def _set_gradient_checkpointing(self, module, value=False):
                module.gradient_checkpointing = value


        class Blip(nn.Module):
            def __init__(self, path, lora, config):
                super().__init__()
                if lora:
                    self.llm = OldLlama.from_pretrained(path)
                    self.llm.resize_token_embeddings(100)
                    self.peft_config = config
                    self.llm.gradient_checkpointing_enable()
                    self.llm = get_peft_model(self.llm, config)
                    self.llm.gradient_checkpointing_enable()
                for _ in range(2):
                    self.llm.gradient_checkpointing_enable()
                    self.llm = OldLlama.from_pretrained(path)
    """
    assert located(source) == [(20, "CKP001"), (22, "CKP001")]
