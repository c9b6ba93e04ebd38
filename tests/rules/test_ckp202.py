"""CKP202 side-effect-in-recompute: what a recomputed region writes that carries across calls
(counters, caches grown from themselves), next to the writes that are the same every run
(per-call overwrites, one-time initialisation, lazy fills, balanced push/pop).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from programs import ITEMS

from ckptlint.api import lint_source
from ckptlint.testing import located

DISPATCHER = """\
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class Dispatcher(nn.Module):
        def dispatch(self, x, routing_map):
            self.routing_map = routing_map                # per-call overwrite (Megatron MoE)
            self._original_num_tokens = x.size(0) * 2 + 1
            self.reshard_after_forward, self.flag = True, False
            return x[self.routing_map]


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.dispatcher = Dispatcher()

        def _body(self, x, m):
            return self.dispatcher.dispatch(x, m)

        def forward(self, x, m):
            return checkpoint(self._body, x, m, use_reentrant=False)
"""


def test_plain_per_call_overwrite_is_not_a_side_effect():
    assert located(DISPATCHER, "CKP202") == []


def test_counter_and_cache_read_before_write_are_reported():
    source = """\
        from torch import nn
        import torch
        from torch.utils.checkpoint import checkpoint


        class CausalConv(nn.Module):  # diffusers magvit causal conv
            def __init__(self):
                super().__init__()
                self.cache = None
                self.calls = 0

            def _clear_conv_cache(self):
                del self.cache
                self.cache = None

            def body(self, x):
                self.calls += 1
                if self.cache is not None:
                    x = torch.cat([self.cache, x], dim=2)
                self._clear_conv_cache()
                self.cache = x[:, :, -2:]
                return x

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)
    """
    # the reset to None in _clear_conv_cache writes the same constant every run: not reported
    assert located(source, "CKP202") == [(17, "CKP202"), (21, "CKP202")]


def test_overwrite_from_its_own_value_is_reported_and_from_the_inputs_not():
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Block(nn.Module):
            def body(self, x):
                self.total = self.total + x.sum()
                self.last = x.sum()
                return x

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(7, "CKP202")]


def test_one_time_initialisation_of_a_global_is_not_reported():
    source = """\
        from torch.utils.checkpoint import checkpoint

        _TRACKER = None
        _TRACKER_INITIALIZED = False
        CALLS = 0


        def get_tracker():  # Megatron's model-parallel RNG tracker
            global _TRACKER, _TRACKER_INITIALIZED, CALLS
            if _TRACKER_INITIALIZED:
                return _TRACKER
            _TRACKER = object()
            _TRACKER_INITIALIZED = True
            return _TRACKER


        def count():
            global CALLS
            CALLS = CALLS + 1


        def body(x):
            get_tracker()
            count()
            return x * 2


        def run(x):
            return checkpoint(body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(19, "CKP202")]


def test_item_write_to_a_local_tensor_in_a_helper_function_is_not_module_state():
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        def cal_rel_pos_type(attn, q, sp_idx):  # timm mvitv2.py
            attn[:, :, sp_idx:, sp_idx:] = attn[:, :, sp_idx:, sp_idx:] + q
            return attn


        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.seen = {}

            def body(self, x, q):
                attn = x @ q
                attn = cal_rel_pos_type(attn, q, 1)
                self.seen[len(self.seen)] = attn.sum()  # grows on every run
                return attn

            def forward(self, x, q):
                return checkpoint(self.body, x, q, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(18, "CKP202")]


def test_a_line_reached_from_several_sites_is_reported_once(tmp_path: Path, run_cli):
    files = {
        "pkg/attention.py": """\
            from torch import nn


            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.log = []

                def forward(self, x):
                    self.log.append(x.sum())
                    return x
        """,
    }
    for i in range(3):
        files[f"pkg/recipe_{i}.py"] = """\
            from torch.utils.checkpoint import checkpoint
            from pkg.attention import Attention

            attn = Attention()


            def step(x):
                return checkpoint(attn, x, use_reentrant=False)
        """
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    result = run_cli("--output-format", "json", "--isolated", "--exit-zero", "--select", "CKP202", str(tmp_path))
    records = [r for r in json.loads(result.stdout) if r["code"] == "CKP202"]
    assert len(records) == 1, records
    assert Path(records[0]["filename"]).name == "attention.py"
    assert "recipe_0.py" in records[0]["message"]
    assert "also recomputed by 2 other checkpoint sites" in records[0]["message"]


