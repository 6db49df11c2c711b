"""SARIF 2.1.0, the format code-scanning services (GitHub, GitLab, Azure DevOps) read.

- rules come from rules/*.yaml: summary, why, the replacement, the manual step and fix safety;
- each result carries its fingerprint in `partialFingerprints`, its `baselineState` when a
  baseline is in use, and `suppressions` for `ignore`/`fixme` comments;
- the SARIF level follows the gate: `error` fails it, everything else is `warning` or `note`;
- native op uses are counted in the run's properties, not listed (they need no change);
- files that could not be scanned are tool notifications; unused suppressions are results of
  the `unused-suppression` rule.

A result whose finding `rewrite` can change carries the codemod's exact edit as a SARIF `fix`
(see sarif_fixes.py; Python files only, not notebook cells).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from neuron_migrate import __version__
from neuron_migrate.api import ScanReport
from neuron_migrate.report import indented_json
from neuron_migrate.report.sarif_fixes import Hunk, fixes_for, sarif_fix
from neuron_migrate.report.summary import (
    STATUS_LABEL,
    baseline_state,
    named_message,
    repo_path,
    sorted_findings,
    summarize,
)
from neuron_migrate.ruleset import Rule, load_ruleset
from neuron_migrate.scan.findings import Finding
from neuron_migrate.scan.suppressions import SuppressedFinding, Suppression

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "neuronMigrate/v1"
UNUSED_RULE = "unused-suppression"
_LEVEL = {"error": "warning", "warning": "warning", "info": "note"}


def render_sarif(report: ScanReport) -> str:
    return indented_json.dumps(sarif_log(report)) + "\n"


def sarif_log(report: ScanReport) -> dict[str, Any]:
    listed = [f for f in sorted_findings(report.findings) if f.status != "native"]
    suppressed = sorted(
        report.suppressed, key=lambda s: (s.finding.path, s.finding.cell or 0, s.finding.line)
    )
    codes = sorted({f.code for f in listed} | {s.finding.code for s in suppressed})
    rules = [_rule(code) for code in codes]
    if report.unused_suppressions:
        rules.append(_unused_rule())
    index = {rule["id"]: i for i, rule in enumerate(rules)}

    fixes = fixes_for(listed, report.base, report.cache_dir, report.jobs)
    results = [_result(report, f, index, fixes) for f in listed]
    results += [_suppressed_result(report, s, index) for s in suppressed]
    results += [_unused_result(report, u, index) for u in report.unused_suppressions]
    summary = summarize(report)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "neuron-migrate",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": rules,
            }
        },
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {
                        "level": "error",
                        "message": {"text": f"{error.what}: {error.reason}"},
                        "locations": [_file_location(report, error.path)],
                        "descriptor": {"id": f"file-{error.kind}"},
                    }
                    for error in sorted(report.errors, key=lambda e: e.path)
                ],
            }
        ],
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {
            "target": report.target,
            "torchVersion": report.torch_version,
            "nativeOpUses": summary["by_status"]["native"],
            "byStatus": summary["by_status"],
            "suppressed": summary["suppressed"],
            "gate": summary["gate"],
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _rule(code: str) -> dict[str, Any]:
    try:
        rule = load_ruleset().get(code)
    except KeyError:
        return {"id": code, "shortDescription": {"text": code}}
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": _help_text(rule), "markdown": _help_markdown(rule)},
        "defaultConfiguration": {"level": _LEVEL.get(rule.severity, "warning")},
        "properties": {"tags": ["neuron-migrate", rule.family], "fix": rule.fix_safety},
    }


def _help_text(rule: Rule) -> str:
    parts = [rule.summary, "", rule.why]
    if rule.replacement:
        parts += ["", f"Replacement: {rule.replacement}"]
    if rule.manual:
        parts += ["", f"By hand: {rule.manual}"]
    parts += [
        "",
        f"Fix: {rule.fix_safety}" + (f" ({rule.safety_note})" if rule.safety_note else ""),
    ]
    parts += ["", f"neuron-migrate rules explain {rule.code}"]
    return "\n".join(parts)


def _help_markdown(rule: Rule) -> str:
    parts = [f"**{rule.code} {rule.name}**: {rule.summary}", "", rule.why]
    if rule.replacement:
        parts += ["", f"**Replacement:** `{rule.replacement}`"]
    if rule.manual:
        parts += ["", f"**By hand:** {rule.manual}"]
    note = f" ({rule.safety_note})" if rule.safety_note else ""
    parts += ["", f"**Fix:** {rule.fix_safety}{note}"]
    parts += ["", f"`neuron-migrate rules explain {rule.code}`"]
    return "\n".join(parts)


def _unused_rule() -> dict[str, Any]:
    text = "A `# neuron-migrate: ignore[...]` or `fixme[...]` comment that matches no finding."
    return {
        "id": UNUSED_RULE,
        "name": UNUSED_RULE,
        "shortDescription": {"text": "Suppression comment that matches no finding"},
        "fullDescription": {"text": text},
        "help": {"text": text + " Remove it, or fix its code or line.", "markdown": text},
        "defaultConfiguration": {"level": "warning"},
    }


def _file_location(report: ScanReport, path: str) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(repo_path(report, path))}}}


def _location(report: ScanReport, f: Finding) -> dict[str, Any]:
    region: dict[str, Any] = {
        "startLine": f.line,
        "startColumn": f.col + 1,
        "endLine": max(f.end_line, f.line),
        "endColumn": f.end_col + 1,
    }
    if f.snippet:
        region["snippet"] = {"text": f.snippet}
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(repo_path(report, f.path))},
            "region": region,
        }
    }
    if f.cell is not None:
        location["properties"] = {"cell": f.cell}
    return location


def _message(f: Finding) -> str:
    where = f"cell {f.cell}: " if f.cell is not None else ""
    fix = f" Replacement: {f.replacement}" if f.replacement else ""
    return f"{where}{named_message(f)}{fix}"


def _result(
    report: ScanReport, f: Finding, index: dict[str, int], fixes: dict[str, list[Hunk]]
) -> dict[str, Any]:
    level = "error" if report.fails(f) else _LEVEL.get(f.severity, "warning")
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index[f.code],
        "level": level,
        "message": {"text": _message(f)},
        "locations": [_location(report, f)],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        "properties": {
            "status": f.status,
            "statusLabel": STATUS_LABEL[f.status],
            "category": f.category,
            "api": f.api,
            "aten": list(f.aten),
            "confidence": f.confidence,
            "fixable": f.fixable,
            "replacement": f.replacement,
        },
    }
    state = baseline_state(report, f)
    if state is not None:
        result["baselineState"] = state
    if f.fingerprint in fixes:
        result["fixes"] = [sarif_fix(_uri(repo_path(report, f.path)), fixes[f.fingerprint])]
    return result


def _suppressed_result(
    report: ScanReport, s: SuppressedFinding, index: dict[str, int]
) -> dict[str, Any]:
    result = _result(report, s.finding, index, {})
    result["level"] = _LEVEL.get(s.finding.severity, "warning")
    result.pop("baselineState", None)
    # `fixme`: known and to be fixed, so still under review; `ignore`: accepted as it is.
    status = "accepted" if s.kind == "ignore" else "underReview"
    suppression: dict[str, Any] = {"kind": "inSource", "status": status}
    suppression["justification"] = f"{s.kind}: {s.reason}" if s.reason else s.kind
    result["suppressions"] = [suppression]
    result["properties"]["suppression"] = s.kind
    return result


def _unused_result(report: ScanReport, u: Suppression, index: dict[str, int]) -> dict[str, Any]:
    codes = ", ".join(u.codes)
    where = f"cell {u.cell}: " if u.cell is not None else ""
    region = {"startLine": u.line}
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(repo_path(report, u.path))},
            "region": region,
        }
    }
    if u.cell is not None:
        location["properties"] = {"cell": u.cell}
    return {
        "ruleId": UNUSED_RULE,
        "ruleIndex": index[UNUSED_RULE],
        "level": "warning",
        "message": {"text": f"{where}unused suppression {u.kind}[{codes}]: no such finding here"},
        "locations": [location],
        "properties": {"kind": u.kind, "codes": list(u.codes)},
    }


def _uri(path: str) -> str:
    """A repository path as the relative URI reference SARIF asks for: a space, `#`, `%` or a
    non-ASCII character percent-encoded (RFC 3986), the slashes kept."""
    return quote(path, safe="/!$&'()*+,;=:@-._~")
