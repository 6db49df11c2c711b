"""torch.compile(backend="neuron"): static shapes, counted recompiles, unlowerable ops refused."""

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

try:
    torch.compile(model, backend="neuron", dynamic=True)
except NeuronCompileError as error:
    assert "dynamic=True" in str(error)
else:
    raise AssertionError("dynamic=True must be refused")

def uses_sort(x):
    return torch.sort(x).values * 2

try:
    torch.compile(uses_sort, backend="neuron")(torch.randn(5, device="neuron"))
except Exception as error:
    assert "aten::sort (cpu_fallback" in str(error) and "script.py:23" in str(error), error
else:
    raise AssertionError("a graph with a fallback op must fail to compile")

# An op of torch's own modules: named with the line that called the compiled model.
normed = torch.compile(nn.BatchNorm1d(4).to("neuron"), backend="neuron")
try:
    normed(torch.randn(3, 4, device="neuron"))  # line 35
except Exception as error:
    assert "batch_norm" in str(error) and "(cpu_fallback, " in str(error), error
    assert "script.py:35)" in str(error), error
else:
    raise AssertionError("a graph with a fallback op must fail to compile")

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
    # Compiled modules share a frame (dynamo's wrapper); the BatchNorm1d's graph failed.
    model_graphs = [g for g in graphs if g["frame"] == graphs[0]["frame"] and g["ok"]]
    assert len(model_graphs) == 3
    assert [g["recompile"] for g in model_graphs] == [False, True, True]
    assert {g["signature"].split(", ")[2] for g in model_graphs} == {
        "float32[8x8]@neuron",
        "float32[16x8]@neuron",
        "float32[4x8]@neuron",
    }
    assert all(g["forward_ops"] > 0 and g["backward_ops"] > 0 for g in model_graphs)
    failed = [g for g in graphs if not g["ok"]]
    assert len(failed) == 2 and "aten::sort" in failed[0]["error"]
    assert compile_["failures"] == 2
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
