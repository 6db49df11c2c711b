"""The canonical, versioned JSON report. Its schema is documented in docs/report-schema.md.

`report merge` reads these back (`neuron_migrate.report.load`), so everything a format or the
gate needs is in here.
"""

from __future__ import annotations

import json
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.api import ScanReport
from neuron_migrate.report.summary import baseline_state, sorted_findings, summarize

SCHEMA_VERSION = "1.1"


def scan_to_dict(report: ScanReport) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "target": report.target,
        "torch_version": report.torch_version,
        "root": report.root,
        "base": report.base,
        "config": report.config_path,
        "shard": {"index": report.shard[0], "count": report.shard[1]} if report.shard else None,
        "changed_since": report.changed_since,
        "findings": [
            {**f.to_json(), "baseline": baseline_state(report, f), "gate": report.fails(f)}
            for f in sorted_findings(report.findings)
        ],
        "suppressed": [
            s.to_json() for s in sorted(report.suppressed, key=lambda s: _order(s.finding))
        ],
        "unused_suppressions": [
            u.to_json()
            for u in sorted(report.unused_suppressions, key=lambda u: (u.path, u.cell or 0, u.line))
        ],
        "errors": [e.to_json() for e in sorted(report.errors, key=lambda e: e.path)],
        "skipped": sorted(report.skipped, key=lambda s: s["path"]),
        "summary": summarize(report),
    }


def _order(finding: Any) -> tuple[str, int, int, int, str]:
    return (finding.path, finding.cell or 0, finding.line, finding.col, finding.code)


_FINDINGS_SLOT = "\x00findings\x00"


def render_json(report: ScanReport) -> str:
    """Indented JSON with one finding per line: readable and grep-able, and written by json's C
    encoder (an indented dump of 80,000 findings takes seconds in the pure-Python one)."""
    data = scan_to_dict(report)
    findings = data["findings"]
    data["findings"] = _FINDINGS_SLOT
    text = json.dumps(data, indent=2)
    if findings:
        rows = ",\n    ".join(json.dumps(f, separators=(", ", ": ")) for f in findings)
        listed = f"[\n    {rows}\n  ]"
    else:
        listed = "[]"
    return text.replace(json.dumps(_FINDINGS_SLOT), listed, 1) + "\n"
