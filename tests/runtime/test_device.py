"""Device semantics: placement, training, optimizers, AMP, checkpointing, I/O, torch.neuron."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"

pytestmark = pytest.mark.torch
pytest.importorskip("torch")


def test_small_training_run_decreases_loss_and_traces_its_ops(sim_run) -> None:
    run = sim_run(FIXTURES / "train_small.py")
    assert run.exit_code == 0, run.err
    losses = dict(item.split("=") for item in run.out.split())
    assert float(losses["last_loss"]) < float(losses["first_loss"])
    addmm = run.op("aten::addmm")
    assert addmm["status"] == "native"
    assert addmm["count"] == 15 * 2  # two Linear layers, 15 steps
    assert addmm["first_location"].endswith("train_small.py:15")
    assert all(op["status"] in ("native", "cpu_fallback") for op in run.trace["ops"])
    assert run.trace["totals"]["op_calls"] == sum(op["count"] for op in run.trace["ops"])


DEVICE_BASICS = """
import copy, io
import torch, torch.nn as nn

x = torch.randn(3, 4, device="neuron")
assert x.device.type == "neuron" and str(x.device) == "neuron:0" and x.is_neuron
for factory in (torch.zeros, torch.ones, torch.empty, torch.rand):
    assert factory(2, 2, device="neuron").device.type == "neuron"
assert torch.arange(5, device="neuron").tolist() == [0, 1, 2, 3, 4]
assert torch.full((2,), 7.0, device="neuron").sum().item() == 14.0
t = torch.tensor([1.0, 2.0], device="neuron")
assert "device='neuron:0'" in repr(t) and t.cpu().device.type == "cpu"
assert torch.ones(2).neuron().device.type == "neuron"
assert f"{torch.tensor(1.5, device='neuron'):.2f}" == "1.50"
view = x[0]
view.add_(1)
assert torch.equal(x[0].cpu(), view.cpu())
out = x.add_(0)
assert out is x

try:
    x + torch.ones(3, 4)
except RuntimeError as error:
    assert "Expected all tensors to be on the same device" in str(error)
else:
    raise AssertionError("mixing a CPU tensor with a neuron tensor must fail")
assert (x + torch.tensor(2.0)).device.type == "neuron"  # 0-dim CPU scalars are fine
try:
    x.numpy()
except TypeError as error:
    assert "Use Tensor.cpu()" in str(error)

model = nn.Linear(4, 2)
weight = model.weight
model.to("neuron")
assert model.weight is weight and weight.device.type == "neuron"
assert isinstance(weight, nn.Parameter)
model(x).sum().backward()
assert weight.grad.device.type == "neuron"
assert copy.deepcopy(model).weight.device.type == "neuron"

buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
assert torch.load(buffer)["weight"].device.type == "neuron"
buffer.seek(0)
loaded = torch.load(buffer, map_location="cpu")["weight"]
assert loaded.device.type == "cpu" and torch.equal(loaded, weight.detach().cpu())

dataset = torch.utils.data.TensorDataset(torch.randn(8, 3), torch.arange(8))
for batch, _ in torch.utils.data.DataLoader(dataset, batch_size=4, pin_memory=True):
    assert batch.to("neuron", non_blocking=True).device.type == "neuron"

try:
    torch.randn(1, 3, 4, 4, device="neuron").to(memory_format=torch.channels_last)
except RuntimeError as error:
    assert "only support contiguous or preserve memory format" in str(error)
else:
    raise AssertionError("channels_last must be refused")

before = torch.neuron.memory_allocated()
big = torch.empty(256, 1024, device="neuron")
assert torch.neuron.memory_allocated() - before == 256 * 1024 * 4
assert torch.neuron.max_memory_allocated() >= before + 256 * 1024 * 4
assert torch.accelerator.memory_allocated() == torch.neuron.memory_allocated()
del big
assert torch.neuron.memory_allocated() == before

