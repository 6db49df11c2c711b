"""The JSON report is a documented, versioned contract (docs/report-schema.md)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.scan.cli_helpers import run_cli

FINDING_KEYS = {
    "code",
    "category",
    "status",
    "severity",
    "path",
    "line",
    "col",
    "end_line",
    "end_col",
    "api",
    "aten",
    "message",
    "replacement",
    "fingerprint",
    "fixable",
    "confidence",
    "cell",
    "evidence_confidence",
    "baseline",
    "gate",
}
TOP_KEYS = {
    "schema_version", "tool_version", "target", "torch_version", "root", "base", "config",
    "shard", "changed_since", "findings", "suppressed", "unused_suppressions", "errors",
    "skipped", "summary",
}  # fmt: skip
SUMMARY_KEYS = {
    "files", "findings", "by_status", "by_category", "by_code", "torch_xla_uses", "fixable",
    "unmapped_apis", "api_map_coverage", "suppressed", "unused_suppressions", "baseline",
    "gate", "elapsed_s",
}  # fmt: skip
SOURCE = """import torch
import torch_xla.core.xla_model as xm

device = xm.xla_device()
values, order = torch.sort(torch.ones(3, device=device))
xm.mark_step()
"""


def _scan_json(root: Path) -> dict:
    code, out, err = run_cli(["scan", str(root), "--format", "json", "--no-cache"])
    assert code == 0, err
    return json.loads(out)


def test_top_level_and_finding_fields(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(SOURCE)
    report = _scan_json(tmp_path)
    assert set(report) == TOP_KEYS
    assert set(report["summary"]) == SUMMARY_KEYS
    assert report["schema_version"] == "1.3"
    for finding in report["findings"]:
        assert set(finding) >= FINDING_KEYS
        assert finding["path"] == "pkg/train.py"  # relative to the scanned root
    apis = {f["api"] for f in report["findings"]}
    assert {
        "torch_xla.core.xla_model.xla_device",
        "torch_xla.core.xla_model.mark_step",
        "torch.sort",
    } <= apis
    sort = next(f for f in report["findings"] if f["api"] == "torch.sort")
    assert sort["status"] == "cpu_fallback" and "aten::sort" in sort["aten"]
    assert sort["evidence_confidence"] == "inferred"


def test_stdout_is_only_the_report(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    _, out, _ = run_cli(["scan", str(tmp_path), "--format", "json", "--progress"])
    json.loads(out)  # nothing but the JSON document on stdout, even with a progress bar


def test_fingerprints_survive_lines_moving(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    before = {f["fingerprint"] for f in _scan_json(tmp_path)["findings"]}
    (tmp_path / "train.py").write_text("# a new header\n\n\n" + SOURCE)
    after = {f["fingerprint"] for f in _scan_json(tmp_path)["findings"]}
    assert before == after and len(before) >= 3


def test_output_file(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    out_file = tmp_path / "out" / "report.json"
    code, out, _ = run_cli(["scan", str(tmp_path / "train.py"), "-f", "json", "-o", str(out_file)])
    assert code == 0 and out == ""
    assert json.loads(out_file.read_text())["findings"]
