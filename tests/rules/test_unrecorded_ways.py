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