assert torch.neuron.is_available() and torch.neuron.device_count() >= 1
torch.neuron.set_device(0)
assert torch.neuron.current_device() == 0
torch.neuron.synchronize()
torch.neuron.manual_seed(1)
state = torch.neuron.get_rng_state()
first = torch.rand(3, device="neuron").cpu()
torch.neuron.set_rng_state(state)
assert torch.equal(first, torch.rand(3, device="neuron").cpu())
assert str(torch.accelerator.current_accelerator()) == "neuron"
assert torch.accelerator.is_available()
torch.accelerator.synchronize()
print("DEVICE_BASICS_OK")
"""


def test_device_basics(sim_run) -> None:
    run = sim_run(DEVICE_BASICS)
    run.assert_finished("DEVICE_BASICS_OK")
    refusal = run.trace["refusals"][0]
    assert "memory format" in refusal["message"] and refusal["location"].startswith("script.py:")


CHECKPOINTS = """
import io, warnings
import torch, torch.nn as nn

def saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()

def loaded(data, **options):
    return torch.load(io.BytesIO(data), **options)

# A checkpoint written on the host, loaded onto the device every way `map_location` says it.
host = nn.Linear(3, 2)
data = saved({"model": host.state_dict(), "step": torch.tensor(7)})
for location in ("neuron", "neuron:0", torch.device("neuron"), {"cpu": "neuron"}):
    state = loaded(data, map_location=location)
    assert state["model"]["weight"].device.type == "neuron", location
    assert torch.equal(state["model"]["weight"].cpu(), host.weight.detach()), location
    assert state["step"].device.type == "neuron" and state["step"].item() == 7
model = nn.Linear(3, 2).to("neuron")
model.load_state_dict(loaded(data, map_location="neuron")["model"])
assert torch.equal(model.weight.detach().cpu(), host.weight.detach())

# Saved from the device, with an optimizer's state; back on the device or on the host.
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model(torch.randn(4, 3, device="neuron")).sum().backward()
optimizer.step()
data = saved({"model": model.state_dict(), "optimizer": optimizer.state_dict()})
for location, kind in ((None, "neuron"), ("neuron", "neuron"), ("cpu", "cpu")):
    state = loaded(data, map_location=location)
    assert state["model"]["bias"].device.type == kind, location
    assert state["optimizer"]["state"][0]["momentum_buffer"].device.type == kind, location

# A whole pickled module, and float64, which the device keeps as float32 and reports as float64.
module = loaded(saved(nn.Linear(2, 2)), map_location="neuron", weights_only=False)
assert isinstance(module.weight, nn.Parameter) and module.weight.device.type == "neuron"
assert module.weight.requires_grad
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    wide = loaded(saved(torch.arange(3, dtype=torch.float64)), map_location="neuron")
assert wide.device.type == "neuron" and wide.dtype == torch.float64 and wide.sum().item() == 3

# A device the process does not have, as torch says it; a storage is never put on the device.
try:
    loaded(saved(torch.ones(2)), map_location="neuron:1")
except RuntimeError as error:
    assert "device_count() is 1" in str(error), error
else:
    raise AssertionError("neuron:1 must be refused")
try:
    torch.ones(2).untyped_storage().to(device="neuron")
except RuntimeError as error:
    assert "no device allocator" in str(error), error
else:
    raise AssertionError("a storage on the device must be refused")
print("CHECKPOINTS_OK")
"""


def test_checkpoints_load_onto_the_device_however_map_location_names_it(sim_run) -> None:
    run = sim_run(CHECKPOINTS)
    run.assert_finished("CHECKPOINTS_OK")


MEMORY = """
import torch

MB = 256 * 1024 * 4  # bytes of a 256x1024 float32 tensor
allocated = torch.neuron.memory_allocated
start = allocated()

base = torch.empty(256, 1024, device="neuron")
view = base.view(1024, 256)
first, second = base.split(128)
assert allocated() - start == MB  # views share their base's storage: counted once
del base, first, second
assert allocated() - start == MB  # the view still holds the storage
del view
assert allocated() == start

grown = torch.empty(0, device="neuron")
assert allocated() == start
torch.neuron.reset_peak_memory_stats()
grown.resize_(256, 1024)
assert grown.shape == (256, 1024) and grown.stride() == (1024, 1)
assert allocated() - start == MB and torch.neuron.max_memory_allocated() - start == MB
grown.resize_(512, 1024)
assert allocated() - start == 2 * MB
grown.set_(torch.empty(256, 1024, device="neuron"))
assert grown.shape == (256, 1024)
assert allocated() - start == MB  # the resized storage went with set_
del grown
assert allocated() == start