def test_setup_behind_an_exit_guard_and_lists_of_the_recomputed_function_are_not_reported():
    # fairscale FSDP: `_setup_streams` returns once streams exist; `_rebuild_full_params`
    # fills a list it creates itself through a nested function; `has_full_params` guards an exit
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class FSDP(nn.Module):
            def __init__(self):
                super().__init__()
                self._streams = {}
                self.has_full_params = False
                self.history = []

            def _setup_streams(self):
                if len(self._streams) > 0:
                    return
                self._streams["all_gather"] = object()

            def _rebuild(self, params):
                output_tensors = []

                def update_p_data(p):
                    p.data = p.data * 2
                    output_tensors.append(p.data)

                if self.has_full_params:
                    return output_tensors
                for p in params:
                    update_p_data(p)
                self.has_full_params = True
                self.history.append(len(output_tensors))
                return output_tensors

            def body(self, x):
                self._setup_streams()
                self._rebuild([x])
                return x

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(29, "CKP202")]


def test_overwrite_of_state_this_call_already_wrote_is_not_reported():
    # Megatron MoE dispatcher: preprocess sets routing_map, token_dispatch gathers it
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Dispatcher(nn.Module):
            def preprocess(self, x, routing_map):
                self.routing_map = routing_map
                return x

            def token_dispatch(self, x):
                self.routing_map = self.routing_map.repeat(2, 1)
                self.seen = self.seen + 1
                return x[self.routing_map]

            def body(self, x, m):
                return self.token_dispatch(self.preprocess(x, m))

            def forward(self, x, m):
                return checkpoint(self.body, x, m, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(12, "CKP202")]


def test_save_and_restore_and_one_time_initialiser_read_are_not_reported():
    # Megatron tensor_parallel/random.py: fork() saves and restores the current state name;
    # initialize_rng_tracker() is a one-time initialiser whose globals the region reads
    source = """\
        import contextlib
        from torch.utils.checkpoint import checkpoint

        _TRACKER = None
        _INITIALIZED = False


        def initialize_rng_tracker(force_reset=False):
            global _TRACKER, _INITIALIZED
            if force_reset:
                _TRACKER = None
                _INITIALIZED = False
            if _INITIALIZED:
                return
            _TRACKER = Tracker()
            _INITIALIZED = True


        def get_tracker():
            initialize_rng_tracker()
            return _TRACKER


        class Tracker:
            def __init__(self):
                self._current_state_name = None

            @contextlib.contextmanager
            def fork(self, name):
                orig_state_name = self._current_state_name
                self._current_state_name = name
                try:
                    yield
                finally:
                    self._current_state_name = orig_state_name


        def body(x):
            with get_tracker().fork("model-parallel"):
                return x * 2


        def run(x):
            return checkpoint(body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == []
    assert located(source, "CKP201") == []


def test_tuple_overwrites_idempotent_flags_and_setdefault_are_not_reported():
    # Megatron: `self.token_probs, self.token_indices = topk(...)` then a masked refill;
    # `self.over_budget |= ...`; utils.py `_nvtx_range_msg_pool.setdefault(...)`
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        POOL = {}


        class Dispatcher(nn.Module):
            def body(self, probs, mask):
                self.token_probs, self.token_indices = torch.topk(probs, 2, dim=-1)
                self.token_indices = self.token_indices.masked_fill(mask, -1)
                self.over_budget |= self.token_indices.sum() > 4
                POOL.setdefault("dispatch", "dispatch")
                self.steps += 1
                return self.token_probs * 2

            def forward(self, probs, mask):
                return checkpoint(self.body, probs, mask, use_reentrant=False)
    """
    # (a bump followed only by `return self.token_probs` would run once: early stop)
    assert located(source, "CKP202") == [(14, "CKP202")]


def test_cache_grown_or_rebuilt_on_a_changed_key_is_not_reported():
    # rotary embeddings (LAVIS, InternVL, Megatron-DeepSpeed): the recomputation sees the grown cache
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Rotary(nn.Module):
            def body(self, x, seq_len):
                if seq_len > self.max_seq_len_cached:
                    self.max_seq_len_cached = seq_len
                    self.cos = torch.arange(seq_len)
                if seq_len == 3:
                    self.max_seq_len_cached = self.max_seq_len_cached * 2
                return x * self.cos[:seq_len]

            def forward(self, x, seq_len):
                return checkpoint(self.body, x, seq_len, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(12, "CKP202")]


def test_causal_conv_cache_concatenated_and_refilled_stays_reported():
    # diffusers autoencoder_kl_magvit.py: the first branch fills the cache and returns,
    # the other reads it; both writes carry the previous call's frames into the next
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class CausalConv(nn.Module):
            def _clear_conv_cache(self):
                del self.prev_features
                self.prev_features = None

            def conv(self, x):
                if self.prev_features is None:
                    self._clear_conv_cache()
                    self.prev_features = x[:, :, -2:].clone()
                    return x
                else:
                    x = torch.concat([self.prev_features, x], dim=2)
                    self._clear_conv_cache()
                    self.prev_features = x[:, :, -2:].clone()
                    return x

            def forward(self, x):
                return checkpoint(self.conv, x, use_reentrant=False)
    """
    # line 14 is the lazy fill under `is None` (written once); line 19 carries the cache
    assert located(source, "CKP202") == [(19, "CKP202")]


def test_balanced_push_and_pop_in_the_region_are_not_reported_and_a_lone_push_is():
    # Megatron core/utils.py: nvtx_range_push appends to a module list, nvtx_range_pop pops it
    source = """\
        from torch.utils.checkpoint import checkpoint

        _MESSAGES = []
        _LOG = []


        def range_push(msg):
            _MESSAGES.append(msg)


        def range_pop():
            if not _MESSAGES:
                raise RuntimeError("empty")
            return _MESSAGES.pop()


        def body(x):
            range_push("block")
            y = x * 2
            range_pop()
            _LOG.append(y)
            return y


        def run(x):
            return checkpoint(body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(21, "CKP202")]
    assert located(source, "CKP201") == []


