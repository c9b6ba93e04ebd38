"""CKP202 and statistics a recomputed region resets to a constant at its end (fairseq's MoE
layer times its all-to-alls and clears the timings in ``record_all_to_all_stats``): every run
starts from the constant and leaves it behind, so the recomputation writes what the forward
wrote. Moved, made conditional, or started from another value, the writes stay reported."""

from __future__ import annotations

import textwrap

from ckptlint.testing import located

MOE = textwrap.dedent(
    """\
    import time

    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class MOELayer(nn.Module):
        def __init__(self, gate, experts, args):
            super().__init__()
            self.gate = gate
            self.experts = experts
            self.args = args
            self.all2all_size = 2
            self.a2a_cuda_event_intervals = []
            self.a2a_cpu_time_ms = 0.0

        def forward(self, x):
            l_aux, weights, self.metadata = self.gate(x)
            dispatched = weights * x
            if self.all2all_size > 1:
                dispatched = self.all_to_all_wrapper(dispatched)
            out = self.experts(dispatched)
            if self.all2all_size > 1:
                out = self.all_to_all_wrapper(out)
            self.record_all_to_all_stats()
            return out, {"moe_gate_loss": l_aux}

        def all_to_all_wrapper(self, x):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            cpu_start = time.time() * 1000
            start.record()
            out = x.contiguous()
            end.record()
            self.a2a_cpu_time_ms += time.time() * 1000 - cpu_start
            self.a2a_cuda_event_intervals.append((start, end))
            return out

        def record_all_to_all_stats(self):
            if getattr(self.args, "record_a2a_perf_stats", False):
                self.metadata["all_to_all_cpu_time_ms"] = self.a2a_cpu_time_ms
                total = 0.0
                for start, end in self.a2a_cuda_event_intervals:
                    total += start.elapsed_time(end)
                self.metadata["all_to_all_cuda_time_ms"] = total
            # reset stats
            self.a2a_cpu_time_ms = 0.0
            self.a2a_cuda_event_intervals = []


    class Layer(nn.Module):
        def __init__(self, gate, experts, args):
            super().__init__()
            self.moe_layer = MOELayer(gate, experts, args)

        def forward(self, x):
            return checkpoint(self.moe_layer, x, use_reentrant=False)
"""
)

# the two timing writes in `all_to_all_wrapper`
WRITES = [(36, "CKP202"), (37, "CKP202")]


def test_timings_reset_at_the_end_of_the_forward_are_not_reported():
    assert located(MOE, "CKP202") == []


def test_a_reset_under_a_condition_keeps_them_reported():
    source = MOE.replace(
        "        # reset stats\n        self.a2a_cpu_time_ms = 0.0\n        self.a2a_cuda_event_intervals = []",
        "            self.a2a_cpu_time_ms = 0.0\n            self.a2a_cuda_event_intervals = []",
    )
    assert located(source, "CKP202") == WRITES


def test_a_return_before_the_reset_keeps_them_reported():
    source = MOE.replace(
        "        out = self.experts(dispatched)\n",
        "        out = self.experts(dispatched)\n        if self.args.skip:\n            return out, None\n",
    )
    assert located(source, "CKP202") == [(38, "CKP202"), (39, "CKP202")]


def test_a_reset_before_the_writes_keeps_them_reported():
    source = MOE.replace("        self.record_all_to_all_stats()\n        return out", "        return out").replace(
        "        l_aux, weights, self.metadata = self.gate(x)\n",
        "        self.record_all_to_all_stats()\n        l_aux, weights, self.metadata = self.gate(x)\n",
    )
    assert located(source, "CKP202") == WRITES


def test_a_start_value_other_than_the_reset_keeps_the_counter_reported():
    # the first forward starts from 5.0, its recomputation from 0.0
    source = MOE.replace("        self.a2a_cpu_time_ms = 0.0\n\n", "        self.a2a_cpu_time_ms = 5.0\n\n", 1)
    assert located(source, "CKP202") == [(36, "CKP202")]


def test_a_method_of_self_called_after_the_reset_keeps_them_reported():
    source = MOE.replace(
        "        self.record_all_to_all_stats()\n        return out",
        "        self.record_all_to_all_stats()\n        out = self.all_to_all_wrapper(out)\n        return out",
    )
    assert located(source, "CKP202") == [(37, "CKP202"), (38, "CKP202")]


def test_a_reset_in_the_checkpointed_forward_itself_is_enough():
    source = MOE.replace(
        "        self.record_all_to_all_stats()\n",
        "        self.a2a_cpu_time_ms = 0.0\n        self.a2a_cuda_event_intervals = list()\n",
    )
    assert located(source, "CKP202") == []
