"""A compiled model called with CPU inputs: the released backend copies them to the device
(TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 turns that off, and the mix is then an error)."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

SCRIPT = """
import torch

model = torch.nn.Linear(4, 2).to("neuron")
compiled = torch.compile(model, backend="neuron")
out = compiled(torch.ones(3, 4))  # a CPU batch, as a data loader hands it
assert out.device.type == "neuron", out.device

@torch.compile(backend="neuron")
def step(x, w):
    return x @ w

assert step(torch.ones(2, 4), torch.ones(4, 3, device="neuron")).device.type == "neuron"
# A model that never reaches the device keeps its CPU inputs where they are.
cpu = torch.compile(torch.nn.Linear(4, 2), backend="neuron")
assert cpu(torch.ones(3, 4)).device.type == "cpu"
print("AUTOCOPY_OK")
"""


def test_cpu_inputs_of_a_compiled_model_are_copied_to_the_device(sim_run) -> None:
    sim_run(SCRIPT).assert_finished("AUTOCOPY_OK")


@pytest.mark.xfail(
    os.environ.get("NEURON_MIGRATE_SIM_ENGINE") == "python",
    reason="the Python engine's compiled graphs take mixed CPU and neuron inputs without the "
    "device mismatch dynamo raises on the native engine (runtime/README.md)",
    strict=True,
)
def test_the_copy_can_be_turned_off(sim_run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "1")
    run = sim_run(SCRIPT)
    assert run.exit_code != 0 and "device mismatch" in run.err
