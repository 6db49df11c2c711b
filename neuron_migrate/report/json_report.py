"""The canonical, versioned JSON report. Its schema is documented in docs/report-schema.md."""

from __future__ import annotations

import json
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.api import ScanReport
from neuron_migrate.report.summary import summarize

SCHEMA_VERSION = "1.0"


def scan_to_dict(report: ScanReport) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "target": report.target,
        "torch_version": report.torch_version,
        "root": report.root,
        "findings": [f.to_json() for f in sorted(report.findings, key=_order)],
        "errors": [e.to_json() for e in sorted(report.errors, key=lambda e: e.path)],
        "skipped": report.skipped,
        "summary": summarize(report),
    }


def _order(finding: Any) -> tuple[str, int, int, str]:
    return (finding.path, finding.line, finding.col, finding.code)


def render_json(report: ScanReport) -> str:
    return json.dumps(scan_to_dict(report), indent=2) + "\n"
