"""The two engines behind the device: the native one (default) and the Python one, and how a
process picks between them (`NEURON_MIGRATE_SIM_ENGINE`, a build that fails)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _engine_as_each_test_says(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests choose the engine themselves, whatever the run as a whole was asked for.
    monkeypatch.delenv("NEURON_MIGRATE_SIM_ENGINE", raising=False)


WHICH_ENGINE = """
import torch
x = torch.ones(3, device="neuron")
print("ENGINE", "python" if type(x).__name__ == "NeuronTensor" else "native")
print("SUM", (x * 2).sum().item())
"""

# What torch asks of a C++ backend, which only the native engine can give.
NATIVE_BACKEND = """
import torch

x = torch.ones(3, device="neuron")
assert type(x) is torch.Tensor and x.device == torch.device("neuron", 0)
assert x.data_ptr() != 0 and x.untyped_storage().device.type == "neuron"

pinned = torch.empty(4, pin_memory=True)
assert pinned.is_pinned() and torch.ones(4).pin_memory().is_pinned()
assert not torch.ones(4).is_pinned()
batches = torch.utils.data.DataLoader(torch.arange(8.0), batch_size=4, pin_memory=True)
assert all(batch.is_pinned() for batch in batches)

storage = torch.UntypedStorage(16, device="neuron")
assert storage.device.type == "neuron" and storage.nbytes() == 16

before = torch.neuron.memory_allocated()
big = torch.empty(1024, 1024, device="neuron")
assert torch.neuron.memory_allocated() - before == 4 * 1024 * 1024
del big
assert torch.neuron.memory_allocated() == before

# float64: reported as float64, computed as float32
tenth = torch.full((2,), 0.1, dtype=torch.float64, device="neuron")
assert tenth.dtype is torch.float64
assert tenth.cpu().tolist() == [torch.tensor(0.1, dtype=torch.float32).item()] * 2
print("NATIVE_OK")
"""


def test_the_default_engine_is_native(sim_run) -> None:
    run = sim_run(WHICH_ENGINE)
    assert run.exit_code == 0, run.err
    assert "ENGINE native" in run.out and "SUM 6.0" in run.out
    assert run.op("aten::mul.Tensor")["count"] == 1


def test_the_native_engine_gives_what_torch_asks_a_device_backend_for(sim_run) -> None:
    sim_run(NATIVE_BACKEND).assert_finished("NATIVE_OK")


def test_the_python_engine_on_request(sim_run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_SIM_ENGINE", "python")
    run = sim_run(WHICH_ENGINE)
    assert run.exit_code == 0, run.err
    assert "ENGINE python" in run.out and "SUM 6.0" in run.out
    assert run.op("aten::mul.Tensor")["count"] == 1


def test_an_unknown_engine_is_named_in_the_error(sim_run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_SIM_ENGINE", "fast")
    run = sim_run(WHICH_ENGINE)
    assert run.exit_code != 0
    assert "NEURON_MIGRATE_SIM_ENGINE must be 'native' or 'python', not 'fast'" in run.err


def test_a_failed_build_falls_back_to_the_python_engine_unless_native_was_asked_for(
    sim_run, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    # A fresh build folder and no compiler: the build fails within seconds.
    monkeypatch.setenv("NEURON_MIGRATE_SIM_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))

    run = sim_run(WHICH_ENGINE)
    assert run.exit_code == 0, run.err
    assert "ENGINE python" in run.out
    assert "the native neuron engine could not be built" in run.err
    assert "no-such-compiler: not found; running the Python engine instead" in run.err

    monkeypatch.setenv("NEURON_MIGRATE_SIM_ENGINE", "native")
    run = sim_run(WHICH_ENGINE)
    assert run.exit_code != 0
    assert "the native neuron engine could not be built" in run.err
    assert "ENGINE" not in run.out