def test_a_queue_filled_and_drained_with_pop_0_is_no_balanced_pair():
    source = """\
        from torch.utils.checkpoint import checkpoint

        QUEUE = []


        def body(x):
            QUEUE.append(x)
            return QUEUE.pop(0) * 2


        def run(x):
            return checkpoint(body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(7, "CKP202"), (8, "CKP202")]


def test_writes_under_a_recompute_phase_predicate_are_not_reported():
    # fairscale experimental/nn/sync_batchnorm.py and fairscale's own docstring example
    source = """\
        from torch import nn
        from fairscale.nn.checkpoint import checkpoint_wrapper, is_checkpointing, is_recomputing


        class Norm(nn.Module):
            def forward(self, x):
                if not is_recomputing():
                    self.counter += 1
                if is_checkpointing():
                    self.saved.append(x.mean())
                    return x
                if is_recomputing():
                    mean = self.saved.pop(0)
                    return x - mean
                self.calls += 1
                return x


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = checkpoint_wrapper(Norm())
    """
    assert located(source, "CKP202") == [(15, "CKP202")]


def test_rng_tracker_bookkeeping_is_restored_by_apis_that_restore_the_tracker():
    # ColossalAI legacy seed manager: set_mode saves the device RNG state per mode and
    # switches; colossalai's checkpoint saves and restores every mode's state around the
    # recompute. Under torch's checkpoint (no tracker restore) it stays reported.
    source = """\
        import torch
        import torch.nn.functional as F
        from {module} import checkpoint


        class SeedManager:
            def __init__(self):
                self._current_mode = None
                self._seed_states = {{}}

            def set_mode(self, mode):
                if self._current_mode:
                    self._seed_states[self._current_mode] = torch.cuda.get_rng_state()
                self._current_mode = mode
                torch.cuda.set_rng_state(self._seed_states[mode])


        MANAGER = SeedManager()


        def forward(x):
            MANAGER.set_mode("data")
            return F.dropout(x, p=0.4, training=True)


        def run(x):
            return checkpoint(forward, {extra}x)
    """
    colossal = source.format(module="colossalai.legacy.utils.activation_checkpoint", extra="False, ")
    torch_ = source.format(module="torch.utils.checkpoint", extra="")
    assert located(colossal, "CKP202") == []
    assert located(torch_, "CKP202") == [(13, "CKP202"), (14, "CKP202")]


def test_tuple_target_elements_are_judged_one_by_one():
    # pattern of Megatron's token_dispatcher.py:1440: only `self.tokens`, read in the value, carries
    # across calls; the local `hidden_states` read there does not make every element carry
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        def permute(h, m, tokens=None):
            return h, h, m, m, tokens


        class Manager(nn.Module):
            def body(self, hidden_states, m):
                (hidden_states, probs, self.mapping, self.offsets, self.tokens) = permute(
                    hidden_states, m, tokens=self.tokens
                )
                return hidden_states

            def forward(self, x, m):
                return checkpoint(self.body, x, m, use_reentrant=False)
    """
    found = lint_source(textwrap.dedent(source), select=["CKP202"])
    assert [(d.start[0], d.code) for d in found] == [(11, "CKP202")]
    assert "self.tokens" in found[0].message and "self.mapping" not in found[0].message


def test_idempotent_conversion_of_the_target_itself_is_not_reported():
    # EVA-style `self.attn_mask = self.attn_mask.to(x.device)`; a growing write stays reported
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Block(nn.Module):
            def body(self, x):
                self.attn_mask = self.attn_mask.to(x.device).type(x.dtype)
                self.scale = self.scale.to(x.device) * 2
                return x + self.attn_mask

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(8, "CKP202")]


def test_cache_behind_an_or_of_fill_guards_is_written_once():
    # rotary caches: `if self.cos is None or seq_len > self.cached_len:`
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Rotary(nn.Module):
            def body(self, x, seq_len):
                if self.cos is None or seq_len > self.cached_len:
                    self.cached_len = seq_len
                    self.cos = torch.arange(seq_len) + self.cos_offset
                if self.sin is None or x.sum() > 0:
                    self.sin = torch.arange(seq_len) + self.sin
                return x * self.cos[:seq_len]

            def forward(self, x, seq_len):
                return checkpoint(self.body, x, seq_len, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(12, "CKP202")]


