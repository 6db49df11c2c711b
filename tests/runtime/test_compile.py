"""torch.compile(backend="neuron"): static shapes, counted recompiles, whole graphs lowered,
the compile-failure rule and modes as released."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

COMPILE = """
import torch, torch.nn as nn
from neuron_sim.errors import NeuronCompileError

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to("neuron")
compiled = torch.compile(model, backend="neuron")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in (8, 8, 16, 4, 16):  # 3 shapes: 1 compile + 2 recompiles
    loss = compiled(torch.randn(batch, 8, device="neuron")).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
assert loss.device.type == "neuron" and model[0].weight.grad is None

def doubled(t):
    return t * 2

try:  # rejected when the graph compiles, at its first call
    torch.compile(doubled, backend="neuron", dynamic=True)(torch.randn(8, device="neuron"))
except Exception as error:
    assert "dynamic=True" in str(error), error
else:
    raise AssertionError("dynamic=True must be refused")

# Ops without an eager device kernel (cpu_fallback) are lowered by the compiler.
def uses_sort(x):
    return torch.sort(x).values * 2

x = torch.randn(5, device="neuron")
assert torch.equal(torch.compile(uses_sort, backend="neuron")(x).cpu(), uses_sort(x).cpu())
normed = nn.BatchNorm1d(4).to("neuron")
batch = torch.randn(3, 4, device="neuron")
assert torch.allclose(torch.compile(normed, backend="neuron")(batch).cpu(), normed(batch).cpu())

def with_break(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1

torch.compile(with_break, backend="neuron")(torch.randn(3, device="neuron"))

torch.compiler.set_default_backend("neuron")
assert torch.compile(lambda x: x.relu())(torch.randn(3, device="neuron")).device.type == "neuron"

def add_one(x):
    return x + 1

limited = torch.compile(add_one, backend="neuron")
try:
    for n in range(1, 12):
        limited(torch.randn(n, device="neuron"))
except Exception as error:
    assert "recompile" in str(error).lower(), error
else:
    raise AssertionError("hitting the recompile limit must be an error")
print("COMPILE_OK")
"""


def test_compile_backend(sim_run) -> None:
    run = sim_run(COMPILE)
    run.assert_finished("COMPILE_OK")
    compile_ = run.trace["compile"]
    graphs = compile_["graphs"]
    # Compiled modules share a frame (dynamo's wrapper); the BatchNorm1d's graph is another
    # input signature of it.
    model_graphs = [
        g
        for g in graphs
        if g["frame"] == graphs[0]["frame"] and g["ok"] and "[4]" not in g["signature"]
    ]
    assert len(model_graphs) == 3
    assert [g["recompile"] for g in model_graphs] == [False, True, True]
    assert {g["signature"].split(", ")[2] for g in model_graphs} == {
        "float32[8x8]@neuron",
        "float32[16x8]@neuron",
        "float32[4x8]@neuron",
    }
    assert all(g["forward_ops"] > 0 and g["backward_ops"] > 0 for g in model_graphs)
    failed = [g for g in graphs if not g["ok"]]
    assert len(failed) == 1 and failed[0]["error"] == "dynamic shapes"
    assert compile_["failures"] == 1
    assert compile_["graph_breaks"] >= 1
    assert compile_["recompile_limit_hits"] == 1
    assert compile_["recompiles"] >= 2 + 7


FACTORIES_IN_GRAPH = """
import torch, torch.nn as nn

class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.pos = nn.Embedding(32, 8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, tokens):
        n = tokens.shape[1]
        positions = torch.arange(n, device=tokens.device)  # a factory inside the graph
        mask = nn.Transformer.generate_square_subsequent_mask(n, device=tokens.device)
        x = self.embed(tokens) + self.pos(positions)
        x, _ = self.attn(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)
        return x.sum()

torch.manual_seed(0)
model = TinyLM().to("neuron")
tokens = torch.randint(0, 16, (2, 8)).to("neuron")
eager = model(tokens)
eager.backward()
eager_grad = model.pos.weight.grad.cpu().clone()
model.zero_grad()

compiled = torch.compile(model, backend="neuron", dynamic=False)
loss = compiled(tokens)
loss.backward()
assert loss.device.type == "neuron"
assert torch.allclose(loss.cpu(), eager.cpu(), atol=1e-5), (loss, eager)
assert torch.allclose(model.pos.weight.grad.cpu(), eager_grad, atol=1e-5)

def made_here(x):
    tenths = torch.full((3,), 0.1, dtype=torch.float64, device="neuron")
    return x + tenths, torch.arange(3, device=x.device)

total, index = torch.compile(made_here, backend="neuron")(torch.ones(3, device="neuron"))
assert total.device.type == index.device.type == "neuron"
# float64 reported, float32 computed: 1.1 as float32 has it, not as float64 has it
as_float32 = torch.tensor(1.1, dtype=torch.float32).item()
assert total.dtype is torch.float64 and total.cpu().tolist() == [as_float32] * 3 != [1.1] * 3
assert index.cpu().tolist() == [0, 1, 2]
print("FACTORIES_OK")
"""


def test_factories_inside_compiled_graphs(sim_run) -> None:
    # Regression: `torch.arange(n, device=tokens.device)` inside a compiled region failed while
    # AOTAutograd traced it (a FakeTensor on the neuron device reached the boundary kernels).
    run = sim_run(FACTORIES_IN_GRAPH)
    run.assert_finished("FACTORIES_OK")
    graphs = run.trace["compile"]["graphs"]
    assert len(graphs) == 2 and all(g["ok"] for g in graphs), graphs
    assert graphs[0]["backward_ops"] > 0
    assert run.trace["compile"]["graph_breaks"] == 0


IN_PLACE_VIEWS = """
import torch

def reshaped(x):
    y = x.clone()
    y.t_()
    z = y + 1
    y.unsqueeze_(0)
    return z, y * 2

def resized_out(x):
    out = torch.empty(0, device=x.device)
    torch.add(x, 1, out=out)  # resizes `out`
    return (out * 2,)

view = torch.arange(6.0, device="neuron").view(2, 3)
plain = torch.randn(2, 3, device="neuron")
for fn, arg, shapes in (
    (reshaped, view, [(3, 2), (1, 3, 2)]),
    (reshaped, plain, [(3, 2), (1, 3, 2)]),
    (resized_out, plain, [(2, 3)]),
):
    eager = fn(arg)
    compiled = torch.compile(fn, backend="neuron")(arg)
    assert [t.shape for t in eager] == [t.shape for t in compiled] == shapes, (fn, compiled)
    assert all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(eager, compiled))
