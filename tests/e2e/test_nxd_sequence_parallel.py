"""NeuronX Distributed sequence parallelism, migrated with `rewrite --apply` and run with no
hand edit (fixtures/e2e/nxd_sequence_parallel/train.py: the flag from a config, as NxD's Llama
example passes it).

Sequence parallelism changes where the sequence lives, not the math: the migrated program's
losses and gradient norms are equal on every rank, equal under `torchrun --nproc-per-node 2`
(tensor-parallel size 2, each rank holding half the sequence between the layers) and as one
process, and equal to the NxD original on the CPU stand-in at size 1. The original itself, on
the stand-in's sequence-parallel collectives, gives at size 2 the losses it gives at size 1
(the program's row-parallel biases start at zero, so NxD's per-partition bias bound draws
nothing that differs between the sizes); it runs unclipped there, since torch's
clip_grad_norm_ over NxD's plain shards clips each rank by its own part's norm. A norm whose
gradient were not summed over the ranks' sequence parts changes the migrated program's
gradient norms at size 2 (1.3946 for 1.4001 at the first step when the model's own marked
RMSNorm is replicated instead of given SequenceParallel).
"""

from __future__ import annotations

import re

import pytest

from neuron_migrate.rewrite.codemod import gqa_helpers, sp_helpers, tp_helpers
from tests.e2e.stand_in_ranks import run_with_helpers
from tests.e2e.test_migrated_programs import (
    Program,
    _migrate,
    _migrated_run,
    _reference_run,
)
from tests.e2e.test_nxd_programs import TP_LINE, _close, _steps

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

PROGRAM = Program("nxd_sequence_parallel", "torchrun", complete=True)


def test_sequence_parallel_program_migrates_and_keeps_its_math(tmp_path) -> None:
    tree, summary = _migrate(tmp_path, PROGRAM)
    assert summary["left_for_person"] == 0 and not summary["need_torch_xla"], summary
    source = (tree / "train.py").read_text()
    assert "TODO(neuron-migrate" not in source and "neuronx_distributed" not in source, source

    reference = _reference_run(PROGRAM, 1)
    assert reference.returncode == 0, reference.stderr[-3000:]
    want = _steps(reference.stdout, 1)
    # the original's sequence parallelism at size 2, unclipped (NxD's norms there are per rank)
    unclipped = Program(PROGRAM.name, "torchrun", ("--max-norm", "1e9"))
    alone, pair = _reference_run(unclipped, 1), _reference_run(unclipped, 2)
    assert alone.returncode == 0 and pair.returncode == 0, (
        alone.stderr[-2000:] + pair.stderr[-2000:]
    )
    losses = {
        (r, int(step)): float(loss) for r, _, _, step, loss, _ in TP_LINE.findall(pair.stdout)
    }
    alone_losses = [loss for loss, _norm in _steps(alone.stdout, 1)]
    assert sorted(losses) == [(r, step) for r in "01" for step in range(len(alone_losses))]
    for (_rank, step), loss in losses.items():
        assert loss == pytest.approx(alone_losses[step], rel=1e-5, abs=1e-6), pair.stdout
    for processes in (1, 2):
        done = _migrated_run(tree, PROGRAM, processes)
        said = f"{processes} process(es)\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
        assert done.returncode == 0, said
        _close(_steps(done.stdout, processes), want, said)