def test_idempotent_conversion_under_a_none_guard_is_not_reported():
    # EVA-01 video/models/gvt.py:40 — `T = T.to(...) if T is not None else None`: both branches
    # leave an already converted value as it is. A None written when T is not None, or another
    # value in the other branch, changes the state the recomputation sees.
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Block(nn.Module):
            def body(self, x, flag):
                self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None
                self.bias = None if self.bias is None else self.bias.to(x.device).contiguous()
                self.pos = self.pos if self.pos is None else self.pos.half()
                self.scale = self.scale.to(x.device) if flag else None
                self.shift = self.shift.to(x.device) if self.shift is not None else self.pos
                self.gate = None if self.gate is not None else self.gate.to(x.device)
                return x + self.attn_mask + self.bias + self.pos + self.scale + self.shift + self.gate

            def forward(self, x):
                return checkpoint(self.body, x, True, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(10, "CKP202"), (11, "CKP202"), (12, "CKP202")]


MPU_RANDOM = """\
    import contextlib

    import torch
    from torch import _C


    def _set_cuda_rng_state(new_state, device=-1):
        def cb():
            default_generator = torch.cuda.default_generators[0]
            default_generator.set_state(new_state)

        torch.cuda._lazy_call(cb)


    class CudaRNGStatesTracker:
        def __init__(self):
            self.states_ = {}

        def get_states(self):
            return dict(self.states_)

        def set_states(self, states):
            self.states_ = states

        @contextlib.contextmanager
        def fork(self, name="model-parallel-rng"):
            orig_cuda_rng_state = torch.cuda.get_rng_state()
            _set_cuda_rng_state(self.states_[name])
            try:
                yield
            finally:
                self.states_[name] = torch.cuda.get_rng_state()
                _set_cuda_rng_state(orig_cuda_rng_state)


    _CUDA_RNG_STATE_TRACKER = CudaRNGStatesTracker()


    def get_cuda_rng_tracker():
        return _CUDA_RNG_STATE_TRACKER


    class CheckpointFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, run_function, *args):
            ctx.run_function = run_function
            ctx.fwd_cpu_rng_state = torch.get_rng_state()
            ctx.fwd_cuda_rng_state = torch.cuda.get_rng_state()
            ctx.fwd_cuda_rng_state_tracker = get_cuda_rng_tracker().get_states()
            with torch.no_grad():
                outputs = run_function(*args)
            ctx.save_for_backward(*args)
            return outputs

        @staticmethod
        def backward(ctx, *args):
            inputs = ctx.saved_tensors
            bwd_cuda_rng_state_tracker = get_cuda_rng_tracker().get_states()
            torch.set_rng_state(ctx.fwd_cpu_rng_state)
            _set_cuda_rng_state(ctx.fwd_cuda_rng_state)
            get_cuda_rng_tracker().set_states(ctx.fwd_cuda_rng_state_tracker)
            with torch.enable_grad():
                outputs = ctx.run_function(*inputs)
            get_cuda_rng_tracker().set_states(bwd_cuda_rng_state_tracker)
            torch.autograd.backward(outputs, args)
            return (None,) + tuple(inp.grad for inp in inputs)


    def checkpoint(function, *args):
        return CheckpointFunction.apply(function, *args)
"""


MPU_MODEL = """\
    import torch.nn.functional as F
    from torch import nn

    from {pkg} import mpu


    class Layer(nn.Module):
        def forward(self, x):
            with mpu.get_cuda_rng_tracker().fork():
                return F.dropout(x, p=0.1, training=self.training)


    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = Layer()

        def forward(self, x):
            def custom(h):
                return self.layer(h)

            return mpu.checkpoint(custom, x)
"""


def _mpu_tree(tmp_path: Path, pkg: str) -> None:
    files = {
        f"{pkg}/__init__.py": "",
        f"{pkg}/mpu/__init__.py": "from .random import checkpoint, get_cuda_rng_tracker\n",
        f"{pkg}/mpu/random.py": MPU_RANDOM,
        f"{pkg}/model.py": MPU_MODEL.format(pkg=pkg),
    }
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")


def test_known_mpu_checkpoint_restores_the_rng_tracker_and_a_copy_elsewhere_does_not(tmp_path: Path, run_cli):
    # Megatron-DeepSpeed megatron/mpu/random.py:198 — `self.states_[name] = ...` in the
    # tracker's fork() under mpu.checkpoint, whose CheckpointFunction saves the tracker states
    # in forward and sets/restores them around the recompute (facts/home_made.py). The same
    # code under another package name is a home-made implementation whose tracker handling
    # is not known: the write stays reported.
    _mpu_tree(tmp_path / "ds", "megatron")
    _mpu_tree(tmp_path / "other", "mylib")
    for root, expected in (("ds", []), ("other", [("random.py", 32)])):
        result = run_cli(
            "--output-format", "json", "--isolated", "--no-cache", "--exit-zero", "--select", "CKP202", ".",
            cwd=tmp_path / root,
        )
        found = [(Path(r["filename"]).name, r["location"]["row"]) for r in json.loads(result.stdout)]
        assert found == expected, (root, found)


