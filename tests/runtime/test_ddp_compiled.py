"""DDP inside `torch.compile(backend="neuron", dynamic=False)` on two ranks (native engine).

What the backend is handed: a compiled step that calls a DDP model gives it the forward and
backward graphs with static shapes (and, with `optimize_ddp="python_reducer"` and compiled
autograd, the backward as one graph over a list of inputs); no SymInt reaches it, so no graph
is refused as dynamic. A DDP-wrapped model compiled whole hands it nothing on torch 2.13: dynamo
breaks the graph at DDP's logger and at its skipped `_inside_ddp_forward`, and the model runs
eagerly (seen on plain CPU with gloo and a backend that counts its graphs too: none).
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.slow]
pytest.importorskip("torch")

STEP = """\
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

if sys.argv[1] == "python_reducer":
    torch._dynamo.config.optimize_ddp = "python_reducer"
    torch._dynamo.config.compiled_autograd = True
dist.init_process_group("neuron")
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = DDP(net.to("neuron"))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile(backend="neuron", dynamic=False)
def step(x):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    return loss


for i in range(3):
    opt.zero_grad()
    x = torch.full((3, 16), float(dist.get_rank() + i), device="neuron")
    loss = step(x)
weights = sum(p.sum().item() for p in model.parameters())
print(f"rank={dist.get_rank()} weights={weights:.6f}")
dist.destroy_process_group()
"""


@pytest.mark.parametrize(("reducer", "port"), [("default", "29641"), ("python_reducer", "29642")])
def test_ddp_in_a_static_compile_is_not_refused_as_dynamic(
    sim_run, tmp_path, monkeypatch, reducer: str, port: str
) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_SIM_ENGINE", "native")
    script = tmp_path / "ddp_step.py"
    script.write_text(STEP, encoding="utf-8")
    command = ["torchrun", "--nproc-per-node", "2", "--master-port", port, str(script), reducer]
    run = sim_run(None, command=command)
    assert run.exit_code == 0, run.err
    weights = dict(re.findall(r"rank=(\d) weights=(-?\d+\.\d{6})", run.out))
    assert set(weights) == {"0", "1"} and weights["0"] == weights["1"], run.out
    graphs = run.trace["compile"]["graphs"]
    assert graphs and all(graph["ok"] for graph in graphs), graphs
    assert not any(r["kind"] == "dynamic_shapes" for g in graphs for r in g["refused"])