# The helpers against the stand-in's NxD collectives on two gloo ranks: each region helper's
# output and its input's gradient, along dimensions 0 and 1, and a block of NxD's
# sequence-parallel layers (LayerNorm, a model's own marked norm, column- and row-parallel
# layers with a bias) against the migrated one built from the same full weights: outputs, input
# gradients and every parameter's gradient (NxD's after allreduce_sequence_parallel_gradients).
SCRIPT = """
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor
from neuronx_distributed.parallel_layers import mappings, parallel_state
from neuronx_distributed.parallel_layers.grads import allreduce_sequence_parallel_gradients
from neuronx_distributed.parallel_layers.layer_norm import LayerNorm
from neuronx_distributed.parallel_layers.layers import ColumnParallelLinear, RowParallelLinear

HELPERS

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
parallel_state.initialize_model_parallel(tensor_model_parallel_size=world)
# the helpers' mesh, on the CPU (neuron_init_device_mesh makes it on the device)
neuron_device_mesh.mesh = init_device_mesh("cpu", (1, world), mesh_dim_names=("dp", "tp"))


def same(a, b):
    return torch.allclose(a, b, rtol=1e-5, atol=1e-6)


pairs = {
    "scatter": (mappings.scatter_to_sequence_parallel_region, neuron_scatter_to_sp_region),
    "gather": (mappings.gather_from_sequence_parallel_region, neuron_gather_from_sp_region),
    "gather_split": (
        lambda x, d: mappings.gather_from_sequence_parallel_region(x, d, to_model_parallel=False),
        lambda x, d: neuron_gather_from_sp_region(x, d, to_model_parallel=False),
    ),
    "reduce_scatter": (
        mappings.reduce_scatter_to_sequence_parallel_region,
        neuron_reduce_scatter_to_sp_region,
    ),
}
for name, (nxd, helper) in pairs.items():
    for dim in (0, 1):
        x = torch.randn(4, 6, 3, generator=torch.Generator().manual_seed(rank))
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = nxd(a, dim), helper(b, dim)
        grad = torch.randn(ya.shape, generator=torch.Generator().manual_seed(10 + rank))
        (ya * grad).sum().backward()
        (yb * grad).sum().backward()
        ok = same(ya, yb) and same(a.grad, b.grad)
        print(f"SP {name}{dim} rank={rank} same={ok}", flush=True)


class Marked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, 8))
        self.weight.sequence_parallel_enabled = True

    def forward(self, x):
        return self.weight * x


class Block(torch.nn.Module):
    def __init__(self, norm, marked, up, down):
        super().__init__()
        self.norm, self.marked, self.up, self.down = norm, marked, up, down

    def forward(self, h):
        return h + self.down(F.gelu(self.up(self.marked(self.norm(h)))))


torch.manual_seed(0)
full_up, full_down = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)
full_norm = torch.nn.LayerNorm(8)
with torch.no_grad():
    full_norm.weight.uniform_(0.5, 1.5)
    full_norm.bias.uniform_(-0.5, 0.5)
local = lambda t, dim: t.detach().chunk(world, dim)[rank].clone()

nxd = Block(
    LayerNorm(8, sequence_parallel_enabled=True),
    Marked(),
    ColumnParallelLinear(8, 16, gather_output=False, sequence_parallel_enabled=True),
    RowParallelLinear(16, 8, input_is_parallel=True, sequence_parallel_enabled=True),
)
with torch.no_grad():
    nxd.norm.weight.copy_(full_norm.weight)
    nxd.norm.bias.copy_(full_norm.bias)
    nxd.up.weight.copy_(local(full_up.weight, 0))
    nxd.up.bias.copy_(local(full_up.bias, 0))
    nxd.down.weight.copy_(local(full_down.weight, 1))
    nxd.down.bias.copy_(full_down.bias)

native = Block(
    neuron_sequence_parallel_norm(full_norm, sequence_parallel_enabled=True),
    Marked(),
    neuron_column_parallel_sp(full_up, gather_output=False, sequence_parallel_enabled=True),
    neuron_row_parallel_sp(full_down, input_is_parallel=True, sequence_parallel_enabled=True),
)
neuron_replicate_unsharded(native)

x = torch.randn(4, 3, 8, generator=torch.Generator().manual_seed(20 + rank))  # [seq/tp, b, h]
a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
ya, yb = nxd(a), native(b)
grad = torch.randn(ya.shape, generator=torch.Generator().manual_seed(30 + rank))
(ya * grad).sum().backward()
(yb * grad).sum().backward()
allreduce_sequence_parallel_gradients(torch.optim.SGD(nxd.parameters(), lr=0.1))
print(f"SP block_output rank={rank} same={same(ya, yb) and same(a.grad, b.grad)}", flush=True)
for (name, p), q in zip(nxd.named_parameters(), native.parameters(), strict=True):
    g = q.grad
    if isinstance(g, DTensor):  # a sequence-parallel norm's is Partial: summed when read
        g = g.redistribute(g.device_mesh, q.placements).to_local()
    print(f"SP block_{name.replace('.', '_')} rank={rank} same={same(p.grad, g)}", flush=True)

# GQA QKV: seeded alike, NxD's layer and NeuronQKVLinear draw the same full weights
from neuronx_distributed.modules.qkv_linear import GQAQKVColumnParallelLinear

# each rank's part of the sequence under sequence parallelism; else the whole input, the same
# on every rank, as NxD's column-parallel layers take it (and the same output gradient)
sp = dict(bias=False, gather_output=False, sequence_parallel_enabled=True)
for label, kwargs, shape, seed in (
    ("gqa_sp", sp, (4, 3, 8), rank),
    ("gqa_gathered", dict(bias=True, gather_output=True), (3, 4, 8), 0),
):
    torch.manual_seed(5)
    nxd = GQAQKVColumnParallelLinear(8, [16, 8], **kwargs)
    torch.manual_seed(5)
    native = NeuronQKVLinear(8, [16, 8], **kwargs)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(40 + seed))
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    outs_a, outs_b = nxd(a), native(b)
    grads = [torch.randn(o.shape, generator=torch.Generator().manual_seed(50 + seed + i))
             for i, o in enumerate(outs_a)]
    sum((o * g).sum() for o, g in zip(outs_a, grads)).backward()
    sum((o * g).sum() for o, g in zip(outs_b, grads)).backward()
    ok = all(same(p, q) for p, q in zip(outs_a, outs_b)) and same(a.grad, b.grad)
    for name in "qkv":
        layer = getattr(native, name)
        for kind in ("weight", "bias"):
            mine, theirs = getattr(layer, kind), getattr(nxd, f"{kind}_{name}")
            if theirs is not None:
                # NxD keeps a gathered layer's bias whole; the plan splits it
                whole = theirs.shape == mine.shape
                grad = mine.grad.full_tensor() if whole else mine.grad.to_local()
                ok = ok and same(theirs.grad, grad)
    print(f"SP {label} rank={rank} same={ok}", flush=True)

# A strided (fused) column-parallel layer: NxD's local weight is every world-size-th chunk
for label, sp_flag, shape, seed in (
    ("strided_sp", True, (4, 3, 8), rank),
    ("strided", False, (3, 4, 8), 0),
):
    init = lambda w: torch.nn.init.normal_(w, std=0.3)
    torch.manual_seed(6)
    nxd = ColumnParallelLinear(8, 24, bias=False, gather_output=False, stride=3,
                               init_method=init, sequence_parallel_enabled=sp_flag)
    torch.manual_seed(6)
    full = torch.nn.utils.skip_init(torch.nn.Linear, 8, 24, bias=False)
    native = NeuronStridedColumnParallel(full, stride=3, gather_output=False, init_method=init,
                                         sequence_parallel_enabled=sp_flag)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(60 + seed))
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = nxd(a), native(b)
    grad = torch.randn(ya.shape, generator=torch.Generator().manual_seed(70 + seed))
    (ya * grad).sum().backward()
    (yb * grad).sum().backward()
    # NxD's local weight gradient, rows in its strided order: the blocks' local rows in turn
    mine = torch.cat([blk.weight.grad.to_local() for blk in native.blocks], dim=0)
    ok = same(ya, yb) and same(a.grad, b.grad) and same(nxd.weight.grad, mine)
    print(f"SP {label} rank={rank} same={ok}", flush=True)
dist.destroy_process_group()
"""