ADAPTER_ATTENTION = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class AdapterAttention(nn.Module):  # litgpt litgpt/adapter.py:87-104
        def __init__(self):
            super().__init__()
            self.adapter_wte = nn.Embedding(4, 8)
            self.qkv = nn.Linear(8, 24)
            self.adapter_kv_cache = None

        def attend(self, q):
            if self.adapter_kv_cache is not None:
                {use}
            else:
                prefix = self.adapter_wte.weight.reshape(1, 4, 8)
                _, ak, av = self.qkv(prefix).split(8, dim=-1)
                {fill}
            return q @ ak.transpose(-1, -2) @ av


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = AdapterAttention()

        def forward(self, q):
            return checkpoint(self.attn.attend, q, use_reentrant=False)
"""


def test_lazy_fill_in_the_else_branch_of_is_not_none_is_written_once():
    uses = (
        "ak, av = self.adapter_kv_cache",  # unpacking (litgpt)
        "ak = self.adapter_kv_cache[0]; av = self.adapter_kv_cache[1]",  # subscripting
        "ak = self.adapter_kv_cache.clone(); av = ak",  # a method call
        "ak = av = self.adapter_kv_cache",
    )
    fills = ("self.adapter_kv_cache = (ak, av)", "self.adapter_kv_cache = [ak, av]", "self.adapter_kv_cache = ak")
    for use in uses:
        for fill in fills:
            source = ADAPTER_ATTENTION.format(use=use, fill=fill)
            assert located(source, "CKP202") == [], (use, fill)
    # memoisation spelled `if key in cache: ... else: cache[key] = ...`
    memo = ADAPTER_ATTENTION.replace("self.adapter_kv_cache = None", "self.memo = dict()").format(
        use="ak, av = self.memo[q.shape]", fill="self.memo[q.shape] = (ak, av)"
    ).replace("if self.adapter_kv_cache is not None:", "if q.shape in self.memo:")
    assert located(memo, "CKP202") == []


def test_cache_extended_in_the_is_not_none_branch_stays_reported():
    # the same shape where the `is not None` branch grows the cache: every run, the
    # recomputation included, appends again (the KV cache that doubles)
    grows = ADAPTER_ATTENTION.format(
        use="ak, av = self.adapter_kv_cache; self.adapter_kv_cache = (torch.cat([ak, q]), av)",
        fill="self.adapter_kv_cache = (ak, av)",
    )
    assert located(grows, "CKP202") == [(15, "CKP202")]
    # a fill in the else branch of a test that does not turn true once it ran
    other = ADAPTER_ATTENTION.format(use="ak, av = q, q", fill="self.adapter_kv_cache = (ak, av)").replace(
        "if self.adapter_kv_cache is not None:", "if self.adapter_kv_cache is None:"
    )
    assert located(other, "CKP202") == [(19, "CKP202")]
    # a counter in the branch that runs once the cache is filled runs again on recompute
    counted = ADAPTER_ATTENTION.format(
        use="ak, av = self.adapter_kv_cache; self.hits += 1", fill="self.adapter_kv_cache = (ak, av)"
    )
    assert located(counted, "CKP202") == [(15, "CKP202")]


NANOTRON_ROTARY = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import CheckpointFunction


    class RotaryEmbedding(nn.Module):  # nanotron src/nanotron/models/llama.py:52-125
        def __init__(self, dim, end):
            super().__init__()
            self.dim = dim
            self.end = end
            self._initialized_buffer = False
            self.calls = 0

        def forward(self, x, position_ids):
            batch_size, seq_length, num_heads, inner_dim = x.shape
            while (
                position_ids is not None and position_ids[-1, -1] >= self.end
            ) or seq_length >= self.end:
    {body}
            return x * self.end


    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.rotary = RotaryEmbedding(8, 4096)

        def _core(self, x, position_ids):
            return self.rotary(x, position_ids)

        def forward(self, x, position_ids):
            return CheckpointFunction.apply(self._core, True, x, position_ids)
"""


def test_size_grown_until_the_input_fits_is_written_once():
    # the loop leaves only when its test is false: the recomputation (same inputs) writes nothing
    grow = "                self.end *= 2\n                self._initialized_buffer = False\n"
    assert located(NANOTRON_ROTARY.replace("    {body}\n", grow), "CKP202") == []
    assert located(NANOTRON_ROTARY.replace("    {body}\n", "                self.end = self.end * 2\n"), "CKP202") == []


