"""A status an imported table qualifies by dtype is kept per dtype by the simulated device, as
the matrix keeps it (`apis.<api>.dtypes`): `aten::add.Tensor` falls back for float64 only, so a
float64 add is recorded as a fallback (and warns) and a float32 add as native, each with its own
calls; `aten::mul.Tensor` is native for float32 and falls back for int64."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import invoke

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("each_engine")]
pytest.importorskip("torch")

TABLE = Path(__file__).resolve().parents[2] / "fixtures" / "matrix" / "dtype_qualified.md"

MIXED = """\
import warnings
import torch

x = torch.ones(3, device="neuron")
d = torch.ones(3, dtype=torch.float64, device="neuron")
i = torch.ones(3, dtype=torch.int64, device="neuron")
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    x + x
    x + x
    d + d
    x * x
    i * i
    i * i
    i * i
fallbacks = sorted(str(w.message) for w in seen if "runs on the CPU" in str(w.message))
print("FALLBACKS", fallbacks)
print("DTYPES_OK")
"""


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("table") / "dtype-qualified.yaml"
    result = invoke(["matrix", "import", str(TABLE), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def _entries(trace: dict, op: str) -> dict[str | None, dict]:
    return {entry.get("dtype"): entry for entry in trace["ops"] if entry["op"] == op}


def test_the_device_records_a_dtype_qualified_status_per_dtype(sim_run, matrix_file) -> None:
    run = sim_run(MIXED, target=str(matrix_file))
    run.assert_finished("DTYPES_OK")
    add = _entries(run.trace, "aten::add.Tensor")
    assert (add[None]["status"], add[None]["count"]) == ("native", 2)
    assert (add["float64"]["status"], add["float64"]["count"]) == ("cpu_fallback", 1)
    assert add["float64"]["evidence"] == "official-table-2.14.9.1"
    assert add["float64"]["first_location"].endswith("script.py:11")
    mul = _entries(run.trace, "aten::mul.Tensor")
    assert (mul[None]["status"], mul[None]["count"]) == ("native", 1)
    assert (mul["int64"]["status"], mul["int64"]["count"]) == ("cpu_fallback", 3)
    assert "float32" not in mul
    fallbacks = {(f["op"], f.get("dtype")): f["count"] for f in run.trace["fallbacks"]}
    assert fallbacks == {("aten::add.Tensor", "float64"): 1, ("aten::mul.Tensor", "int64"): 3}
    # one warning for each dtype that falls back, naming it
    line = next(line for line in run.out.splitlines() if line.startswith("FALLBACKS"))
    assert "aten::add.Tensor (float64)" in line and "aten::mul.Tensor (int64)" in line
    assert line.count("runs on the CPU") == 2
