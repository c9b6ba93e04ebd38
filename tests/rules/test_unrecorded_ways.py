"""Ways into a region's function that the region does not record, each of which once made
ckptlint state a false condition ("this code runs only when `state is not None`") for a
finding the region also reaches unconditionally (found by a reviewer trying to break the
conditions). Every program reaches the reported line a second way that needs no test."""

from __future__ import annotations

import pytest

from ckptlint.testing import findings

PROGRAMS = {
    # an override the region did not resolve calls the function unconditionally
    'override': '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def go(self, x):
        self.calls += 1
        return x

    def other(self, x):
        return x

    def body(self, x, state=None):
        if state is not None:
            x = self.go(x)
        return self.other(x)

    def forward(self, x, state=None):
        return checkpoint(self.body, x, state, use_reentrant=False)


class Child(Base):
    def other(self, x):
        return self.go(x)
''',
    # the function is handed to map()
    'map': '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

LOG = []


def record(x):
    LOG.append(x)
    return x


class Block(nn.Module):
    def forward(self, x, state=None):
        if state is not None:
            x = record(x)
        return list(map(record, [x]))[0]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, state=None):
        return checkpoint(self.block, x, state, use_reentrant=False)
''',
    # a property calls the function
    'property': '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

LOG = []


def record(x):
    LOG.append(x)
    return x


class Block(nn.Module):
    @property
    def scale(self):
        return record(2.0)

    def forward(self, x, state=None):
        if state is not None:
            record(x)
        return x * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, state=None):
        return checkpoint(self.block, x, state, use_reentrant=False)
''',
    # type(self).method() calls the function
    'typeself': '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

LOG = []


def record(x):
    LOG.append(x)
    return x


class Block(nn.Module):
    @staticmethod
    def stat(x):
        return record(x)

    def forward(self, x, state=None):
        if state is not None:
            x = record(x)
        return type(self).stat(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, state=None):
        return checkpoint(self.block, x, state, use_reentrant=False)
''',
    # a decorator's wrapper calls the function
    'decorator': '''\
import functools

import torch.nn as nn
from torch.utils.checkpoint import checkpoint

LOG = []


def record(x):
    LOG.append(x)
    return x


def logged(f):
    @functools.wraps(f)
    def wrapper(*a):
        record(a[0])
        return f(*a)
    return wrapper


@logged
def g(x):
    return x


class Block(nn.Module):
    def forward(self, x, state=None):
        if state is not None:
            x = record(x)
        return g(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, state=None):
        return checkpoint(self.block, x, state, use_reentrant=False)
''',
    # recursion reaches a call in a branch decided for the first call
    'recursion': '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

LOG = []


def record(x):
    LOG.append(x)
    return x


def rec(x, n):
    if n == 0:
        return record(x)
    return rec(x, n - 1)


class Block(nn.Module):
    def forward(self, x, state=None):
        if state is not None:
            x = record(x)
        return rec(x, 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, state=None):
        return checkpoint(self.block, x, state, use_reentrant=False)
''',
    # the callee changes an argument before testing it
    'mutated_arg': '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

LOG = []


def record(x):
    LOG.append(x)
    return x


def helper(x, opts):
    opts["cache"] = True
    if opts:
        return record(x)
    return x


class Block(nn.Module):
    def forward(self, x, state=None):
        if state is not None:
            x = record(x)
        return helper(x, {})


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, state=None):
        return checkpoint(self.block, x, state, use_reentrant=False)
''',
    # a mutable default is changed before the test
    'mutable_default': '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

LOG = []


def record(x):
    LOG.append(x)
    return x


def helper(x, seen=[]):
    seen.append(1)
    if seen:
        return record(x)
    return x


class Block(nn.Module):
    def forward(self, x, state=None):
        if state is not None:
            x = record(x)
        return helper(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x, state=None):
        return checkpoint(self.block, x, state, use_reentrant=False)
