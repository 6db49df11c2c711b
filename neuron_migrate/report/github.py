"""GitHub Actions workflow commands: one annotation per finding, shown on the pull request.

`::error` for findings that fail the gate, `::warning` for the rest of what must change,
`::notice` for unused suppressions and files not scanned are `::error`. Native op uses and
suppressed findings are not annotated. A final line states the gate.
"""

from __future__ import annotations

from neuron_migrate.api import ScanReport
from neuron_migrate.report.evidence_words import evidence_titles, in_words
from neuron_migrate.report.summary import (
    STATUS_LABEL,
    failed_gate_text,
    named_message,
    repo_path,
    sorted_findings,
    summarize,
)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, message: str, **props: object) -> str:
    shown = ",".join(f"{k}={_prop(str(v))}" for k, v in props.items() if v is not None)
    return f"::{kind} {shown}::{_data(message)}" if shown else f"::{kind}::{_data(message)}"


def render_github(report: ScanReport) -> str:
    lines = []
    titles = evidence_titles(report.target)
    for f in sorted_findings(report.findings):
        if f.status == "native":
            continue
        kind = "error" if report.fails(f) else "warning"
        cell = f"cell {f.cell}, line {f.line}: " if f.cell is not None else ""
        fix = f" Replacement: {f.replacement}" if f.replacement else ""
        lines.append(
            _command(
                kind,
                f"{cell}{named_message(f, in_words(f.message, titles))}{fix}",
                file=repo_path(report, f.path),
                line=None if f.cell is not None else f.line,
                endLine=None if f.cell is not None else max(f.end_line, f.line),
                col=None if f.cell is not None else f.col + 1,
                endColumn=None if f.cell is not None or f.end_line != f.line else f.end_col + 1,
                title=f"{f.code} {STATUS_LABEL[f.status]}: {f.api}",
            )
        )
    for u in sorted(report.unused_suppressions, key=lambda u: (u.path, u.cell or 0, u.line)):
        cell = f"cell {u.cell}, line {u.line}: " if u.cell is not None else ""
        lines.append(
            _command(
                "notice",
                f"{cell}unused suppression {u.kind}[{', '.join(u.codes)}]: no such finding here",
                file=repo_path(report, u.path),
                line=None if u.cell is not None else u.line,
                title="neuron-migrate: unused suppression",
            )
        )
    for e in sorted(report.errors, key=lambda e: e.path):
        lines.append(
            _command(
                "error",
                f"{e.what}: {e.reason}",
                file=repo_path(report, e.path),
                title=f"neuron-migrate: file {e.what}",
            )
        )
    summary = summarize(report)
    gate = summary["gate"]
    suppressed = summary["suppressed"]
    verdict = "passed" if gate["passed"] else f"failed ({failed_gate_text(report, gate)})"
    lines.append(
        f"neuron-migrate: {summary['findings']} findings, {suppressed['ignore']} ignored, "
        f"{suppressed['fixme']} fixme; gate {verdict}"
    )
    return "\n".join(lines) + "\n"
