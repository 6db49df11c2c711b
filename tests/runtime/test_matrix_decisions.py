"""The matrix decides each op: native runs, cpu_fallback warns once, unsupported raises."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runtime"

pytestmark = pytest.mark.torch
pytest.importorskip("torch")


def test_fallback_downcast_and_refusal_are_reported(sim_run) -> None:
    run = sim_run(FIXTURES / "matrix_decisions.py", target="2.13.3.0")
    assert run.exit_code == 1
    assert "sorted_device=neuron:0 weights_dtype=torch.float64 total_dtype=torch.float64" in run.out
    # the fallback warns once, at the user's line
    assert run.err.count("aten::sort has no neuron kernel in torch-neuronx 2.13.3.0") == 1
    assert "matrix_decisions.py:6: NeuronFallbackWarning" in run.err
    assert run.err.count("NeuronDowncastWarning: float64 is not a neuron device dtype") == 1
    # the unsupported op raises, naming the op and the line
    assert (
        "NeuronUnsupportedOpError: aten::quantize_per_tensor is not supported on the neuron "
        "device at " in run.err
    )
    assert "matrix_decisions.py:11" in run.err

    sort = run.op("aten::sort")
    assert (sort["status"], sort["count"]) == ("cpu_fallback", 2)
    assert sort["first_location"].endswith("matrix_decisions.py:6")
    assert run.trace["fallbacks"][0]["op"] == "aten::sort"
    [downcast] = run.trace["downcasts"]
    assert (downcast["dtype"], downcast["runs_as"]) == ("float64", "float32")
    assert downcast["first_location"].endswith("matrix_decisions.py:8")
    [refusal] = run.trace["refusals"]
    assert refusal["op"] == "aten::quantize_per_tensor" and refusal["location"].endswith(
        "matrix_decisions.py:11"
    )
    assert run.op("aten::quantize_per_tensor")["refused"] == 1


STAND_IN = """
import warnings
import torch, torch_neuronx

assert torch_neuronx.SIMULATED
x = torch.randn(6, device="neuron")
torch_neuronx.clear_op_tracking()
y = (x * 2).sort().values
assert torch_neuronx.get_fallback_ops() == ["aten::sort"], torch_neuronx.get_fallback_ops()
assert "aten::mul.Tensor" in torch_neuronx.get_executed_ops()
torch_neuronx.clear_op_tracking()
assert torch_neuronx.get_fallback_ops() == [] and torch_neuronx.get_executed_ops() == []

d = torch.tensor([0.1, 0.2], dtype=torch.float64, device="neuron")
assert d.dtype == torch.float64 and (d * 3).dtype == torch.float64
assert d.cpu().dtype == torch.float64 and d.float().dtype == torch.float32
assert abs(d.sum().item() - 0.3) < 1e-6
assert (d.cpu() - torch.tensor([0.1, 0.2], dtype=torch.float64)).abs().max() > 0
print("STAND_IN_OK")
"""


def test_torch_neuronx_stand_in_and_float64(sim_run) -> None:
    run = sim_run(STAND_IN)
    run.assert_finished("STAND_IN_OK")
