"""What the rewrite reports for each site matches what it did to the code."""

from __future__ import annotations

from neuron_migrate.rewrite.codemod.engine import rewrite_source

XM = "import torch_xla.core.xla_model as xm\n\n"


def _statuses(source: str, code: str) -> dict[int, str]:
    result = rewrite_source(source)
    return {o.line: o.status for o in result.outcomes if o.code == code}


def test_reduce_constant_shares_the_outcome_of_the_collective_it_is_passed_to():
    source = XM + (
        "def f(x, options):\n"
        "    a = xm.all_reduce(xm.REDUCE_SUM, x)\n"
        "    xm.all_reduce(xm.REDUCE_MAX, [x], **options)\n"
        "    return a\n"
    )
    new = rewrite_source(source).new
    # the list reduced with arguments unpacked stays as it was, constant included
    assert "    xm.all_reduce(xm.REDUCE_MAX, [x], **options)" in new
    assert "dist.ReduceOp.SUM" in new
    assert _statuses(source, "NM302") == {4: "rewritten", 5: "marked"}
    assert _statuses(source, "NM301") == {4: "rewritten", 5: "marked"}


def test_reduce_constant_in_a_torch_xla_call_without_a_rule_is_left_for_a_person():
    source = XM + "y = xm.unknown_collective(xm.REDUCE_SUM, x)\n"
    assert "xm.REDUCE_SUM" in rewrite_source(source).new
    assert _statuses(source, "NM302") == {3: "marked"}
