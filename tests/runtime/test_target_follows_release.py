"""The simulated device follows the target version: what Neuron 2.34 names as newly working
(the torch.accelerator memory functions, varlen_attn) is answered on a 2.34 target
(torch-neuronx 2.14.3.1) and refused on a 2.33 one (2.14.3.0), where the scan reports it too,
with the confidence of an inference from the 2.34 release text."""

from __future__ import annotations

import json

import pytest

from tests.cli import invoke

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

MEMORY = """\
import torch
x = torch.ones(256, device="neuron")
print("ALLOCATED", torch.accelerator.memory_allocated())
print("TARGET_OK")
"""


def test_the_accelerator_memory_functions_follow_the_target(sim_run) -> None:
    newest = sim_run(MEMORY, target="2.14.3.1")
    newest.assert_finished("TARGET_OK")
    assert "ALLOCATED 1024" in newest.out
    assert newest.trace["refusals"] == []

    older = sim_run(MEMORY, target="2.14.3.0")
    assert older.exit_code != 0 and "TARGET_OK" not in older.out
    [refusal] = older.trace["refusals"]
    assert refusal["op"] == "torch.accelerator.memory_allocated"
    assert "torch-neuronx 2.14.3.0" in refusal["message"]
    assert "2.34" in refusal["message"], refusal["message"]


def test_the_scan_says_the_same_per_target(tmp_path) -> None:
    program = tmp_path / "train.py"
    program.write_text("import torch\n\nused = torch.accelerator.memory_allocated()\n")
    args = ["scan", str(program), "--no-cache", "--no-config", "-f", "json", "--show-native"]

    def status(target: str) -> dict:
        report = json.loads(invoke([*args, "--target", target]).stdout)
        found = [f for f in report["findings"] if f["api"] == "torch.accelerator.memory_allocated"]
        return found[0] if found else {}

    older = status("2.14.3.0")
    assert older["status"] == "unsupported"
    assert older["evidence_confidence"] == "inferred"
    assert "official table" not in older["message"], older["message"]
    assert status("2.14.3.1").get("status") in (None, "native")
