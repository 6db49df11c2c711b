"""`neuron-migrate verify` as a user runs it: JSON report, gate and exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scan.cli_helpers import run_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SCRIPT = """import torch

x = torch.randn(8, 4).to("neuron")
values, order = torch.sort(x, dim=1)
loss = (values * 2).sum()
print("loss", float(loss))
"""


def test_verify_json_and_gate(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SCRIPT)
    code, out, err = run_cli(
        ["verify", str(tmp_path), "--format", "json", "--", "python", str(tmp_path / "m.py")],
        cwd=str(tmp_path),
    )
    assert code == 0, err
    report = json.loads(out)
    sort = next(i for i in report["items"] if i["api"] == "torch.sort")
    assert sort["verdict"] == "confirmed" and sort["observed"] == "cpu_fallback"
    assert report["summary"]["contradicted"] == 0
    assert report["summary"]["agreement"] == 1.0
    # A CPU fallback fails the gate when asked to; torch.sort's is inferred (its generic kernel
    # calls aten::sort.stable), so only a strict gate fails on it.
    gate = ["verify", str(tmp_path), "-f", "json", "--fail-on"]
    code, _, _ = run_cli([*gate, "fallback", "--", "python", "m.py"], cwd=str(tmp_path))
    assert code == 0
    code, _, _ = run_cli([*gate, "fallback,strict", "--", "python", "m.py"], cwd=str(tmp_path))
    assert code == 1


def test_verify_without_a_command_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SCRIPT)
    code, _, err = run_cli(["verify", str(tmp_path)])
    assert code == 2 and "command" in err


def test_a_run_that_dies_at_import_fails_verify(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import torch_xla\n" + SCRIPT)
    code, out, _ = run_cli(
        ["verify", str(tmp_path), "--format", "json", "--", "python", str(tmp_path / "m.py")],
        cwd=str(tmp_path),
    )
    report = json.loads(out)
    assert code == 1
    assert report["exit_code"] == 1 and report["summary"]["agreement"] is None
    assert "before any op ran" in report["run_failure"]
