"""Markdown for a pull-request comment (or `$GITHUB_STEP_SUMMARY`): the verdict first, counts,
then the findings that fail the gate, then everything else to change in a folded section.

Tables are capped so the comment stays under the size limits of code-review sites.
"""

from __future__ import annotations

from neuron_migrate.api import ScanReport
from neuron_migrate.report.evidence_words import evidence_titles, in_words
from neuron_migrate.report.summary import (
    STATUS_LABEL,
    STATUS_ORDER,
    failed_gate_text,
    location,
    partly_scanned,
    sorted_findings,
    summarize,
)
from neuron_migrate.scan.findings import Finding

MAX_ROWS = 100


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"``{text}``"


def _table(findings: list[Finding], report: ScanReport) -> list[str]:
    titles = evidence_titles(report.target)
    lines = ["| where | rule | status | API | what to do |", "|---|---|---|---|---|"]
    for f in findings[:MAX_ROWS]:
        todo = (f.replacement and f"→ {_code(f.replacement)}") or _cell(in_words(f.message, titles))
        new = " (new)" if report.baseline is not None and report.is_new(f) else ""
        lines.append(
            f"| {_code(location(f))}{new} | {f.code} | {STATUS_LABEL[f.status]} | "
            f"{_code(f.api)} | {todo} |"
        )
    if len(findings) > MAX_ROWS:
        lines.append(f"\n…and {len(findings) - MAX_ROWS} more (see the full report).")
    return lines


def render_markdown(report: ScanReport) -> str:
    summary = summarize(report)
    gate = summary["gate"]
    statuses = ", ".join(gate["fail_on"]) or "none"
    verdict = (
        f"✅ **Gate passed** (fail-on: {statuses})"
        if gate["passed"]
        else f"❌ **Gate failed**: {failed_gate_text(report, gate)} (fail-on: {statuses})"
    )
    files = summary["files"]
    partly = partly_scanned(report.errors)
    out = [
        "## neuron-migrate scan",
        "",
        verdict,
        "",
        f"Target torch-neuronx {report.target} (torch {report.torch_version}). "
        f"{files['analyzed']} files analyzed, {files['with_findings']} with findings, "
        f"{files['errors'] - partly} not scanned{_partly(partly)}.",
        "",
        "| status | findings |",
        "|---|---:|",
    ]
    out += [f"| {STATUS_LABEL[s]} | {summary['by_status'][s]} |" for s in STATUS_ORDER]
    suppressed = summary["suppressed"]
    out += [
        "",
        f"Suppressed: {suppressed['ignore']} ignored, {suppressed['fixme']} fixme. "
        f"Unused suppressions: {summary['unused_suppressions']}. "
        f"Fixable by `neuron-migrate rewrite`: {summary['fixable']}.",
    ]
    baseline = summary["baseline"]
    if baseline is not None:
        out += [
            "",
            f"Baseline: {baseline['unchanged']} findings already recorded, {baseline['new']} new.",
        ]
    failing = sorted_findings(report.gate_failures)
    if failing:
        out += ["", "### Findings that fail the gate", "", *_table(failing, report)]
    others = [
        f for f in sorted_findings(report.findings) if f.status != "native" and not report.fails(f)
    ]
    if others:
        out += [
            "",
            f"<details><summary>Other findings to review ({len(others)})</summary>",
            "",
            *_table(others, report),
            "",
            "</details>",
        ]
    if report.unused_suppressions:
        out += ["", "### Unused suppressions", ""]
        for u in sorted(report.unused_suppressions, key=lambda u: (u.path, u.cell or 0, u.line)):
            cell = f"cell {u.cell}:" if u.cell is not None else ""
            out.append(f"- {_code(f'{u.path}:{cell}{u.line}')} {u.kind}[{', '.join(u.codes)}]")
    for partial in (False, True):  # a notebook with a cell that does not parse: partly
        errors = sorted((e for e in report.errors if e.partial is partial), key=lambda e: e.path)
        if errors:
            out += ["", f"### Files {errors[0].what}", ""]
        out += [f"- {_code(e.path)}: {_cell(e.reason)}" for e in errors]
    return "\n".join(out) + "\n"


def _partly(count: int) -> str:
    return f", {count} partly scanned" if count else ""
