"""NxD's parallel_cross_entropy and the helper the rewrite gives for it (NM873) compute the same
on two gloo ranks: from each rank's vocabulary part of the logits, the per-token loss and the
logits' gradient equal the NxD stand-in's (written from NxD's loss_functions.py) and the full
cross entropy on one process, and so does a column-parallel head (gather_output=False) trained
through the helper: its weight's gradient parts are those of the full head."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod import nxd_grads_helpers, tp_helpers
from tests.e2e.stand_in_ranks import run_with_helpers

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]


SCRIPT = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from neuronx_distributed.parallel_layers import parallel_state
from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy

HELPERS

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
parallel_state.initialize_model_parallel(tensor_model_parallel_size=world)
# the helpers' mesh, on the CPU (neuron_init_device_mesh makes it on the device)
neuron_device_mesh.mesh = init_device_mesh("cpu", (1, world), mesh_dim_names=("dp", "tp"))


def report(name, same):
    print(f"LOSS {name} rank={rank} same={same}", flush=True)


seed = torch.Generator().manual_seed(0)
full = torch.randn(2, 3, 8, generator=seed)
target = torch.randint(8, (2, 3), generator=seed)
weights = torch.rand(2, 3, generator=seed)  # a gradient that differs per token

whole = full.clone().requires_grad_()
expected = F.cross_entropy(whole.flatten(0, 1), target.flatten(), reduction="none").view(2, 3)
(expected * weights).sum().backward()
expected_grad = whole.grad.chunk(world, -1)[rank]

nxd_part = full.chunk(world, -1)[rank].clone().requires_grad_()
nxd = parallel_cross_entropy(nxd_part * 1, target)  # NxD shifts its input in place
(nxd * weights).sum().backward()

part = full.chunk(world, -1)[rank].clone().requires_grad_()
loss = neuron_parallel_cross_entropy(part, target)
(loss * weights).sum().backward()
report("loss_is_nxds", torch.allclose(loss, nxd) and loss.shape == nxd.shape)
report("loss_is_full", torch.allclose(loss, expected))
report("grad_is_nxds", torch.allclose(part.grad, nxd_part.grad))
report("grad_is_full", torch.allclose(part.grad, expected_grad))
report("logits_left", torch.equal(part.detach(), full.chunk(world, -1)[rank]))

# a head split by vocabulary feeding the loss, as NxD's models do
hidden = torch.randn(2, 3, 4, generator=seed)
head_weight = torch.randn(8, 4, generator=seed)
full_head = torch.nn.Linear(4, 8, bias=False)
head = torch.nn.Linear(4, 8, bias=False)
with torch.no_grad():
    full_head.weight.copy_(head_weight), head.weight.copy_(head_weight)
head = neuron_column_parallel(head, gather_output=False)
logits = full_head(hidden)
F.cross_entropy(logits.flatten(0, 1), target.flatten()).backward()
neuron_parallel_cross_entropy(head(hidden), target).mean().backward()
grad_part = full_head.weight.grad.chunk(world, 0)[rank]
report("head_grad_is_full", torch.allclose(head.weight.grad.to_local(), grad_part))
dist.destroy_process_group()
"""

LINE = re.compile(r"LOSS (\w+) rank=(\d) same=(True|False)")


def test_parallel_cross_entropy_helper_is_nxds_and_the_full_loss(tmp_path: Path) -> None:
    helpers = [
        tp_helpers.DEVICE_MESH,
        tp_helpers.NXD_INIT,
        tp_helpers.COLUMN_PARALLEL,
        nxd_grads_helpers.PARALLEL_CROSS_ENTROPY_FUNCTION,
        nxd_grads_helpers.PARALLEL_CROSS_ENTROPY,
    ]
    printed = run_with_helpers(tmp_path / "loss.py", SCRIPT, helpers)
    found = {(name, int(rank)): same for name, rank, same in LINE.findall(printed)}
    names = (
        "loss_is_nxds",
        "loss_is_full",
        "grad_is_nxds",
        "grad_is_full",
        "logits_left",
        "head_grad_is_full",
    )
    assert sorted(found) == sorted((n, r) for n in names for r in (0, 1)), printed
    assert all(same == "True" for same in found.values()), found
