"""The test-only NxD stand-in (tests/e2e/cpu_xla/neuronx_distributed) keeps NxD's math: a
tensor-parallel MLP of ColumnParallelLinear (gather_output=False) and RowParallelLinear
(input_is_parallel=True) trains, at tensor-parallel size 2 under torchrun on gloo and at size 1,
exactly like the plain nn.Linear MLP built from the same seed (NxD splits one master weight
initialised as nn.Linear initialises its own). Biases are off: NxD initialises them per partition,
so with biases NxD equals the plain model only at size 1 (which the second case checks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.stand_in_ranks import run_on_ranks

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]


SCRIPT = """
import os, sys
import torch
import torch.distributed as dist
import torch.nn.functional as F
from neuronx_distributed.parallel_layers import parallel_state
from neuronx_distributed.parallel_layers.layers import ColumnParallelLinear, RowParallelLinear

bias = sys.argv[1] == "bias"
dist.init_process_group("gloo")
parallel_state.initialize_model_parallel(tensor_model_parallel_size=dist.get_world_size())


class NxdMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = ColumnParallelLinear(16, 64, bias=bias, gather_output=False)
        self.down = RowParallelLinear(64, 16, bias=bias, input_is_parallel=True)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class PlainMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(16, 64, bias=bias)
        self.down = torch.nn.Linear(64, 16, bias=bias)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def train(model):
    torch.manual_seed(1)
    data = [(torch.randn(8, 16), torch.randn(8, 16)) for _ in range(4)]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in data:
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
nxd = train(NxdMLP())
torch.manual_seed(0)
plain = train(PlainMLP())
print(f"RANK {dist.get_rank()} NXD {nxd} PLAIN {plain}", flush=True)
dist.destroy_process_group()
"""

LINE = re.compile(r"RANK (\d) NXD \[([^\]]*)\] PLAIN \[([^\]]*)\]")


def _run(tmp_path: Path, processes: int, bias: bool) -> list[tuple[int, list[float], list[float]]]:
    script = tmp_path / "tp_mlp.py"
    script.write_text(SCRIPT)
    done = run_on_ranks(script, "bias" if bias else "nobias", processes=processes)
    assert done.returncode == 0, done.stderr[-3000:]
    found = []
    for rank, nxd, plain in LINE.findall(done.stdout):
        found.append((int(rank), _floats(nxd), _floats(plain)))
    assert sorted(r for r, _, _ in found) == list(range(processes)), done.stdout
    return found


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


@pytest.mark.parametrize(("processes", "bias"), [(2, False), (1, True)])
def test_stand_in_tensor_parallel_mlp_trains_like_the_plain_one(
    tmp_path: Path, processes: int, bias: bool
) -> None:
    for _, nxd, plain in _run(tmp_path, processes, bias):
        assert len(nxd) == len(plain) == 4
        assert nxd == pytest.approx(plain, rel=1e-5, abs=1e-6)
