"""int64 on the device: the matrix's dtype rule says it runs as int32 (values beyond int32 range
overflow) with no warning; the tensor still reports int64 and comes back as int64."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("each_engine")]
pytest.importorskip("torch")


NARROWED = """
import warnings
import torch

warnings.filterwarnings("error", message=".*int64")  # the rule: int64 narrows silently
big = 2**31 + 5

# onto the device: the value wraps as an int32 does, the dtype stays int64
x = torch.tensor([big, 7], device="neuron")
assert x.dtype is torch.int64, x.dtype
assert x.cpu().dtype is torch.int64
assert x.cpu().tolist() == [big - 2**32, 7], x.cpu().tolist()
assert torch.tensor([big]).to("neuron").item() == big - 2**32

# a factory and arithmetic that leave int32 range overflow on the device
assert torch.full((2,), big, device="neuron").cpu().tolist() == [big - 2**32] * 2
y = torch.tensor([2**30, 3], device="neuron")
assert (y * 4).cpu().tolist() == [0, 12], (y * 4).cpu().tolist()
assert y.sum(dtype=torch.int64).item() == 2**30 + 3
y.mul_(2)
assert y.cpu().tolist() == [-(2**31), 6], y.cpu().tolist()
assert torch.arange(3, device="neuron").cumsum(0).tolist() == [0, 1, 3]

# on the host nothing changes
assert torch.tensor([big]).tolist() == [big]

# index tensors keep working: argmax, embedding, gather, scatter, nonzero, indexing
scores = torch.tensor([[0.1, 0.9, 0.0], [0.7, 0.2, 0.1]], device="neuron")
best = scores.argmax(dim=1)
assert best.dtype is torch.int64 and best.tolist() == [1, 0]
table = torch.nn.Embedding(4, 2).to("neuron")
assert table(torch.tensor([[0, 3]], device="neuron")).shape == (1, 2, 2)
picked = scores.gather(1, best[:, None]).flatten().cpu()
assert torch.allclose(picked, torch.tensor([0.9, 0.7]))
spread = torch.zeros(2, 3, device="neuron").scatter_(1, best[:, None], 1.0)
assert spread.cpu().tolist() == [[0, 1, 0], [1, 0, 0]]
nz = torch.nonzero(spread)
assert nz.dtype is torch.int64 and nz.cpu().tolist() == [[0, 1], [1, 0]]
assert scores[best, torch.tensor([0, 1], device="neuron")].shape == (2,)
loss = torch.nn.functional.cross_entropy(scores, best)
assert loss.item() > 0

# a compiled graph's int64 results come back in int32 range too
times_four = torch.compile(lambda t: (t * 4, t.argmax()), backend="neuron")
wide, where = times_four(torch.tensor([2**30, 3], device="neuron"))
assert wide.dtype is torch.int64 and wide.cpu().tolist() == [0, 12] and where.item() == 0
print("INT64_OK")
"""


def test_int64_computes_as_int32_and_reports_int64(sim_run) -> None:
    run = sim_run(NARROWED)
    run.assert_finished("INT64_OK")
    assert "NeuronDowncastWarning" not in run.err


COMPILED_LIKE_EAGER = """
import torch

def intermediates(t):
    wide = t * 4  # 2**30 * 4 leaves int32 range: 0 on the device
    return wide // 4 + 1, wide > 0, wide.float().sum(), (t + t).max()

def in_place(t):
    t = t.clone()
    t.mul_(4)
    return t // 4

def cumulative(t):
    return torch.cumsum(t * 3, 0) // 2

def indexing(t, table):
    # an int64 index made by arithmetic that overflows, then used: 2**31 + 1 wraps to -2**31 + 1
    return table[(t * 2 + 1) % 5], torch.topk(t * 2, 2).values

t = torch.tensor([2**30, 3, 2**29], device="neuron")
table = torch.arange(5.0, device="neuron")
for fn, args in ((intermediates, (t,)), (in_place, (t,)), (cumulative, (t,)),
                 (indexing, (t, table))):
    eager = fn(*args)
    compiled = torch.compile(fn, backend="neuron")(*args)
    eager = eager if isinstance(eager, tuple) else (eager,)
    compiled = compiled if isinstance(compiled, tuple) else (compiled,)
    for e, c in zip(eager, compiled):
        assert c.device == e.device and c.dtype is e.dtype, (fn.__name__, c, e)
        assert c.cpu().tolist() == e.cpu().tolist(), (fn.__name__, c.cpu(), e.cpu())
# the values themselves, as int32 arithmetic gives them
assert [v.cpu().tolist() for v in intermediates(t)] == [
    [1, 4, -(2**29) + 1], [False, True, False], -(2.0**31), 2**30
]
print("COMPILED_AS_EAGER")
"""


def test_a_compiled_graph_wraps_its_int64_intermediates_as_eager_ops_do(sim_run) -> None:
    run = sim_run(COMPILED_LIKE_EAGER)
    run.assert_finished("COMPILED_AS_EAGER")
    graphs = run.trace["compile"]["graphs"]
    assert len(graphs) == 4 and all(graph["ok"] for graph in graphs)


SCALARS = """
import torch

big = 2**31 + 5
# a 0-dim int64 tensor is not narrowed: the evidence casts non-scalar tensors only
s = torch.tensor(big, device="neuron")
assert s.item() == big and s.cpu().item() == big, s.item()
assert (s + 1).item() == big + 1
assert torch.full((), big, device="neuron").item() == big
assert torch.tensor([big]).to("neuron").item() == big - 2**32  # one element, not 0-dim
# a 0-dim result computed from a non-scalar int64 tensor was computed in 32 bits
assert torch.tensor([2**30, 2**30], device="neuron").sum().item() == -(2**31)
# and compiled, as eagerly
plus_one = torch.compile(lambda t, v: (t + 1, v.sum()), backend="neuron")
one, total = plus_one(s, torch.tensor([2**30, 2**30], device="neuron"))
assert (one.item(), total.item()) == (big + 1, -(2**31)), (one.item(), total.item())

# a 0-dim float64 tensor keeps its 64 bits, a non-scalar one computes as float32
f = torch.tensor(0.1, dtype=torch.float64, device="neuron")
assert f.dtype is torch.float64 and f.item() == 0.1, f.item()
assert (f * 3).item() == 0.1 * 3
assert f.to("neuron", torch.float64).cpu().item() == 0.1
assert torch.full((), 0.1, dtype=torch.float64, device="neuron").item() == 0.1
assert torch.tensor([0.1, 0.2], dtype=torch.float64).sum().to("neuron").item() == 0.1 + 0.2
g = torch.tensor([0.1], dtype=torch.float64, device="neuron")
assert g.item() == torch.tensor(0.1, dtype=torch.float32).item(), g.item()
print("SCALARS_OK")
"""


def test_0_dim_int64_and_float64_tensors_are_not_narrowed(sim_run) -> None:
    run = sim_run(SCALARS)
    run.assert_finished("SCALARS_OK")
    # only the non-scalar float64 tensor is a downcast in the trace
    [float64] = [d for d in run.trace["downcasts"] if d["dtype"] == "float64"]
    assert float64["first_location"].endswith("script.py:25"), float64
    assert set(float64["locations"]) == {"script.py:25"}, float64["locations"]
