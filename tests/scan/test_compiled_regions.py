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


STEP = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 4).to("neuron")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)


    @torch.compile(backend="neuron", dynamic=False)
    def train_step(x):
        opt.zero_grad()
        loss = model(x).mean()
        loss.backward()
        opt.step()
        return loss


    def eager_step(x):
        opt.step()
    """
)


def _step_findings(tmp_path: Path, refuses: tuple[str, ...] | None = None) -> list:  # type: ignore[type-arg]
    from neuron_migrate.scan.analysis import analyze_source
    from neuron_migrate.scan.scan_data import context_for

    context = context_for(api.plan_scan(tmp_path).target, None)
    if refuses is not None:
        matrix = context.matrix
        compile_rules = matrix.compile._replace(graph_refuses=refuses)
        context = context._replace(matrix=matrix._replace(compile=compile_rules))
    return list(analyze_source(STEP, "m.py", context).findings)


def test_an_optimizer_step_in_compiled_code_is_judged_by_its_compiled_graph_ops(
    tmp_path: Path,
) -> None:
    """The compiled Adam step's graph holds functional `_foreach_*` ops without an eager kernel
    (`_foreach_addcmul.Scalar` and four others): lowered, as the device does, so no refusal."""
    found = [f for f in _step_findings(tmp_path) if f.line == 13]
    assert [(f.code, f.status, f.confidence) for f in found] == [("NM901", "native", "low")]
    assert found[0].api == "torch.optim.Adam.step"
    assert "aten::_foreach_addcmul.Scalar" in found[0].message
    assert "aten::_foreach_pow.ScalarAndTensor" in found[0].aten  # not an eager step's op
    assert not [f for f in _step_findings(tmp_path) if f.line == 18]  # eager: the constructor's


def test_an_optimizer_step_whose_graph_ops_are_refused_is_a_compile_refusal(
    tmp_path: Path,
) -> None:
    """With a matrix whose compile rules refuse ops without an eager kernel, the same step is
    reported at `opt.step()`, naming the foreach ops the graph cannot lower."""
    found = [f for f in _step_findings(tmp_path, ("cpu_fallback", "unsupported")) if f.line == 13]
    assert [(f.code, f.status) for f in found] == [("NM943", "unsupported")]
    assert "aten::_foreach_addcmul.Scalar" in found[0].message
    assert "aten::_foreach_neg" in found[0].message


def test_a_compile_under_a_condition_leaves_the_function_eager(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import sys
        import torch


        def rank(x):
            return torch.sort(x).values


        if "--compile" in sys.argv:
            rank = torch.compile(rank, dynamic=False)

        if __name__ == "__main__":
            fast = torch.compile(rank, dynamic=False)
        """
    )
    path = tmp_path / "m.py"
    path.write_text(source.replace("fast = torch.compile(rank, dynamic=False)", "fast = rank"))
    eager = api.scan(path, jobs=1, use_cache=False, fail_on=("none",))
    assert [f.status for f in eager.findings if f.line == 6] == ["cpu_fallback"]
    path.write_text(source)  # a script's main guard is no condition
    compiled = api.scan(path, jobs=1, use_cache=False, fail_on=("none",))
    assert [f.status for f in compiled.findings if f.line == 6] == ["native"]
