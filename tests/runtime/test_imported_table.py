"""An imported official table with a row of every kind, used with `--matrix FILE` by the scan
and by the simulated device: both must read each row the same way.

- a CPU_FALLBACK row qualified by dtype (`aten::add.Tensor` falls back for float64) applies to
  that dtype only: `torch.add` and `nn.LSTM` (Y, Native), which reach the op, stay native;
- Y rows lift the namespace rules over their API (`torch.vmap`, `distributions.Normal`) and
  decide over the statuses of the ops it reaches (`torch.sort`);
- N rows (`torch.cumsum`, `dist.send`) are refused by the scan and by the device;
- an op imported as native that torch has no CPU kernel for (LSTM's fused cell) stops the
  simulated run with an error that says the simulation cannot run it, not a raw
  NotImplementedError.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import invoke

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

TABLE = Path(__file__).resolve().parents[2] / "fixtures" / "matrix" / "every_row_kind.md"

RUNS = """\
import torch
x = torch.ones(3, device="neuron")
y = torch.add(x, x)
s, _ = torch.sort(x)
v = torch.vmap(torch.sin)(x)
n = torch.distributions.Normal(x, 1.0)
print("RUNS_OK", y.sum().item())
"""
REFUSED = """\
import torch
x = torch.ones(3, device="neuron")
torch.cumsum(x, 0)
"""
LSTM = """\
import torch
m = torch.nn.LSTM(4, 4).to("neuron")
out, _ = m(torch.ones(2, 1, 4, device="neuron"))
"""
SCANNED = (
    RUNS
    + REFUSED.split("\n", 2)[2]
    + ("m = torch.nn.LSTM(4, 4).to('neuron')\nimport torch.distributed as dist\ndist.send(x, 1)\n")
)


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("table") / "every-row-kind.yaml"
    result = invoke(["matrix", "import", str(TABLE), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def test_the_scan_reads_every_row_kind(tmp_path: Path, matrix_file: Path) -> None:
    program = tmp_path / "train.py"
    program.write_text(SCANNED, encoding="utf-8")
    args = ["scan", str(program), "--no-cache", "--no-config", "-f", "json", "--show-native"]
    result = invoke([*args, "--matrix", str(matrix_file)])
    report = json.loads(result.stdout)
    status = {f["api"]: f["status"] for f in report["findings"] if f["api"].startswith("torch")}
    assert status == {
        "torch.ones": "native",
        "torch.add": "native",  # the float64-only fallback does not make it one
        "torch.sort": "native",  # a Y row over the base's cpu_fallback
        "torch.vmap": "native",  # a Y row over the torch.func rule
        "torch.sin": "native",
        "torch.distributions.Normal": "native",  # a Y row over the distributions rule
        "torch.cumsum": "unsupported",  # N
        "torch.nn.LSTM": "native",  # Y, whatever the dtype row says of add.Tensor
        "torch.distributed.send": "unsupported",  # N
    }
    add = next(f for f in report["findings"] if f["api"] == "torch.add")
    assert add["evidence_confidence"] == "confirmed"
    # the dtype the row names is said, as the device records it per call
    assert "aten::add.Tensor falls back for float64" in add["message"], add["message"]


def test_the_device_reads_every_row_kind(sim_run, matrix_file: Path) -> None:
    runs = sim_run(RUNS, target=str(matrix_file))
    runs.assert_finished("RUNS_OK")
    assert runs.trace["target"] == "2.14.9.0"
    assert runs.trace["refusals"] == []
    assert runs.op("aten::add.Tensor")["status"] == "native"
    assert runs.op("aten::sort")["status"] == "native"

    refused = sim_run(REFUSED, target=str(matrix_file))
    assert refused.exit_code != 0
    [refusal] = refused.trace["refusals"]
    assert refusal["op"] == "torch.cumsum" and "official table" in refusal["message"]

    lstm = sim_run(LSTM, target=str(matrix_file))
    assert lstm.exit_code != 0
    assert "NotImplementedError" not in lstm.err
    assert "aten::_thnn_fused_lstm_cell is native in torch-neuronx 2.14.9.0" in lstm.err
    assert "the simulated neuron device cannot run it" in lstm.err
