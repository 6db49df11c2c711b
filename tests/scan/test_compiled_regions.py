"""Code compiled for the neuron backend: an op the device cannot lower fails the whole graph's
compile (no eager CPU fallback inside a graph by default), so the scan predicts the refusal."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api

SOURCE = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return torch.sort(self.fc(x)).values


    @torch.compile(backend="neuron", dynamic=False)
    def rank(x):
        return torch.sort(x).values


    @torch.compile(backend="inductor")
    def elsewhere(x):
        return torch.sort(x).values


    def eager(x):
        return torch.sort(x).values


    net = Net().to("neuron")
    fast = torch.compile(net, dynamic=False)
    """
)


def test_fallback_ops_in_compiled_code_are_compile_refusals(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    report = api.scan(path, jobs=1, use_cache=False)
    found = {f.line: (f.code, f.category, f.status) for f in report.findings if "sort" in f.api}
    assert found[11] == ("NM943", "compile", "unsupported")  # Net.forward, compiled at line 30
    assert found[16] == ("NM943", "compile", "unsupported")  # under @torch.compile
    assert found[21][2] == "cpu_fallback"  # another backend's compile is not the device's
    assert found[25][2] == "cpu_fallback"  # eager: the per-op CPU fallback
    assert not report.passed  # the default gate fails on a compile the device refuses
    message = next(f.message for f in report.findings if f.line == 16 and f.code == "NM943")
    assert "line 14" in message and "aten::sort" in message


BARE_DECORATORS = textwrap.dedent(
    """\
    import torch
    from torch import compile as jit


    @torch.compile
    def one(x):
        return torch.sort(x).values


    @jit
    async def two(x):
        return torch.sort(x).values


    class Holder:
        @staticmethod
        @torch.compile
        def three(x):
            return torch.sort(x).values


    def outer(x):
        @torch.compile
        def inner(y):
            return torch.sort(y).values

        return inner(x) + torch.sort(x).values
    """
)


def test_bare_compile_decorators_mark_their_functions(tmp_path: Path) -> None:
    """`@torch.compile` without a call, through an alias, stacked, and on a nested function."""
    path = tmp_path / "m.py"
    path.write_text(BARE_DECORATORS)
    report = api.scan(path, jobs=1, use_cache=False)
    status = {f.line: f.status for f in report.findings if "sort" in f.api}
    assert status == {
        7: "unsupported",
        12: "unsupported",
        19: "unsupported",
        25: "unsupported",
        27: "cpu_fallback",  # the enclosing function is not compiled
    }
