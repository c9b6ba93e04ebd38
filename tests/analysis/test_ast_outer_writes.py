"""The writes of outer state on CPython's ``ast``
(:func:`ckptlint.checkpoint.analyses.ast_outer_writes.outer_writes`), recorded while they were
libcst's, on hand-written programs for each exemption of ``outer_writes`` and
``write_exemptions`` (golden answers: ``__snapshots__/test_ast_outer_writes.ambr``; the rule
examples, cases and test-suite programs are recorded, reads and writes together, by
``test_ast_outer_reads.py``)."""

from __future__ import annotations

import pytest
from test_ast_outer_reads import golden, totals

PROGRAMS = {
    "globals and closures": """
        from torch.utils.checkpoint import checkpoint
        STEP = 0
        FLAGS = 0
        LOG = []

        def body(x):
            global STEP, FLAGS
            STEP += 1
            FLAGS |= 1
            STEP, other = STEP + 1, 2
            LOG.append(STEP)
            return x

        def make():
            calls = 0
            def inner(x):
                nonlocal calls
                calls = calls + 1
                return x
            return checkpoint(inner, 1, use_reentrant=False)
        """,
    "self attributes": """
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("running", torch.zeros(1))
                self.cache = None
                self.kv_cache = None
                self.count = 0
                self.items = []

            def forward(self, x):
                self.count += 1
                self.running.add_(x.mean())
                self.items.append(x)
                self.kv_cache.update(x)
                self.mask = self.mask.to(x.device)
                self.H, self.W = x.shape[-2:]
                if self.cache is not None:
                    x = torch.cat([self.cache, x])
                self.cache = x[-2:]
                self.last = x
                self.seen = None
                self.__dict__["fast"] = x
                self.table["fixed"] = x
                self.table[x.size(0)] = x
                self.table["n"] = self.table["n"] + 1
                self.table["h"] = self.table.get("h")
                return x

            def run(self, x):
                return checkpoint(self.forward, x, use_reentrant=False)
        """,
    "memo and lazy": """
        import torch
        from torch.utils.checkpoint import checkpoint
        _ENGINES = {}

        class Rotary(torch.nn.Module):
            def forward(self, x, key):
                if self.cos is None or x.size(0) > self.cached_len:
                    self.cached_len = x.size(0)
                    self.cos = torch.ones(self.cached_len)
                if self.pad is None:
                    self.pad = x.new_zeros(1)
                if key not in self.cache:
                    self.cache[key] = x * 2
                if self.table is not None:
                    y = self.table
                else:
                    self.table = x
                while x.size(0) >= self.end:
                    self.end *= 2
                if not self._initialized:
                    self._initialized = True
                engine = _ENGINES.get(key)
                if engine is None:
                    _ENGINES[key] = engine = object()
                return x

            def run(self, x):
                return checkpoint(self.forward, x, "k", use_reentrant=False)
        """,
    "calls and parameters": """
        import os
        from torch.utils.checkpoint import checkpoint
        REGISTRY = {}

        def body(x, cache, meta, stats):
            os.environ.update({"A": "1"})
            REGISTRY.setdefault("k", []).append(x)
            meta.pop("key", None)
            meta.pop("key", default=None)
            stats.append(x)
            cache["padding"] = x
            cache.state = x
            cache[x] = 1
            REGISTRY.clear()
            return x

        def run(x):
            return checkpoint(body, x, {}, {}, [], use_reentrant=False)
        """,
    "counters and logs": """
        import logging
        import torch
        from torch.utils.checkpoint import checkpoint
        logger = logging.getLogger(__name__)

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.print_idx = 0
                self.calls = 0

            def forward(self, x):
                if self.print_idx == 0:
                    logger.debug("first")
                self.print_idx += 1
                self.calls += 1
                logger.info("calls %d", self.calls)
                return x

            def other(self, x):
                return self.calls + x

            def run(self, x):
                return checkpoint(self.forward, x)
        """,
    "phases and rng": """
        import torch
        from torch.utils.checkpoint import checkpoint
        from fairscale.nn.checkpoint import is_recomputing
        from megatron.core.tensor_parallel import checkpoint as mcheckpoint
        TOTAL = [0]

        class Tracker:
            def fork(self):
                orig = self._current_state_name
                self._current_state_name = "model"
                torch.cuda.set_rng_state(self.states["model"])
                self._current_state_name = orig
                self.forks += 1

        def body(x):
            if not is_recomputing():
                TOTAL[0] += 1
            TOTAL.append(1) if not is_recomputing() else None
            if torch.is_grad_enabled():
                TOTAL.append(2)
            return x

        def run(x, tracker):
            a = checkpoint(body, x, use_reentrant=True)
            b = mcheckpoint(tracker.fork, False, x)
            return a + b
        """,
    "early stop": """
        import torch
        from torch.utils.checkpoint import checkpoint

        class Block(torch.nn.Module):
            def forward(self, x):
                h = x * 2
                self.print_idx += 1
                self.steps += 1; self.seen += 2
                return h

            def run(self, x):
                a = checkpoint(self.forward, x, use_reentrant=False)
                b = checkpoint(self.forward, x, use_reentrant=False, early_stop=False)
                return a + b
        """,
    "fresh and resets": """
        import torch
        from torch.utils.checkpoint import checkpoint

        class Dispatcher:
            def __init__(self):
                self.a2a_cpu_time_ms = 0.0
                self.a2a_cuda_event_intervals = []

            def preprocess(self, routing_map):
                self.routing_map = routing_map
                return routing_map

            def forward(self, x):
                self.preprocess(x)
                self.routing_map = gather(self.routing_map)
                self.a2a_cpu_time_ms += 1.0
                self.a2a_cuda_event_intervals.append(x)
                self.record_all_to_all_stats()
                return x

            def record_all_to_all_stats(self):
                log(self.a2a_cpu_time_ms)
                self.a2a_cpu_time_ms = 0.0
                self.a2a_cuda_event_intervals = []

            def run(self, x):
                return checkpoint(self.forward, x, use_reentrant=False)
        """,
    "handed down": """
        import torch
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        STORE = {}

        class Conv(nn.Module):
            def forward(self, h, cache=None, *args, **kwargs):
                cache["padding"] = torch.cat([cache["padding"], h])
                cache.state = cache.state + h
                cache["count"] += 1
                args[0].state += 1
                kwargs["extra"] += 1
                return h

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = Conv()

            def forward(self, h, layer_cache, local=None):
                local = {}
                self.conv1(h, local)
                self.conv1(h, STORE)
                return self.conv1(h, cache=layer_cache["conv1"])

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.memory = {}

            def forward(self, x, layer_cache):
                x = checkpoint(self.block, x, layer_cache, use_reentrant=False)
                x = checkpoint(self.block, x, self.memory, use_reentrant=False)
                return checkpoint(self.block.conv1, x, self.memory, use_reentrant=False)
        """,
    "region locals": """
        from torch.utils.checkpoint import checkpoint

        def rebuild(params):
            output = []
            def update(p):
                output.append(p)
            for p in params:
                update(p)
            return output

        def run(params):
            return checkpoint(rebuild, params, use_reentrant=False)
        """,
    "guards and initialisers": """
        from torch.utils.checkpoint import checkpoint
        _INITIALIZED = False
        _STREAMS = {}

        def init(x):
            global _INITIALIZED
            if _INITIALIZED:
                return
            _STREAMS["main"] = x
            _INITIALIZED = True

        class Streams:
            def setup(self, x):
                if len(self._streams) > 0:
                    return
                self._streams["k"] = x
                if self.prev != get_n():
                    self.count = 0
                self.prev = get_n()

        def run(x):
            return checkpoint(init, x, use_reentrant=False)
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs(name: str, snapshot) -> None:
    assert golden(PROGRAMS[name]) == snapshot


def test_the_programs_hold_what_is_compared() -> None:
    """The programs above are not empty of writes."""
    assert totals(list(PROGRAMS.values()))["write"] >= 60
