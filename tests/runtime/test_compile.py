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
    assert run.exit_code == 0, run.err
    assert "COMPILE_OK" in run.out
    compile_ = run.trace["compile"]
    graphs = compile_["graphs"]
    model_graphs = [g for g in graphs if g["frame"] == graphs[0]["frame"]]
    assert len(model_graphs) == 3
    assert [g["recompile"] for g in model_graphs] == [False, True, True]
    assert {g["signature"].split(", ")[2] for g in model_graphs} == {
        "float32[8x8]@neuron",
        "float32[16x8]@neuron",
        "float32[4x8]@neuron",
    }
    assert all(g["forward_ops"] > 0 and g["backward_ops"] > 0 for g in model_graphs)
    failed = [g for g in graphs if not g["ok"]]
    assert len(failed) == 1 and "aten::sort" in failed[0]["error"]
    assert compile_["failures"] == 1
    assert compile_["graph_breaks"] >= 1
    assert compile_["recompile_limit_hits"] == 1
    assert compile_["recompiles"] >= 2 + 7