SP_LINE = re.compile(r"SP (\w+) rank=(\d) same=(True|False)")


def test_sequence_parallel_helpers_run_nxds_collectives(tmp_path) -> None:
    names = (
        "COLUMN_PARALLEL_SP",
        "ROW_PARALLEL_SP",
        "SEQUENCE_PARALLEL_NORM",
        "SCATTER_TO_SP_REGION",
        "GATHER_FROM_SP_REGION",
        "REDUCE_SCATTER_TO_SP_REGION",
        "STRIDED_COLUMN_PARALLEL",
    )
    qkv = gqa_helpers.QKV_LINEAR
    tp = ("DEVICE_MESH", "NXD_INIT", "COLUMN_PARALLEL", "ROW_PARALLEL", "REPLICATE_UNSHARDED")
    helpers = [getattr(tp_helpers, n) for n in tp] + [getattr(sp_helpers, n) for n in names]
    helpers.append(qkv)
    printed = run_with_helpers(tmp_path / "sequence_parallel.py", SCRIPT, helpers)
    found = SP_LINE.findall(printed)
    checks = {name for name, _, _ in found}
    regions = {
        f"{n}{d}" for n in ("scatter", "gather", "gather_split", "reduce_scatter") for d in (0, 1)
    }
    params = {"norm_weight", "norm_bias", "marked_weight", "up_weight", "up_bias", "down_weight"}
    want = regions | {"block_output", "gqa_sp", "gqa_gathered", "strided_sp", "strided"}
    want |= {f"block_{p}" for p in params | {"down_bias"}}
    assert checks == want and len(found) == 2 * len(want), printed
    assert all(ok == "True" for *_, ok in found), printed
