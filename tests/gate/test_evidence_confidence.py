"""How sure a finding's status is travels with it (every report format shows it), and the gate
tells an assumed fallback from one a source states: `--fail-on fallback` fails on the second
only, unless `--strict` (or the fail-on value `strict`) asks for both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuron_migrate.report.formats import FORMATS
from tests.cli import invoke

# Fallbacks the matrix only infers (the generic kernel of torch.sort calls aten::sort.stable,
# which no source names) ...
UNSURE = "import torch\nx = torch.zeros(4, device='neuron')\ny = torch.sort(x)\n"
# ... and one a source states (the dev snapshot registers linalg.inv as a CPU fallback).
STATED = UNSURE + "z = torch.linalg.inv(x)\n"


def scan(tmp_path: Path, source: str, *args: str) -> tuple[int, dict]:
    path = tmp_path / "train.py"
    path.write_text(source, encoding="utf-8")
    result = invoke(["scan", str(path), "--no-cache", "--no-config", "-f", "json", *args])
    report = json.loads(result.stdout)
    report["findings"] = [f for f in report["findings"] if f["status"] != "native"]
    return result.exit_code, report


def test_a_fallback_no_source_states_does_not_fail_the_gate_unless_strict(tmp_path: Path) -> None:
    code, report = scan(tmp_path, UNSURE, "--fail-on", "fallback")
    [finding] = report["findings"]
    assert (finding["status"], finding["evidence_confidence"]) == ("cpu_fallback", "inferred")
    assert "confidence inferred [" in finding["message"]
    assert code == 0 and finding["gate"] is False
    assert report["summary"]["by_status"]["cpu_fallback"] == 1
    assert scan(tmp_path, UNSURE, "--fail-on", "fallback", "--strict")[0] == 1
    assert scan(tmp_path, UNSURE, "--fail-on", "fallback,strict")[0] == 1
    assert scan(tmp_path, UNSURE, "--fail-on", "any")[0] == 1


def test_a_fallback_a_source_states_fails_the_gate(tmp_path: Path) -> None:
    code, report = scan(tmp_path, STATED, "--fail-on", "fallback")
    sure = {f["api"]: f["evidence_confidence"] for f in report["findings"]}
    assert sure == {"torch.sort": "inferred", "torch.linalg.inv": "dev-snapshot"}
    assert code == 1
    assert [f["api"] for f in report["findings"] if f["gate"]] == ["torch.linalg.inv"]


def test_strict_without_fail_on_fallback_changes_nothing(tmp_path: Path) -> None:
    assert scan(tmp_path, UNSURE, "--strict")[0] == 0  # the default gate: unsupported only


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "json"])
def test_every_format_shows_the_confidence(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "train.py"
    path.write_text(UNSURE, encoding="utf-8")
    result = invoke(["scan", str(path), "--no-cache", "--no-config", "-f", fmt])
    assert "confidence inferred" in " ".join(result.stdout.split()), fmt
