"""One API, one aten op: the traced call pattern a call is, chosen by its arguments."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api
from neuron_migrate.matrix.api_map import CallPattern, load_api_map
from neuron_migrate.scan.analyzer.overloads import choose

MAX = (
    CallPattern(("tensor:2",), (), ("aten::max",)),
    CallPattern(("tensor:2", "int"), (), ("aten::max.dim",)),
    CallPattern(("tensor:2", "int", "bool"), (), ("aten::max.dim",)),
    CallPattern(("tensor:2", "tensor:2"), (), ("aten::maximum",)),
)
CROSS_ENTROPY = (
    CallPattern(("tensor:2", "tensor:1"), (), ("aten::_log_softmax", "aten::nll_loss_forward")),
    CallPattern(("tensor:4", "tensor:3"), (), ("aten::_log_softmax", "aten::nll_loss2d_forward")),
)


def test_literal_arguments_choose_the_overload() -> None:
    dim = choose(MAX, ["1"], [("keepdim", "True")], method=True)
    assert dim is not None and dim.ops == ("aten::max.dim",) and not dim.depends
    whole = choose(MAX, [], [], method=True)
    assert whole is not None and whole.ops == ("aten::max",)


def test_a_call_that_cannot_tell_depends_on_the_input() -> None:
    unknown = choose(MAX, [None, None], [], method=False)  # torch.max(a, b)
    assert unknown is not None and unknown.depends
    assert set(unknown.ops) == {"aten::max.dim", "aten::maximum"}
    assert {ops for _, ops in unknown.others} == {("aten::max.dim",), ("aten::maximum",)}


def test_patterns_that_differ_only_in_rank_take_the_plain_one() -> None:
    plain = choose(CROSS_ENTROPY, [None, None], [], method=False)
    assert plain is not None and not plain.depends
    assert "aten::nll_loss2d_forward" not in plain.ops
    assert plain.others == (("(tensor:4, tensor:3)", CROSS_ENTROPY[1].ops),)


def test_the_bundled_map_keeps_the_traced_patterns_apart() -> None:
    amap = load_api_map("2.13")
    assert {p.ops for p in amap.patterns_for("Tensor.max")} >= {("aten::max.dim",)}
    assert amap.patterns_for("torch.nn.functional.cross_entropy")


SOURCE = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    logits = torch.randn(8, 5, device="neuron")
    target = torch.randint(0, 5, (8,), device="neuron")
    best = logits.max(1, keepdim=True)
    loss = F.cross_entropy(logits, target)
    either = torch.max(logits, target)
    """
)


def test_scan_reports_the_ops_of_the_call_it_sees(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    report = api.scan(tmp_path, jobs=1, use_cache=False, fail_on=("none",))
    found = {f.line: f for f in report.findings if f.category == "op"}
    assert found[6].aten == ("aten::max.dim",) and found[6].status == "native"
    assert "aten::maximum" not in found[6].aten
    assert found[7].status == "native" and "aten::nll_loss2d_forward" not in found[7].aten
    assert "inputs of other ranks" in found[7].message and "nll_loss2d" in found[7].message
    assert "depends on the input" in found[8].message and found[8].confidence == "low"
