"""Counts every report format shares."""

from __future__ import annotations

from collections import Counter
from typing import Any

from neuron_migrate.api import ScanReport
from neuron_migrate.findings import STATUSES

# Worst first: the order in which reports list statuses.
STATUS_ORDER = ("unsupported", "cpu_fallback", "float64", "xla", "advice", "native")
assert set(STATUS_ORDER) == set(STATUSES)


def summarize(report: ScanReport) -> dict[str, Any]:
    by_status = Counter(f.status for f in report.findings)
    failures = report.gate_failures
    return {
        "files": {
            "total": report.files_total,
            "analyzed": report.files_analyzed,
            "skipped_by_prefilter": report.files_prefiltered,
            "from_cache": report.files_cached,
            "skipped": len(report.skipped),
            "errors": len(report.errors),
            "with_findings": len({f.path for f in report.findings}),
        },
        "findings": len(report.findings),
        "by_status": {s: by_status.get(s, 0) for s in STATUS_ORDER},
        "by_category": dict(sorted(Counter(f.category for f in report.findings).items())),
        "by_code": dict(sorted(Counter(f.code for f in report.findings).items())),
        "torch_xla_uses": sum(1 for f in report.findings if f.status == "xla"),
        "fixable": sum(1 for f in report.findings if f.fixable),
        "unmapped_apis": dict(report.unmapped_apis.most_common()),
        "gate": {
            "fail_on": sorted(report.fail_on),
            "passed": not failures,
            "failing_findings": len(failures),
        },
        "elapsed_s": round(report.elapsed_s, 3),
    }
