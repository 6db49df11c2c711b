"""NxD's region functions and the helpers the rewrite gives for them (NM840) run the same
collective forward and backward: on two gloo ranks each helper's output and its input's
gradient equal the NxD stand-in's (tests/e2e/cpu_xla/neuronx_distributed, written from NxD's
mappings.py), for inputs and output gradients that differ between the ranks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod import tp_helpers
from tests.e2e.stand_in_ranks import run_with_helpers

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]


SCRIPT = """
import sys
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from neuronx_distributed.parallel_layers import mappings, parallel_state

HELPERS

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
parallel_state.initialize_model_parallel(tensor_model_parallel_size=world)
# the helpers' mesh, on the CPU (neuron_init_device_mesh makes it on the device)
neuron_device_mesh.mesh = init_device_mesh("cpu", (1, world), mesh_dim_names=("dp", "tp"))
pairs = {
    "copy": (mappings.copy_to_tensor_model_parallel_region, neuron_copy_to_tp_region),
    "reduce": (mappings.reduce_from_tensor_model_parallel_region, neuron_reduce_from_tp_region),
    "scatter": (mappings.scatter_to_tensor_model_parallel_region, neuron_scatter_to_tp_region),
    "gather": (mappings.gather_from_tensor_model_parallel_region, neuron_gather_from_tp_region),
}
for name, (nxd, helper) in pairs.items():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(rank))
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = nxd(a), helper(b)
    grad = torch.randn(ya.shape, generator=torch.Generator().manual_seed(10 + rank))
    (ya * grad).sum().backward()
    (yb * grad).sum().backward()
    same = torch.allclose(ya, yb) and torch.allclose(a.grad, b.grad)
    print(f"REGION {name} rank={rank} same={same}", flush=True)
dist.destroy_process_group()
"""

LINE = re.compile(r"REGION (\w+) rank=(\d) same=(True|False)")


def test_each_region_helper_runs_nxds_collectives_forward_and_backward(tmp_path: Path) -> None:
    helpers = [
        tp_helpers.DEVICE_MESH,
        tp_helpers.COPY_TO_REGION,
        tp_helpers.REDUCE_FROM_REGION,
        tp_helpers.SCATTER_TO_REGION,
        tp_helpers.GATHER_FROM_REGION,
    ]
    printed = run_with_helpers(tmp_path / "regions.py", SCRIPT, helpers)
    found = {(name, int(rank)): same for name, rank, same in LINE.findall(printed)}
    names = ("copy", "reduce", "scatter", "gather")
    assert sorted(found) == sorted((n, r) for n in names for r in (0, 1)), printed
    assert all(same == "True" for same in found.values()), found