''',
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_unrecorded_way_states_no_condition_of_the_recorded_one(name: str) -> None:
    found = [d for code in ("CKP202",) for d in findings(PROGRAMS[name], code)]
    assert found, name
    for d in found:
        assert "`state is not None`" not in d.message, (name, d.message)


# The second round: a value the condition reads is changed where the message did not look.
CHANGED_ELSEWHERE = {
    # the helper negates its flag before testing it
    'helper_negates_flag': ('CKP203', '`self.on`', '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def run(block, x, use_cp=False):
    use_cp = not use_cp
    if use_cp:
        return checkpoint(block, x)
    return block(x)


class Net(nn.Module):
    def __init__(self, on=True):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
        self.on = on

    def forward(self, x):
        return run(self.block, x, self.on)
'''),
    # the helper sets its flag in a loop
    'helper_loop_rebinds_flag': ('CKP203', '`flag`', '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def run(block, x, use_cp=False):
    for _ in range(2):
        if use_cp:
            return checkpoint(block, x)
        use_cp = True
    return block(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

    def forward(self, x, flag=False):
        return run(self.block, x, flag)
'''),
    # the helper calls itself with the flag on
    'helper_recursion': ('CKP203', '`self.with_cp`', '''\
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def run(fn, x, use_cp=False):
    if use_cp:
        return checkpoint(fn, x, use_reentrant=False)
    return run(fn, x, use_cp=True)


class Net(nn.Module):
    def __init__(self, with_cp=False):
        super().__init__()
        self.with_cp = with_cp
        self.blk = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

    def forward(self, x):
        return run(self.blk, x, self.with_cp)
'''),
    # the constructor rebinds the parameter before storing it
    'ctor_param_none_default': ('CKP001', 'defaults to', '''\
import os
import dataclasses
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

class Net(nn.Module):
    def __init__(self, with_cp=None):
        super().__init__()
        self.block = nn.Linear(4, 4)
        if with_cp is None:
            with_cp = True
        self.with_cp = with_cp

    def forward(self, x):
        if self.with_cp:
            return checkpoint(self.block, x)
        return self.block(x)
'''),
    # a conditional expression rebinds the parameter
    'ctor_param_ternary': ('CKP001', 'defaults to', '''\
import os
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

class Net(nn.Module):
    def __init__(self, with_cp=None):
        super().__init__()
        self.block = nn.Linear(4, 4)
        with_cp = with_cp if with_cp is not None else True
        self.with_cp = with_cp

    def forward(self, x):
        if self.with_cp:
            return checkpoint(self.block, x)
        return self.block(x)
'''),
    # a setter with its own default runs in __init__
    'setter_in_init': ('CKP001', 'defaults to', '''\
import os
import dataclasses
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)
        self.with_cp = False
        self.set_cp()

    def set_cp(self, v=True):
        self.with_cp = v

    def forward(self, x):
        if self.with_cp:
            return checkpoint(self.block, x)
        return self.block(x)
'''),
    # a function the object is handed to changes it too
    'ckp201_write_via_fn': ('CKP201', 'when `flag`', '''\
from torch.utils.checkpoint import checkpoint


def bump(s, i):
    s["k"] = i


def forward(layers, hidden, flag=False):
    state = {"k": 0}
    for idx, layer in enumerate(layers):
        if flag:
            state["k"] = idx

        def custom_forward(*inputs, layer=layer):
            return layer(*inputs, state["k"])

        hidden = checkpoint(custom_forward, hidden, use_reentrant=False)
        bump(state, idx)
    return hidden
'''),
    # an alias of the object changes it too
    'ckp201_alias': ('CKP201', 'when `flag`', '''\
from torch.utils.checkpoint import checkpoint


def forward(layers, hidden, flag=False):
    state = {"k": 0}
    for idx, layer in enumerate(layers):
        if flag:
            state["k"] = idx

        def custom_forward(*inputs, layer=layer):
            return layer(*inputs, state["k"])

        hidden = checkpoint(custom_forward, hidden, use_reentrant=False)
        alias = state; alias["k"] = idx
    return hidden
'''),
}


@pytest.mark.parametrize("name", sorted(CHANGED_ELSEWHERE))
def test_a_value_changed_elsewhere_is_not_stated_as_the_condition(name: str) -> None:
    code, absent, source = CHANGED_ELSEWHERE[name]
    found = findings(source, code)
    assert found, name
    for d in found:
        assert absent not in d.message, (name, d.message)
