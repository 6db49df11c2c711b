"""Host-side code: a factory without `device=` makes a CPU tensor, and ops on tensors that never
reach the device are not device ops (no fallback finding, nothing for the gate)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api

DATA = textwrap.dedent(
    """\
    import torch


    def make_data(n, d, k, index, seed=0):
        torch.manual_seed(seed)
        g = torch.Generator()
        g.manual_seed(seed)
        x = torch.randn(n, d, generator=g)
        w = torch.randn(d, 3)
        labels = (x @ w).argmax(1)
        order = torch.randperm(n)
        ranked = torch.sort(x[:, 0]).values
        top = x.topk(k, dim=1).values  # `k` is a parameter: the host tensor decides
        picked = torch.gather(x, 1, index)  # `index` too: tensors of one call share a device
        codes = torch.empty(n, dtype=torch.long)
        return x[order], labels[order], ranked, top, picked, codes


    class Points:
        def __init__(self, n, teacher):
            self.inputs = torch.randn(n, 3)
            self.labels = torch.argmax(self.inputs @ teacher, dim=1)
    """
)

TRAIN = textwrap.dedent(
    """\
    import torch

    device = torch.device("neuron")
    inputs = torch.randn(20, 10).to(device)
    ranked = torch.sort(inputs, dim=1).values
    on_device = torch.zeros(4, 4, device=device)
    top = on_device.sort(dim=0)
    cpu_copy = inputs.cpu()
    back_on_host = torch.sort(cpu_copy).values


    def step(batch):
        return torch.sort(batch).values
    """
)


def _findings(tmp_path: Path, name: str, source: str) -> dict[tuple[int, str], str]:
    path = tmp_path / name
    path.write_text(source)
    report = api.scan(path, jobs=1, use_cache=False, fail_on=("none",))
    return {(f.line, f.api): f.confidence for f in report.findings if f.category in ("op",)}


def test_data_built_on_the_host_is_no_device_op(tmp_path: Path) -> None:
    found = _findings(tmp_path, "data.py", DATA)
    assert found == {}, found


def test_the_fallback_gate_passes_on_host_only_code(tmp_path: Path) -> None:
    path = tmp_path / "data.py"
    path.write_text(DATA)
    report = api.scan(path, jobs=1, use_cache=False, fail_on=("fallback",))
    assert report.passed


def test_device_calls_stay_and_unknown_ones_get_low_confidence(tmp_path: Path) -> None:
    found = _findings(tmp_path, "train.py", TRAIN)
    # `torch.randn(20, 10)` runs on the CPU before `.to(device)`; the factories with a device
    # and everything computed from a device tensor are device ops.
    assert (4, "torch.randn") not in found
    assert found[(5, "torch.sort")] == "high"
    assert found[(6, "torch.zeros")] == "high"
    assert found[(7, "Tensor.sort")] == "low"  # a Tensor method: its receiver's type is a guess
    assert (9, "torch.sort") not in found  # a copy brought back to the host
    # a parameter may hold a host or a device tensor: reported, with lower confidence
    assert found[(13, "torch.sort")] == "low"
