"""Compiled graphs run in TorchScript's interpreter, with exactly the fx code's results."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")

from neuron_sim import graph_runner  # noqa: E402 (needs torch)


def _traced(fn, *args):
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(fn)(*args)


def _layer_norm_gelu(x, weight):
    normed = torch.nn.functional.layer_norm(x @ weight, (weight.shape[1],))
    return torch.nn.functional.gelu(normed).sum(0)


def test_a_graph_runs_scripted_with_the_fx_code_results() -> None:
    x, weight = torch.randn(5, 8), torch.randn(8, 6)
    graph = _traced(_layer_norm_gelu, x, weight)
    run = graph_runner.runnable(graph)
    assert run != graph.forward
    optimizing = torch._C._get_graph_executor_optimize()
    for _ in range(3):  # past TorchScript's first (profiling) calls
        assert torch.equal(run(x, weight), graph.forward(x, weight))
    assert torch._C._get_graph_executor_optimize() == optimizing  # left as it was


def _takes_varargs(*values):
    return values[0] + 1


torch.fx.wrap("_takes_varargs")


def test_a_graph_torchscript_cannot_take_runs_as_fx_code() -> None:
    graph = torch.fx.symbolic_trace(lambda x: _takes_varargs(x) * 2)
    run = graph_runner.runnable(graph)
    assert run == graph.forward
    assert torch.equal(run(torch.ones(3)), torch.full((3,), 4.0))


def test_a_scalar_graph_input_is_typed_from_its_traced_value() -> None:
    graph = torch.fx.symbolic_trace(lambda x, n: x * n)
    tensor, count = graph.graph.find_nodes(op="placeholder")
    tensor.meta["val"], count.meta["val"] = torch.ones(3), 2  # as AOTAutograd records them
    run = graph_runner.runnable(graph)
    assert run != graph.forward
    assert torch.equal(run(torch.ones(3), 5), torch.full((3,), 5.0))


def test_a_graph_input_of_unknown_type_runs_as_fx_code() -> None:
    graph = _traced(lambda x, n: x * n, torch.ones(3), 2)  # `n` has no traced value
    assert graph_runner.runnable(graph) == graph.forward


def test_a_scripted_graph_whose_first_call_fails_runs_as_fx_code_from_then_on() -> None:
    graph = torch.fx.symbolic_trace(lambda x, n: x * n)
    tensor, count = graph.graph.find_nodes(op="placeholder")
    tensor.meta["val"], count.meta["val"] = torch.ones(3), 2  # traced with an int
    run = graph_runner.runnable(graph)
    assert torch.equal(run(torch.ones(3), 0.5), torch.full((3,), 0.5))  # called with a float
    assert torch.equal(run(torch.ones(3), 3), torch.full((3,), 3.0))


def test_an_error_of_the_graph_itself_is_raised() -> None:
    graph = _traced(lambda x, y: x @ y, torch.ones(2, 3), torch.ones(3, 2))
    run = graph_runner.runnable(graph)
    with pytest.raises(RuntimeError):
        run(torch.ones(2, 3), torch.ones(2, 3))  # shapes that cannot multiply