def test_counter_or_early_exit_in_a_grow_loop_stays_reported():
    # a counter beside the loop, a loop that also computes, and a `break` are not grow-until-fits
    counter = "                self.end *= 2\n            self.calls += 1\n"
    assert located(NANOTRON_ROTARY.replace("    {body}\n", counter), "CKP202") == [(20, "CKP202")]
    computes = "                self.end *= 2\n                x = torch.cat([x, x], dim=1)\n"
    assert located(NANOTRON_ROTARY.replace("    {body}\n", computes), "CKP202") == [(19, "CKP202")]
    leaves = "                self.end *= 2\n                break\n"
    assert located(NANOTRON_ROTARY.replace("    {body}\n", leaves), "CKP202") == [(19, "CKP202")]
    # a loop whose test does not read the target: the write is a plain counter
    other = NANOTRON_ROTARY.replace(">= self.end", ">= self.dim").replace(
        "    {body}\n", "                self.end *= 2\n                self.dim *= 2\n"
    )
    assert located(other, "CKP202") == [(19, "CKP202")]


def test_if_spelling_of_the_regrowth_is_written_once_and_an_increment_is_not():
    # `if x > self.cached_len: self.cached_len = x` turns its test false; `self.cached_len += 1` may not
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Rotary(nn.Module):
            def body(self, x, seq_len):
                if seq_len > self.cached_len:
                    self.cached_len = seq_len
                if self.cached_len < seq_len:
                    self.cached_len = seq_len
                if seq_len > self.seen:
                    self.seen += 1
                return x * self.cached_len

            def forward(self, x, seq_len):
                return checkpoint(self.body, x, seq_len, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(13, "CKP202")]


def test_item_with_a_literal_key_is_judged_as_an_attribute():
    # reported: the counter read before its write, the cache grown from itself, a computed key
    assert located(ITEMS, "CKP202") == [(28, "CKP202"), (29, "CKP202"), (30, "CKP202")]


def test_set_if_different_and_flags_under_other_keys():
    # TransformerEngine's backend selection and ALiBi cache: an entry replaced only when it
    # differs (`if C[k] is None or v != C[k]: C[k] = v`), and a flag item other than the one read
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        _BACKENDS = {"params": None, "update": True}
        _ALIBI = {"heads": 0, "dirty": False}
        _COUNTS = {"n": 0}


        def select(params, heads):
            if _BACKENDS["params"] is None or params != _BACKENDS["params"]:
                _BACKENDS["params"] = params
            _ALIBI["dirty"] = True
            if _ALIBI["heads"] != heads:
                pass
            _COUNTS["n"] += 1
            return _COUNTS["n"]


        class Block(nn.Module):
            def forward(self, x):
                return x * select(x.shape, x.shape[1])


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return checkpoint(self.block, x, use_reentrant=False)
    """
    # still reported: the counter (read and incremented by the region)
    assert located(source, "CKP202") == [(15, "CKP202")]
    assert located(source, "CKP201") == [(16, "CKP201")]


MICROBATCH = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    def get_num_microbatches():
        return 4


    class Inner(nn.Module):
        def forward(self, x):
            if self.num_microbatches_in_previous_step != get_num_microbatches():
                self.microbatch_count = 0
            self.num_microbatches_in_previous_step = get_num_microbatches()
            if torch.is_grad_enabled() and self.training:
                self.microbatch_count += 1
            return x


    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return checkpoint(self.inner, x, use_reentrant=REENTRANT)
"""


def test_grad_mode_guard_runs_once_under_the_reentrant_variant_only():
    # reentrant: forward under no_grad, recompute under enable_grad -> the count runs once
    assert located(MICROBATCH.replace("REENTRANT", "True"), "CKP202") == []
    # non-reentrant: both phases record, so the guarded count runs twice
    assert located(MICROBATCH.replace("REENTRANT", "False"), "CKP202") == [(16, "CKP202")]


def test_read_that_only_decides_another_branch_does_not_make_the_overwrite_carry():
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Block(nn.Module):
            def body(self, x, n):
                if self.prev != n:
                    self.count = 0
                self.prev = n
                if self.seen is not None:
                    n = n + 1
                self.seen = n
                return x

            def forward(self, x, n):
                return checkpoint(self.body, x, n, use_reentrant=False)
    """
    # `self.prev = n` writes the same value in both runs; `self.seen = n` reads the `n` that
    # the branch on `self.seen` changed, so it carries
    assert located(source, "CKP202") == [(12, "CKP202")]


EARLY_STOP = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class Block(nn.Module):
        def forward(self, x):
            h = self.ff(self.norm(x))
            self.print_idx += 1
            return h

        def other(self, x):
            self.calls += 1
            return self.ff(x)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            x = checkpoint(self.block, x, OPTIONS)
            return checkpoint(self.block.other, x, OPTIONS)
"""


def test_counter_after_the_last_saved_tensor_is_not_rerun_under_early_stop():
    # torch 2.13, non-reentrant, early_stop default: the recompute stops at the last saved
    # tensor, so the bump before `return h` runs once (measured: [1, 1] after one step)
    assert located(EARLY_STOP.replace("OPTIONS", "use_reentrant=False"), "CKP202") == [(13, "CKP202")]
    for options in ("use_reentrant=False, early_stop=False", "use_reentrant=True"):
        assert located(EARLY_STOP.replace("OPTIONS", options), "CKP202") == [(9, "CKP202"), (13, "CKP202")]


