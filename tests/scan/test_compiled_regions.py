"""Code compiled for the neuron backend: an op the device cannot lower fails the whole graph's
compile (no eager CPU fallback inside a graph by default), so the scan predicts the refusal. Which
eager statuses have no lowering is the matrix's `compile.graph_refuses` (the simulated device
reads the same list); an op without an eager kernel (`cpu_fallback`) is lowered with its graph."""

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


def test_compiled_code_is_judged_by_what_the_graph_refuses(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    report = api.scan(path, jobs=1, use_cache=False)
    found = {f.line: f for f in report.findings if "sort" in f.api}
    # Net.forward (compiled at line 30) and the @torch.compile function: aten::sort has no
    # eager kernel but the graph lowers it, so neither a refusal nor a CPU fallback.
    for line in (11, 16):
        assert (found[line].code, found[line].status) == ("NM901", "native"), line
        assert found[line].confidence == "low"
        assert "compiled by torch.compile at line" in found[line].message
        assert "cpu_fallback in eager mode" in found[line].message
    assert found[21].status == "cpu_fallback"  # another backend's compile is not the device's
    assert found[25].status == "cpu_fallback"  # eager: the per-op CPU fallback
    assert report.passed


REFUSED = textwrap.dedent(
    """\
    import torch


    @torch.compile(backend="neuron", dynamic=False)
    def squash(x):
        return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)


    def eager(x):
        return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
    """
)


def test_an_op_without_a_lowering_in_compiled_code_is_a_compile_refusal(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(REFUSED)
    report = api.scan(path, jobs=1, use_cache=False)
    found = {f.line: f for f in report.findings if "quantize" in f.api}
    refusal = found[6]
    assert (refusal.code, refusal.category, refusal.status) == ("NM943", "compile", "unsupported")
    assert "line 4" in found[6].message and "aten::quantize_per_tensor" in found[6].message
    assert found[10].code != "NM943" and found[10].status == "unsupported"  # eager refusal
    assert not report.passed


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
        7: "native",  # lowered with its graph (low confidence)
        12: "native",
        19: "native",
        25: "native",
        27: "cpu_fallback",  # the enclosing function is not compiled
    }