out = torch.empty(0, device="neuron")
ones = torch.ones(256, 1024, device="neuron")
result = torch.add(ones, ones, out=out)
assert result is out and out.shape == (256, 1024) and out.sum().item() == 2 * 256 * 1024
assert allocated() - start == 2 * MB
del out, result, ones
assert allocated() == start

t = torch.arange(6.0, device="neuron").view(2, 3)
t.t_()
assert t.shape == (3, 2) and t.stride() == (1, 3) and t.tolist() == [[0, 3], [1, 4], [2, 5]]
t.unsqueeze_(0)
assert t.shape == (1, 3, 2) and (t + 1).shape == (1, 3, 2)
print("MEMORY_OK")
"""


def test_memory_counters_follow_views_resize_and_out(sim_run) -> None:
    run = sim_run(MEMORY)
    run.assert_finished("MEMORY_OK")
    for op in ("aten::resize_", "aten::set_.source_Tensor", "aten::add.out", "aten::t_"):
        assert run.op(op)["count"] >= 1


STORAGE_RESIZE = """
import torch

# FSDP frees a parameter's memory between uses, and gets it back, by resizing its storage.
t = torch.zeros(1000, device="neuron")
before = torch.neuron.memory_allocated()
t.untyped_storage().resize_(0)
assert torch.neuron.memory_allocated() == before - 4000, torch.neuron.memory_allocated()
t.untyped_storage().resize_(4000)
assert torch.neuron.memory_allocated() == before
t.fill_(2.0)
assert t.sum().item() == 2000.0 and t.device.type == "neuron"
t._typed_storage()._resize_(0)  # FSDP1's way
assert torch.neuron.memory_allocated() == before - 4000
print("STORAGE_RESIZE_OK")
"""


def test_storage_resize_frees_and_reallocates_device_memory(sim_run) -> None:
    sim_run(STORAGE_RESIZE).assert_finished("STORAGE_RESIZE_OK")


TRAINING = """
import torch, torch.nn as nn
from torch.utils.checkpoint import checkpoint

def train(make_optimizer, device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
    optimizer = make_optimizer(model.parameters())
    x, y = torch.randn(32, 8).to(device), torch.randn(32, 2).to(device)
    for _ in range(3):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return [p.detach().cpu() for p in model.parameters()]

optimizers = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda p: torch.optim.Adam(p),
    "adam_loop": lambda p: torch.optim.Adam(p, foreach=False),
    "adamw_foreach": lambda p: torch.optim.AdamW(p, foreach=True),
    "adamw_fused": lambda p: torch.optim.AdamW(p, fused=True),
}
for name, make in optimizers.items():
    on_neuron, on_cpu = train(make, "neuron"), train(make, "cpu")
    difference = max((a - b).abs().max().item() for a, b in zip(on_neuron, on_cpu))
    assert difference == 0.0, (name, difference)

model = nn.Linear(4, 4).to("neuron")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("neuron")
with torch.autocast("neuron", dtype=torch.bfloat16):
    out = model(torch.randn(2, 4, device="neuron"))
    assert out.dtype == torch.bfloat16, out.dtype
    assert torch.softmax(out, dim=-1).dtype == torch.float32
scaler.scale(out.float().sum()).backward()
scaler.step(optimizer)
scaler.update()
assert scaler.get_scale() > 0

x = torch.randn(3, 4, device="neuron", requires_grad=True)
checkpoint(model, x, use_reentrant=False).sum().backward()
assert x.grad.device.type == "neuron"

encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True), 2)
encoder.to("neuron")
tokens = torch.randn(2, 5, 16, device="neuron")
encoder(tokens).sum().backward()
encoder.eval()
with torch.no_grad():
    assert encoder(tokens).shape == (2, 5, 16)
print("TRAINING_OK")
"""


def test_training_features_match_cpu(sim_run) -> None:
    run = sim_run(TRAINING)
    run.assert_finished("TRAINING_OK")
    assert run.op("aten::_fused_adamw_")["count"] == 3


RECURRENT = """
import torch, torch.nn as nn
from neuron_sim.errors import NeuronUnsupportedOpError