print("IN_PLACE_VIEWS_OK")
"""


def test_in_place_view_ops_in_a_compiled_function_match_eager(sim_run) -> None:
    run = sim_run(IN_PLACE_VIEWS)
    run.assert_finished("IN_PLACE_VIEWS_OK")
    assert all(graph["ok"] for graph in run.trace["compile"]["graphs"])


SCRIPTED_TRAINING = """
import functools
import torch, torch.nn as nn, torch._dynamo
from neuron_sim import graph_runner

scripted = []
script = graph_runner._script
def counted(graph):
    scripted.append(script(graph))
    return scripted[-1]
graph_runner._script = counted

def losses():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 2))
    model = model.to("neuron")
    compiled = torch.compile(model, backend="neuron")
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    batch = torch.randn(4, 8).to("neuron")
    seen = []
    for _ in range(4):
        loss = compiled(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        seen.append(loss.item())
    return seen

through_torchscript = losses()
assert len(scripted) == 2, scripted  # the forward graph and the backward graph
torch._dynamo.reset()
graph_runner.runnable = functools.partial(graph_runner.runnable, script=False)  # the fx code
as_fx_code = losses()
assert through_torchscript == as_fx_code, (through_torchscript, as_fx_code)
assert as_fx_code[-1] < as_fx_code[0]
print("SCRIPTED_OK")
"""


def test_compiled_graphs_run_scripted_and_train_as_the_fx_code(sim_run) -> None:
    run = sim_run(SCRIPTED_TRAINING)
    run.assert_finished("SCRIPTED_OK")
    assert len(run.trace["compile"]["graphs"]) == 2


CNN = """
import torch, torch.nn as nn, warnings

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(4, 2),
).to("neuron")
images = torch.randn(4, 3, 8, 8).to("neuron")
eager = model(images)
compiled = torch.compile(model, backend="neuron", dynamic=False)
out = compiled(images)
assert torch.allclose(out.cpu(), eager.cpu(), atol=1e-5), (out, eager)
out.sum().backward()  # the backward graph (max_pool2d_with_indices_backward, ...) compiles too
assert model[0].weight.grad is not None

