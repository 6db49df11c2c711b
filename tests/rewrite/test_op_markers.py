"""Ops the device refuses get a marker from `rewrite` with their rule's advice; the code stays."""

from __future__ import annotations

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset

SOURCE = (
    "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
    "def norms(x):\n"
    "    device = xm.xla_device()\n"
    "    s = x.to(device).to_sparse()\n"
    "    m = torch.sparse.mm(s, x)\n"
    "    return s, m\n"
)


def test_an_unsupported_op_is_marked_above_its_statement_and_left_as_it_is():
    result = rewrite_source(SOURCE)
    lines = result.new.splitlines()
    op = lines.index("    s = x.to(device).to_sparse()")
    assert lines[op - 1] == "    " + load_ruleset().get("NM903").marker()
    namespace = lines.index("    m = torch.sparse.mm(s, x)")
    assert lines[namespace - 1] == "    " + load_ruleset().get("NM920").marker()
    marked = {(o.code, o.line) for o in result.outcomes if o.status == "marked"}
    assert {("NM903", 7), ("NM920", 8)} <= marked
    apis = {o.api for o in result.outcomes if o.code in ("NM903", "NM920")}
    assert apis == {"Tensor.to_sparse", "torch.sparse.mm"}
    assert rewrite_source(result.new).new == result.new


def test_the_advice_is_rule_data():
    for code in ("NM903", "NM920"):
        advice = load_ruleset().get(code).manual or ""
        assert "host" in advice or "cpu" in advice.lower()


def test_a_file_without_torch_xla_is_still_never_touched():
    source = "import torch\n\ns = torch.ones(2, 2).to_sparse()\n"
    assert rewrite_source(source).new == source