# A packed sequence keeps its lengths and batch sizes on the host, as torch wants them.
rnn = nn.RNN(8, 16, batch_first=True).to("neuron")
x = torch.randn(4, 5, 8, device="neuron", requires_grad=True)
lengths = torch.tensor([5, 4, 3, 2])
packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
assert packed.data.device.type == "neuron" and packed.batch_sizes.device.type == "cpu"
out, hidden = rnn(packed)
out, out_lengths = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
assert out.device.type == "neuron" and out_lengths.device.type == "cpu"
assert out_lengths.tolist() == [5, 4, 3, 2]
out.sum().backward()
assert x.grad.device.type == "neuron"
host = nn.RNN(8, 16, batch_first=True)
host.load_state_dict({k: v.cpu() for k, v in rnn.state_dict().items()})
expected, _ = host(nn.utils.rnn.pack_padded_sequence(x.detach().cpu(), lengths, batch_first=True))
expected, _ = nn.utils.rnn.pad_packed_sequence(expected, batch_first=True)
assert torch.allclose(expected, out.detach().cpu(), atol=1e-5)

# On a PrivateUse1 device torch's LSTM and GRU call fused cells that have no CPU kernel.
for layer in (nn.LSTM(4, 8), nn.GRUCell(4, 8)):
    try:
        layer.to("neuron")(torch.randn(3, 4, device="neuron"))  # line 26
    except NeuronUnsupportedOpError as error:
        assert "_thnn_fused_" in str(error) and "script.py:26" in str(error), error
    else:
        raise AssertionError(f"{type(layer).__name__} must be refused")
print("RECURRENT_OK")
"""


def test_recurrent_layers_pack_on_the_host_and_refuse_the_fused_cells(sim_run) -> None:
    run = sim_run(RECURRENT)
    run.assert_finished("RECURRENT_OK")
    assert run.op("aten::_thnn_fused_lstm_cell")["status"] == "unsupported"


GENERATORS = """
import torch

g = torch.Generator(device="neuron")
assert g.device.type == "neuron" and isinstance(g, torch.Generator)
first = torch.randn(4, device="neuron", generator=g.manual_seed(7))
again = torch.randn(4, device="neuron", generator=torch.Generator("neuron").manual_seed(7))
assert first.device.type == "neuron" and torch.equal(first.cpu(), again.cpu())
assert torch.empty(3, device="neuron").normal_(generator=g).device.type == "neuron"
host = torch.Generator()
assert type(host) is torch._C.Generator and host.device.type == "cpu"
print("GENERATORS_OK")
"""


def test_neuron_generators_seed_device_random_numbers(sim_run) -> None:
    run = sim_run(GENERATORS)
    run.assert_finished("GENERATORS_OK")


DATA_ASSIGNMENT = """
import torch, torch.nn as nn

layer = nn.Linear(2, 2).to("neuron")
weight = layer.weight
layer.weight.data = torch.full((2, 2), 5.0, device="neuron")
assert layer.weight is weight and weight.tolist() == [[5.0, 5.0], [5.0, 5.0]]
expected = (torch.ones(1, 2) @ torch.full((2, 2), 5.0).t() + layer.bias.detach().cpu()).tolist()
assert layer(torch.ones(1, 2, device="neuron")).detach().cpu().tolist() == expected
flat = nn.utils.parameters_to_vector(layer.parameters())
nn.utils.vector_to_parameters(flat * 0, layer.parameters())
assert layer.weight.abs().sum().item() == 0 and layer.bias.abs().sum().item() == 0
reshaped = nn.Parameter(torch.ones(2, 2, device="neuron"))
reshaped.data = torch.arange(4.0, device="neuron")
assert reshaped.shape == (4,) and reshaped.tolist() == [0.0, 1.0, 2.0, 3.0]
print("DATA_OK")
"""


def test_data_assignment_moves_the_payload(sim_run) -> None:
    run = sim_run(DATA_ASSIGNMENT)
    run.assert_finished("DATA_OK")
