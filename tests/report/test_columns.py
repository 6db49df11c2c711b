"""One rule for columns in every human-facing format: 1-based, as editors, SARIF and GitHub
count. JSON (and CSV, which carries JSON's fields) keeps 0-based columns, as documented in
docs/report-schema.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli import invoke

SOURCE = (
    "import torch\n"
    "import torch_xla.core.xla_model as xm\n"
    "\n"
    "device = xm.xla_device()\n"  # xm.xla_device at column 10 (1-based), 9 (0-based)
    "values, _ = torch.sort(torch.ones(3, device=device))\n"  # torch.sort at column 13 (1-based)
)


def _report(tmp_path: Path, fmt: str) -> str:
    result = invoke(["scan", str(tmp_path), "--no-cache", "-f", fmt, "--fail-on", "none"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_terminal_markdown_github_and_sarif_agree_on_1_based_columns(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE)
    findings = json.loads(_report(tmp_path, "json"))["findings"]
    device = next(f for f in findings if f["api"].endswith("xla_device"))
    assert (device["line"], device["col"]) == (4, 9)  # JSON: 0-based, as documented

    terminal = _report(tmp_path, "terminal")
    markdown = _report(tmp_path, "markdown")
    github = _report(tmp_path, "github")
    sarif = json.loads(_report(tmp_path, "sarif"))
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in sarif["runs"][0]["results"]]
    for f in (f for f in findings if f["status"] != "native"):  # native ones are not listed
        line, col = f["line"], f["col"] + 1
        assert re.search(rf"^\s+{line}:{col}\s+\S*{f['code']}", terminal, re.M), f
        assert f"train.py:{line}:{col}" in markdown
        assert re.search(rf"line={line},(endLine=\d+,)?col={col}\b", github), f
        assert {"startLine": line, "startColumn": col}.items() <= next(
            r for r in regions if r["startLine"] == line and r["startColumn"] == col
        ).items()
