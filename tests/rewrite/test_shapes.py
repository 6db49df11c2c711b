"""Shapes the newer rewrites refuse: each keeps its code and gets its rule's marker."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset

XM = "import torch_xla.core.xla_model as xm\n\n"

MARKED = [
    # the result overwrites the input: the shard would be allocated over the tensor it reads
    ("NM304", XM + "def f(g, n):\n    g = xm.reduce_scatter(xm.REDUCE_SUM, g, 1.0, 0, n)\n"),
    # the result is discarded
    ("NM304", XM + "def f(g, n):\n    xm.reduce_scatter(xm.REDUCE_SUM, g, 1.0, 0, n)\n"),
    # bitwise reductions: not every backend reduce-scatters them
    ("NM304", XM + "def f(g, n):\n    s = xm.reduce_scatter(xm.REDUCE_AND, g, 1.0, 0, n)\n"),
    # an expression as input would be evaluated three times
    ("NM304", XM + "def f(g, n):\n    s = xm.reduce_scatter('sum', g * 2, 1.0, 0, n)\n"),
    # an output buffer
    ("NM304", XM + "def f(g, o, n):\n    s = xm.reduce_scatter('sum', g, 1.0, 0, n, output=o)\n"),
    # a nested f-string would need Python 3.12
    ("NM110", XM + 'print(f"{xm.get_xla_supported_devices()}")\n'),
    ("NM110", XM + "names = xm.get_xla_supported_devices(devkind='TPU')\n"),
    ("NM110", "import torch_xla\n\nlisting = torch_xla.devices\n"),
    ("NM514", XM + "with xm.fork_rng(device):\n    pass\n"),
    # arguments unpacked: which ones, the rewrite cannot tell
    ("NM501", XM + "def f(opt, options):\n    xm.optimizer_step(opt, **options)\n"),
]


@pytest.mark.parametrize(("code", "source"), MARKED)
def test_refused_shapes_are_marked_and_left_alone(code, source):
    result = rewrite_source(source, unsafe=True)
    rule = load_ruleset().get(code)
    assert rule.marker() in result.new
    assert {o.status for o in result.outcomes if o.code == code} == {"marked"}
    body = source.split("\n\n", 1)[1]
    for line in body.splitlines():
        assert line in result.new.splitlines()


def test_reduce_scatter_on_one_line_with_other_statements():
    source = XM + "def f(g, n):\n    a = 1; s = xm.reduce_scatter('min', g, 2, 0, n); b = 2\n"
    new = rewrite_source(source).new
    ast.parse(new)
    assert "dist.reduce_scatter_tensor(s, g, op=dist.ReduceOp.MIN); s.mul_(2); b = 2" in new


def test_grad_scaler_positional_arguments_follow_the_device():
    source = "import torch_xla.amp as amp\n\nscaler = amp.GradScaler(1024.0, 2.0, enabled=on)\n"
    assert rewrite_source(source).new.endswith("scaler = amp.GradScaler(1024.0, 2.0, enabled=on)\n")
    new = rewrite_source(source, unsafe=True).new
    assert new == (
        'import torch\n\nscaler = torch.amp.GradScaler("neuron", 1024.0, 2.0, enabled=on)\n'
    )


def test_devices_list_inside_an_f_string_uses_the_other_quote():
    source = 'import torch_xla\n\nprint(f"{torch_xla.devices()}")\n'
    new = rewrite_source(source).new
    ast.parse(new)
    assert "torch.device('neuron', i) for i in range(torch.neuron.device_count())" in new


def test_two_sites_of_one_rule_on_a_line_get_one_marker():
    source = XM + 'free = xm.get_memory_info(d)["kb_free"] / xm.get_memory_info(d)["kb_total"]\n'
    result = rewrite_source(source)
    marker = load_ruleset().get("NM116").marker()
    assert result.new.count(marker) == 1
    assert [o.status for o in result.outcomes if o.code == "NM116"] == ["marked", "marked"]
    assert rewrite_source(result.new).new == result.new


def test_compile_with_dynamic_known_only_at_run_time_is_marked():
    source = (
        "import torch\n\n"
        "def build(model, args):\n"
        "    return torch.compile(model, backend='openxla', dynamic=args.dynamic)\n"
    )
    result = rewrite_source(source)
    assert "TODO(neuron-migrate NM120)" in result.new
    assert "backend='openxla', dynamic=args.dynamic" in result.new
    assert [o.status for o in result.outcomes] == ["marked"]


def test_marker_for_a_site_inside_a_made_if_goes_above_the_statement_that_holds_it():
    """master_print of names becomes `if <master>: print(...)`; a marked site among its
    arguments is marked above the print, where the next run finds it (above the `if`, it was
    added again)."""
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "def report(epoch):\n"
        "    xm.master_print('epoch', epoch, 'memory', xm.get_memory_info)\n"
    )
    new = rewrite_source(source).new
    lines = new.splitlines()
    at = lines.index("        print('epoch', epoch, 'memory', xm.get_memory_info)")
    assert lines[at - 1] == "        " + load_ruleset().get("NM116").marker()
    assert lines[at - 2] == (
        "    if (dist.get_rank() if dist.is_initialized()"
        ' else int(os.environ.get("RANK", 0))) == 0:'
    )
    assert rewrite_source(new).new == new
