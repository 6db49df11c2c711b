"""Counts every report format shares, and the words they use for statuses."""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable
from typing import Any

from neuron_migrate.api import ScanReport
from neuron_migrate.scan.findings import STATUSES, FileError, Finding
from neuron_migrate.scan.gate import report_status

# Worst first: the order in which reports list statuses.
STATUS_ORDER = ("unsupported", "cpu_fallback", "float64", "xla", "advice", "native")
assert set(STATUS_ORDER) == set(STATUSES)

STATUS_LABEL = {
    "unsupported": "unsupported",
    "cpu_fallback": "CPU fallback",
    "float64": "float64→float32",
    "xla": "torch_xla use",
    "advice": "advice",
    "native": "native",
}


def summarize(report: ScanReport) -> dict[str, Any]:
    # Counted from the kinds kept beside each file's rows: no finding is decoded.
    by_kind = report.kind_totals()
    by_status: Counter[str] = Counter()
    by_category: Counter[str] = Counter()
    by_code: Counter[str] = Counter()
    fixable = 0
    for (code, status, category, can_fix), count in by_kind.items():
        by_status[report_status(status)] += count
        by_category[category] += count
        by_code[code] += count
        fixable += count if can_fix else 0
    kinds = Counter(s.kind for s in report.suppressed)
    failing = report.failing_count
    failing_errors = len(report.failing_errors)
    return {
        "files": {
            "total": report.files_total,
            "analyzed": report.files_analyzed,
            "skipped_by_prefilter": report.files_prefiltered,
            "from_cache": report.files_cached,
            "skipped": len(report.skipped),
            "errors": len(report.errors),
            "with_findings": report.files_with_findings,
        },
        "findings": sum(by_kind.values()),
        "by_status": {s: by_status.get(s, 0) for s in STATUS_ORDER},
        "by_category": dict(sorted(by_category.items())),
        "by_code": dict(sorted(by_code.items())),
        "torch_xla_uses": by_status.get("xla", 0),
        "fixable": fixable,
        "unmapped_apis": dict(report.unmapped_apis.most_common()),
        "api_map_coverage": {
            "mapped": report.api_map_coverage[0],
            "public_apis": report.api_map_coverage[1],
        },
        "suppressed": {"ignore": kinds.get("ignore", 0), "fixme": kinds.get("fixme", 0)},
        "unused_suppressions": len(report.unused_suppressions),
        "baseline": baseline_summary(report),
        "gate": {
            "fail_on": sorted(report.fail_on),
            "overrides": gate_overrides(report),
            "passed": not failing and not failing_errors,
            "failing_findings": failing,
            "failing_errors": failing_errors,
        },
        "elapsed_s": round(report.elapsed_s, 3),
    }


def baseline_summary(report: ScanReport) -> dict[str, Any] | None:
    if report.baseline is None:
        return None
    new = report.new_count
    return {
        "path": report.baseline.path,
        "entries": report.baseline.entries,
        "unchanged": sum(map(len, report.files)) - new,
        "new": new,
    }


def gate_overrides(report: ScanReport) -> list[dict[str, Any]]:
    """Per-path fail-on overrides from the config, with the prefix their globs need."""
    policy = report.policy
    if policy is None:
        return []
    return [
        {"paths": list(rule.paths), "fail_on": sorted(rule.fail_on), "path_prefix": policy.prefix}
        for rule in policy.rules
        if rule.fail_on is not None
    ]


def baseline_state(report: ScanReport, finding: Finding) -> str | None:
    """`new` or `unchanged` when a baseline is in use (SARIF's baselineState words)."""
    if report.baseline is None:
        return None
    return "new" if report.is_new(finding) else "unchanged"


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.path, f.cell or 0, f.line, f.col, f.code))


def repo_path(report: ScanReport, path: str) -> str:
    """A finding's path joined to the scanned folder as it was given (`src` + `a.py` ->
    `src/a.py`): what CI annotations and SARIF need, as they resolve paths from the checkout."""
    base = report.base.replace("\\", "/")
    return posixpath.normpath(posixpath.join(base, path)) if base not in ("", ".") else path


def location(finding: Finding) -> str:
    """`path:line:col`, or `path:cell N:line:col` for notebooks (1-based columns)."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.path}:{cell}{finding.line}:{finding.col + 1}"


def named_message(finding: Finding, message: str | None = None) -> str:
    """`message` (default: the finding's) led by the finding's subject when it does not name
    it: a project-file finding's api is `kind:subject` (`xla-env-var:XLA_USE_BF16`), and where
    only the message is shown (GitHub code scanning) "no native switch: ..." says nothing of
    which variable."""
    text = finding.message if message is None else message
    _kind, colon, subject = finding.api.partition(":")
    return f"{subject}: {text}" if colon and subject and subject not in text else text


def failing_text(gate: dict[str, Any], partly: int = 0) -> str:
    """What fails the gate, in words: "3 findings", "3 findings and 1 file not scanned";
    `partly` of the files not scanned were read in part (a notebook cell that does not parse)."""
    text = f"{gate['failing_findings']} findings"
    whole = gate.get("failing_errors", 0) - partly
    if whole:
        text += f" and {whole} file{'s' if whole != 1 else ''} not scanned"
    if partly:
        text += f" and {partly} file{'s' if partly != 1 else ''} partly scanned"
    return text


def partly_scanned(errors: Iterable[FileError]) -> int:
    """How many of these errors are of files whose other parts were read."""
    return sum(error.partial for error in errors)


# How many of what fails the gate its verdict names (the report lists the rest).
NAMED_FAILURES = 3


def failed_gate_text(report: ScanReport, gate: dict[str, Any]) -> str:
    """What fails the gate, in words and by name: "1 findings: job.yaml:1 NM813", "9 findings:
    a.py:3 NM101, ... and 6 more", a file not scanned as "x.py (not scanned)"."""
    names = [
        f"{f.path}:{'' if f.cell is None else f'cell {f.cell}:'}{f.line} {f.code}"
        for f in sorted_findings(report.gate_failures)
    ]
    names += [f"{error.path} ({error.what})" for error in report.failing_errors]
    counted = failing_text(gate, partly_scanned(report.failing_errors))
    if not names:  # counted, not held (a report spliced from a kept one): the count alone
        return counted
    shown = ", ".join(names[:NAMED_FAILURES])
    more = len(names) - NAMED_FAILURES
    return f"{counted}: {shown}" + (f" and {more} more" if more > 0 else "")
