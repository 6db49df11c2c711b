"""The compile pass that makes a graph's int64 values wrap as int32, as eager device ops do."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

from neuron_sim import graph_runner  # noqa: E402 (needs torch)
from neuron_sim.int64_graph import wrap_int64_values  # noqa: E402


def _traced(fn, *args):
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(fn)(*args)


def _position_arithmetic(t):
    doubled = t + t  # 2**30 + 2**30 leaves int32 range
    shifted = doubled.view(-1, 1).expand(-1, 2)  # views of a wrapped value
    return (doubled // 2).sum(), shifted, torch.sort(t * 3).values


def _as_int32(fn, t):
    """What `fn` gives when every int64 value is an int32, computed in int32 itself."""
    return tuple(r.long() for r in fn(t.int()))


def test_every_int64_value_a_graph_computes_wraps_and_the_graph_still_scripts() -> None:
    t = torch.tensor([2**30, 3, 2**29])
    graph = _traced(_position_arithmetic, t)
    unwrapped = graph.forward(t)
    assert unwrapped[0].item() == 2**30 + 3 + 2**29  # 64 bits inside the graph

    # add, floor_divide, sum, mul, sort's values: not the views, not sort's unread indices
    assert wrap_int64_values(graph) == 5
    run = graph_runner.runnable(graph)
    assert run != graph.forward  # TorchScript takes the wraps: no Python call per op
    for _ in range(3):
        results = run(t)
        expected = _as_int32(_position_arithmetic, t)
        assert all(torch.equal(r, e) for r, e in zip(results, expected, strict=True))
        assert all(r.dtype is torch.int64 for r in results)


def test_a_graph_without_int64_arithmetic_is_left_as_it_is() -> None:
    x, labels = torch.randn(4, 3), torch.tensor([0, 2, 1, 0])

    def loss(x, labels):
        return torch.nn.functional.cross_entropy(x.relu(), labels)

    graph = _traced(loss, x, labels)
    code = graph.code
    assert wrap_int64_values(graph) == 0
    assert graph.code == code
