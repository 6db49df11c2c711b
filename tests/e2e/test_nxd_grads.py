"""NxD's grads module and the helpers the rewrite gives for it (NM870) compute the same on two
gloo ranks: neuron_grad_norm and neuron_clip_grad_norm over a tensor-parallel model's DTensor
parameters return the NxD stand-in's get_grad_norm / clip_grad_norm norm (the full parameters',
on both ranks), and neuron_clip_grad_norm leaves each rank the same clipped gradient part;
neuron_bucket_allreduce_gradients averages gradients that differ between the ranks over the
data-parallel group as bucket_allreduce_gradients does. The stand-in
(tests/e2e/cpu_xla/neuronx_distributed) is written from NxD's grads.py and layers.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod import nxd_grads_helpers, tp_helpers
from tests.e2e.stand_in_ranks import run_with_helpers

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]


SCRIPT = """
import sys
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate
from neuronx_distributed.parallel_layers import grads, parallel_state
from neuronx_distributed.parallel_layers.layers import ColumnParallelLinear, RowParallelLinear

HELPERS

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mode = sys.argv[1]
tp = world if mode == "clip" else 1
parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp)
# the helpers' mesh, on the CPU (neuron_init_device_mesh makes it on the device)
neuron_device_mesh.mesh = init_device_mesh("cpu", (world // tp, tp), mesh_dim_names=("dp", "tp"))


def report(name, same):
    print(f"GRADS {name} rank={rank} same={same}", flush=True)


if mode == "clip":
    seed = torch.Generator().manual_seed(0)
    w1, w2 = torch.randn(16, 8, generator=seed), torch.randn(4, 16, generator=seed)
    b2 = torch.randn(4, generator=seed)
    x = torch.randn(5, 8, generator=seed)
    target = torch.randn(5, 4, generator=seed)

    def copy_of(full):
        return lambda weight: weight.data.copy_(full)

    # NxD: a column-parallel layer feeding a row-parallel one (each rank its parts), a bias
    # every rank holds whole
    col = ColumnParallelLinear(8, 16, bias=False, gather_output=False, init_method=copy_of(w1))
    row = RowParallelLinear(16, 4, input_is_parallel=True, init_method=copy_of(w2))
    with torch.no_grad():
        row.bias.copy_(b2)
    loss = ((row(torch.relu(col(x))) - target) ** 2).sum()
    loss.backward()
    nxd_total = grads.get_grad_norm([col.weight, row.weight, row.bias])
    nxd_norm = grads.clip_grad_norm([col.weight, row.weight, row.bias], 0.5)

    # migrated: full-size nn.Linear layers sharded by their styles
    lin1, lin2 = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 4)
    with torch.no_grad():
        lin1.weight.copy_(w1), lin2.weight.copy_(w2), lin2.bias.copy_(b2)
    lin1 = neuron_column_parallel(lin1, gather_output=False)
    lin2 = neuron_row_parallel(lin2, input_is_parallel=True)
    loss = ((lin2(torch.relu(lin1(x))) - target) ** 2).sum()
    loss.backward()
    params = [lin1.weight, lin2.weight, lin2.bias]
    total = neuron_grad_norm(params)
    norm = neuron_clip_grad_norm(params, 0.5)

    # the full parameters' norm, on one process: what both must be
    full = [torch.nn.Parameter(t.clone()) for t in (w1, w2, b2)]
    loss = ((torch.relu(x @ full[0].T) @ full[1].T + full[2] - target) ** 2).sum()
    loss.backward()
    whole = torch.nn.utils.get_total_norm([p.grad for p in full])
    report("norm_is_nxds", torch.allclose(norm, nxd_norm) and norm.shape == nxd_norm.shape)
    report("norm_is_full", torch.allclose(norm, whole.reshape(1)))
    report("norm_is_plain", type(norm) is torch.Tensor)
    report("grad_norm_is_nxds", torch.allclose(total, nxd_total) and torch.allclose(total, norm))
    report("clipped", bool(norm > 0.5))
    pairs = zip([col.weight, row.weight, row.bias], params)
    report("grads_are_nxds", all(torch.allclose(a.grad, b.grad.to_local()) for a, b in pairs))
else:
    # two data-parallel ranks with gradients of their own: a plain one and a DTensor one
    seed = torch.Generator().manual_seed(rank)
    plain, local = torch.randn(3, 4, generator=seed), torch.randn(6, generator=seed)
    expected = [plain.clone(), local.clone()]
    for t in expected:
        dist.all_reduce(t)
        t /= world
    nxd = [plain.clone(), local.clone()]
    grads.bucket_allreduce_gradients(nxd)
    dtensor = DTensor.from_local(local.clone(), neuron_device_mesh()["tp"], [Replicate()])
    mine = [plain.clone(), dtensor]
    neuron_bucket_allreduce_gradients(mine)
    mine[1] = mine[1].to_local()
    report("mean_is_nxds", all(torch.allclose(a, b) for a, b in zip(nxd, mine)))
    report("mean", all(torch.allclose(a, b) for a, b in zip(expected, mine)))
dist.destroy_process_group()
"""

LINE = re.compile(r"GRADS (\w+) rank=(\d) same=(True|False)")


def _run(tmp_path: Path, mode: str) -> dict[tuple[str, int], str]:
    helpers = [
        tp_helpers.DEVICE_MESH,
        tp_helpers.COLUMN_PARALLEL,
        tp_helpers.ROW_PARALLEL,
        tp_helpers.NXD_INIT,
        nxd_grads_helpers.CLIP_GRAD_NORM,
        nxd_grads_helpers.GRAD_NORM,
        nxd_grads_helpers.BUCKET_ALLREDUCE,
    ]
    printed = run_with_helpers(tmp_path / "grads.py", SCRIPT, helpers, mode)
    return {(name, int(rank)): same for name, rank, same in LINE.findall(printed)}


def test_clipping_covers_the_full_parameters_as_nxds_did(tmp_path: Path) -> None:
    found = _run(tmp_path, "clip")
    names = (
        "norm_is_nxds",
        "norm_is_full",
        "norm_is_plain",
        "clipped",
        "grads_are_nxds",
        "grad_norm_is_nxds",
    )
    assert sorted(found) == sorted((n, r) for n in names for r in (0, 1)), found
    assert all(same == "True" for same in found.values()), found


def test_bucket_allreduce_is_the_data_parallel_mean_as_nxds(tmp_path: Path) -> None:
    found = _run(tmp_path, "mean")
    names = ("mean_is_nxds", "mean")
    assert sorted(found) == sorted((n, r) for n in names for r in (0, 1)), found
    assert all(same == "True" for same in found.values()), found
