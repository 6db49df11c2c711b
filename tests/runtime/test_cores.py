"""The cores a process sees: `NEURON_RT_VISIBLE_CORES`, `set_device`, device indexes past the
count, and the stream and event API torch's parallelism code reaches."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

ONE_CORE = """
import torch

assert torch.neuron.device_count() == 1
x = torch.ones(2, device="neuron")
assert x.device == torch.device("neuron", 0)
refused = []
for attempt in (
    lambda: torch.ones(2, device="neuron:5"),
    lambda: torch.ones(2).to("neuron:5"),
    lambda: torch.neuron.set_device(5),
):
    try:
        attempt()
    except RuntimeError as error:
        refused.append(str(error))
assert len(refused) == 3, refused
assert all("neuron device index 5 is out of range: this process sees 1 NeuronCore" in r
           for r in refused), refused
print("ONE_CORE_OK")
"""

FOUR_CORES = """
import torch

assert torch.neuron.device_count() == 4
torch.neuron.set_device(2)
assert torch.neuron.current_device() == 2
x = torch.ones(2, device="neuron")
assert x.device == torch.device("neuron", 2), x.device
y = (x * 3).sum()
assert y.device == torch.device("neuron", 2) and y.item() == 6.0

# Streams and events keep the API; every op has finished when it returns.
stream = torch.neuron.Stream()
assert isinstance(stream, torch.Stream)
with torch.neuron.stream(stream):
    z = x + 1
event = torch.neuron.Event()
event.record()
torch.neuron.current_stream().wait_event(event)
stream.wait_stream(torch.neuron.current_stream())
z.record_stream(stream)
assert event.query() and stream.query()
torch.neuron.synchronize()
print("FOUR_CORES_OK", z.tolist())
"""


def test_an_index_past_the_visible_cores_is_refused(sim_run, monkeypatch) -> None:
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "0")
    sim_run(ONE_CORE).assert_finished("ONE_CORE_OK")


def test_visible_cores_give_the_count_and_set_device_the_core(sim_run, monkeypatch) -> None:
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "4-7")
    run = sim_run(FOUR_CORES)
    run.assert_finished("FOUR_CORES_OK [2.0, 2.0]")
    assert run.op("aten::record_stream")["count"] == 1


MOVE_WITH_A_LIVE_GRAPH = """
import torch, torch.nn as nn

model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2))
cpu_loss = model(torch.tensor([1, 2])).sum()  # a CPU autograd graph, still alive
model.to("neuron")
loss = model(torch.tensor([1, 2]).to("neuron")).sum()
loss.backward()
assert all(p.device.type == "neuron" and p.grad.device.type == "neuron" for p in model.parameters())

kept = nn.Linear(4, 2)
weight = kept.weight
kept.to("neuron")
assert kept.weight is weight  # no graph holds it: the Parameter object itself moved
print("MOVED_OK")
"""


def test_model_to_works_while_a_cpu_autograd_graph_is_alive(sim_run) -> None:
    sim_run(MOVE_WITH_A_LIVE_GRAPH).assert_finished("MOVED_OK")