def test_chain_of_conversions_of_the_target_is_idempotent():
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Attn(nn.Module):
            def body(self, q):
                self.logn_tensor = self.logn_tensor.to(q.device).type_as(q)
                return q * self.logn_tensor

            def forward(self, q):
                return checkpoint(self.body, q, use_reentrant=False)
    """
    assert located(source, "CKP202") == []


MUSEV_COUNTER = """\
import logging
import torch
from torch.utils.checkpoint import checkpoint

logger = logging.getLogger(__name__)


class Transformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.print_idx = 0
        self.calls = 0

    def forward(self, x):
        if self.print_idx == 0:
            logger.debug(f"shape={x.shape}")
            if x is not None:
                logger.debug("x given")
        h = self.proj(x)
        if self.print_idx == 0:
            print("first", self.print_idx){extra}
        elif self.print_idx > 10:
            pass
        self.print_idx += 1
        self.calls += 1
        return h * 2

    def stats(self):
        return self.calls


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.t = Transformer()

    def forward(self, x):
        return checkpoint(self.t, x, use_reentrant=False)
"""


def test_counter_read_only_by_logging_is_not_reported_and_one_read_by_the_computation_is():
    # MuseV musev/models/transformer_2d.py:441 `self.print_idx += 1` (nested frame, work after it)
    assert located(MUSEV_COUNTER.replace("{extra}", ""), "CKP202") == [(26, "CKP202")]  # `self.calls` only
    assert located(MUSEV_COUNTER.replace("{extra}", "\n            h = h + 1"), "CKP202") == [(26, "CKP202"), (27, "CKP202")]


OPENELM_ROTARY = """\
import torch
from torch.utils.checkpoint import checkpoint


class RotaryEmbedding(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.inv_freq = torch.ones(dim)
        self._cached_seq_length = 0
        self._cached_cos = None

    def _compute(self, key_len, key_device, key_dtype):
        if (
            key_len > self._cached_seq_length
            or self._cached_cos is None
            or (self._cached_cos is not None and self._cached_cos.{attr} != key_device)
        ):
            self._cached_seq_length = max(key_len, self._cached_seq_length)
            emb = torch.arange(self._cached_seq_length, device=self.inv_freq.device)
            self._cached_cos = emb.cos().to(device=key_device)

    def forward(self, q):
        self._compute(q.shape[0], q.device, q.dtype)
        return q * self._cached_cos[: q.shape[0]]


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rope = RotaryEmbedding(4)

    def forward(self, q):
        return checkpoint(self.rope, q, use_reentrant=False)
"""


def test_cache_rebuilt_when_its_device_changed_is_written_once():
    # TinyLLaVA_Factory tinyllava/model/llm/openelm.py:473-501: after the forward filled the
    # cache, every disjunct of the guard is false on recomputation
    assert located(OPENELM_ROTARY.replace("{attr}", "device"), "CKP202") == []
    # a guard on something the body does not rebuild (`self.inv_freq.device`) is no fill guard
    changed = OPENELM_ROTARY.replace("self._cached_cos is not None and self._cached_cos.{attr}", "self.inv_freq.device")
    assert located(changed, "CKP202") == [(18, "CKP202"), (20, "CKP202")]


CROSS_ATTENTION = """\
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.save_attention = False
            self.attention_maps = []

        def save_map(self, attention_map):
            self.attention_maps.append(attention_map)

        def forward(self, x, cross_states=None):
            is_cross = cross_states is not None
            if is_cross and self.save_attention:
                self.save_map(x)
            return x


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()

        def forward(self, x, mask=None):
            return self.attention(x{cross})


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(2)])

        def forward(self, x, mask):
            for layer in self.layers:
                x = checkpoint(layer, x, mask, use_reentrant=False)
            return x
"""


def test_branch_on_an_argument_the_site_never_passes_is_pruned() -> None:
    # pattern of mmpretrain's blip/language_model.py through chinese_clip/bert.py
    assert located(CROSS_ATTENTION.format(cross="")) == []


def test_branch_undecided_when_the_argument_is_passed() -> None:
    # `mask` comes from the caller's own argument: not known, so both branches stay
    assert located(CROSS_ATTENTION.format(cross=", cross_states=mask"), "CKP202") == [(12, "CKP202")]


def test_parameter_copied_locally_is_not_the_callers_object() -> None:
    source = """\
        from torch.utils.checkpoint import checkpoint

        def f(x, opts):
            opts = dict(opts)
            opts.pop("scale", None)
            return x * 2

        def run(x, opts):
            return checkpoint(f, x, opts, use_reentrant=False)
    """
    assert located(source, "CKP202") == []


def test_side_effects_on_self_and_buffers() -> None:
    source = """\
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("ema", torch.zeros(4))
                self.calls = 0

            def _body(self, x):
                self.calls += 1
                self.ema.mul_(0.9)
                local = []
                local.append(x)
                return x * 2

            def forward(self, x):
                return checkpoint(self._body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(12, "CKP202"), (13, "CKP202")]