def with_literal(x):
    return torch.cat([torch.tensor([1.0, 2.0], device=x.device), x])

x = torch.randn(3, device="neuron")
assert torch.equal(torch.compile(with_literal, backend="neuron")(x).cpu(), with_literal(x).cpu())

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    tuned = torch.compile(with_literal, backend="neuron", mode="max-autotune")
    assert torch.equal(tuned(x).cpu(), with_literal(x).cpu())
    print(torch.ones(2, device="neuron"))
messages = [str(w.message) for w in caught]
tuned_warning = "mode='max-autotune'): only mode=\\"default\\" has an effect"
assert any(tuned_warning in m and "running as the default" in m for m in messages), messages
assert not any("float64" in m for m in messages), messages  # printing a float32 tensor
print("CNN_OK")
"""


def test_a_cnn_with_batchnorm_and_maxpool_compiles_and_matches_eager(sim_run) -> None:
    run = sim_run(CNN)
    run.assert_finished("CNN_OK")
    graphs = run.trace["compile"]["graphs"]
    assert graphs and all(g["ok"] for g in graphs), graphs
    assert not run.trace["downcasts"]


FALLBACK = """
import os, sys, warnings
import torch

def doubled(t):
    return t * 2

option = {"on": True, "off": False}.get(sys.argv[1])
options = None if option is None else {"fallback_execution": option}
x = torch.randn(4, device="neuron")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        out = torch.compile(doubled, backend="neuron", dynamic=True, options=options)(x)
    except Exception as error:
        assert "does not support dynamic=True" in str(error), error
        print("RAISED")
    else:
        assert torch.equal(out.cpu(), (x * 2).cpu())
        assert any("running the graph eagerly" in str(w.message) for w in caught)
        print("RAN_EAGERLY")
"""


@pytest.mark.parametrize(
    ("variable", "option", "outcome"),
    [
        (None, "none", "RAISED"),  # the released default: a compile failure raises
        ("1", "none", "RAISED"),
        ("0", "none", "RAN_EAGERLY"),  # 0 brings back the fall-back to eager
        ("0", "off", "RAISED"),  # the compile option wins over the variable
        (None, "on", "RAN_EAGERLY"),
    ],
)
def test_the_compile_failure_path_follows_the_variable_and_the_option(
    sim_run, monkeypatch: pytest.MonkeyPatch, variable, option, outcome
) -> None:
    if variable is None:
        monkeypatch.delenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", raising=False)
    else:
        monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", variable)
    run = sim_run(FALLBACK, option)
    run.assert_finished(outcome)
    (graph,) = run.trace["compile"]["graphs"]
    assert not graph["ok"] and graph["fell_back"] == (outcome == "RAN_EAGERLY")


GRAPH_REFUSES = """
import sys
import torch
import neuron_sim.compile_backend as backend

refuses = tuple(sys.argv[1].split(","))
matrix = backend._policy.matrix
backend._policy.matrix = matrix._replace(compile=matrix.compile._replace(graph_refuses=refuses))


@torch.compile(backend="neuron", dynamic=False)
def rank(x):
    return torch.sort(x).values


try:
    rank(torch.ones(4, device="neuron"))
except Exception as error:
    assert "aten::sort" in str(error), error
    print("REFUSED")
else:
    print("COMPILED")
"""


@pytest.mark.parametrize(
    ("refuses", "outcome"),
    [("unsupported", "COMPILED"), ("unsupported,cpu_fallback", "REFUSED")],
)
def test_which_ops_fail_a_graph_is_the_matrix_s_graph_refuses(sim_run, refuses, outcome) -> None:
    """aten::sort has no eager kernel (cpu_fallback): the graph lowers it unless the matrix's
    compile rules name cpu_fallback among the statuses that fail a graph."""
    run = sim_run(GRAPH_REFUSES, refuses)
    run.assert_finished(outcome)
