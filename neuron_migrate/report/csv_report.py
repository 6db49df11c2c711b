"""CSV: one row per finding, suppressed ones included (marked), for spreadsheets and scripts.

Columns carry the JSON report's field names and conventions (1-based lines, 0-based columns)."""

from __future__ import annotations

import csv
import io

from neuron_migrate.api import ScanReport
from neuron_migrate.report.summary import baseline_state, sorted_findings
from neuron_migrate.scan.findings import Finding

COLUMNS = (
    "path",
    "cell",
    "line",
    "col",
    "end_line",
    "end_col",
    "code",
    "status",
    "severity",
    "category",
    "api",
    "aten",
    "message",
    "replacement",
    "fixable",
    "confidence",
    "gate",
    "baseline",
    "suppression",
    "reason",
    "fingerprint",
)


def render_csv(report: ScanReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    rows = [(f, "", "") for f in report.findings]
    rows += [(s.finding, s.kind, s.reason) for s in report.suppressed]
    order = {id(f): i for i, f in enumerate(sorted_findings([r[0] for r in rows]))}
    for f, kind, reason in sorted(rows, key=lambda r: order[id(r[0])]):
        writer.writerow(_row(report, f, kind, reason))
    return out.getvalue()


def _row(report: ScanReport, f: Finding, kind: str, reason: str) -> list[object]:
    gate = "" if kind else ("fail" if report.fails(f) else "pass")
    return [
        f.path,
        "" if f.cell is None else f.cell,
        f.line,
        f.col,
        f.end_line,
        f.end_col,
        f.code,
        f.status,
        f.severity,
        f.category,
        f.api,
        " ".join(f.aten),
        f.message,
        f.replacement or "",
        str(f.fixable).lower(),
        f.confidence,
        gate,
        baseline_state(report, f) or "",
        kind,
        reason,
        f.fingerprint,
    ]