def test_nested_call_mutating_its_own_argument_is_local() -> None:
    # sd-scripts library/attention.py: a helper clears the list the region built
    source = """\
        from torch.utils.checkpoint import checkpoint

        def attention(qkv):
            q, k, v = qkv
            qkv.clear()
            return q + k + v

        def block(x):
            return attention([x, x, x])

        def run(x):
            return checkpoint(block, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == []


def test_lazy_initialisation_and_memoisation_are_not_side_effects() -> None:
    """timm's Conv2dSame and attention-bias caches, reached through checkpoint_seq: the
    guarded write runs once, not again on recompute."""
    source = """\
        from torch import nn
        from timm.models import checkpoint_seq


        class Pad(nn.Module):
            def __init__(self):
                super().__init__()
                self.pad = None
                self.cache = {}

            def forward(self, x):
                if self.pad is None:
                    self.pad = nn.ZeroPad2d(1)
                    self.pad_size = x.shape
                key = str(x.device)
                if key not in self.cache:
                    self.cache[key] = x.new_ones(1)
                self.steps += 1
                return self.pad(x) * self.cache[key]


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stages = nn.Sequential(Pad(), Pad())

            def forward(self, x):
                return checkpoint_seq(self.stages, x)
    """
    assert located(source) == [(18, "CKP202")]


def test_write_in_the_else_branch_of_a_lazy_initialisation_is_reported() -> None:
    """diffusers' causal-conv cache: recomputation finds the cache filled and takes the
    other branch, which writes again."""
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class CausalConv(nn.Module):
            def __init__(self):
                super().__init__()
                self.prev = None

            def forward(self, x):
                if self.prev is None:
                    self.prev = x[:, -1:]
                else:
                    self.prev = x[:, -1:] + self.prev
                return x


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = CausalConv()

            def forward(self, x):
                return checkpoint(self.conv, x, use_reentrant=False)
    """
    assert located(source) == [(14, "CKP202")]


def test_closure_variable_of_init_is_settled() -> None:
    """diffusers' ResnetBlock2D: ``__init__`` builds ``lambda x: f(x, kernel=fir_kernel)`` in
    two branches; ``__init__`` has returned before forward, so the value cannot change."""
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        def blur(x, kernel):
            return x * kernel[0]


        class Block(nn.Module):
            def __init__(self, up):
                super().__init__()
                if up:
                    kernel = (1, 3, 3, 1)
                    self.resample = lambda x: blur(x, kernel=kernel)
                else:
                    kernel = (1, 2, 1)
                    self.resample = lambda x: blur(x, kernel=kernel)

            def forward(self, x):
                return self.resample(x)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(True)

            def forward(self, x):
                return checkpoint(self.block, x, use_reentrant=False)
    """
    assert located(source) == []


def test_recording_tensor_sizes_on_self_is_not_a_side_effect() -> None:
    source = """\
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Net(nn.Module):
            def _body(self, x):
                self.H, self.W = x.shape[-2:]
                self.batch = x.size(0)
                self.steps = self.steps + 1
                return x

            def forward(self, x):
                return checkpoint(self._body, x, use_reentrant=False)
    """
    assert located(source, "CKP202") == [(8, "CKP202")]


# CKP202 and a method named like a container's mutator (``update``, ``append``) on ``self.X``:
# a mutation when the class gives ``self.X`` a list, dict or set (or anything it does not know),
# not when the class only ever sets it to ``None`` and other code installs the object (a key/value
# cache that inference code puts on each attention block).

KV_CACHE = """\
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class KVCache(nn.Module):
    def update(self, input_pos, k_val):
        self.k_cache[:, input_pos] = k_val
        return self.k_cache


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.wk = nn.Linear(dim, dim)
        self.kv_cache = INSTALLED

    def forward(self, x, input_pos=None):
        k = self.wk(x)
        if self.kv_cache is not None:
            k = self.kv_cache.update(input_pos, k)
        return k


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.layers = nn.ModuleList([Attention(dim) for _ in range(2)])

    def setup_caches(self):
        for layer in self.layers:
            layer.kv_cache = KVCache()

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False)
        return x
"""


def test_a_method_call_on_an_object_the_class_only_sets_to_none_is_not_a_mutation() -> None:
    assert located(KV_CACHE.replace("INSTALLED", "None"), "CKP202") == []


def test_a_container_the_class_builds_is_still_mutated_by_update() -> None:
    for value in ("{}", "dict()", "[]"):
        method = "append" if value == "[]" else "update"
        source = KV_CACHE.replace("INSTALLED", value).replace("self.kv_cache.update(input_pos, k)", f"self.kv_cache.{method}(k) or k")
        assert located(source, "CKP202") == [(21, "CKP202")], value
