"""JUnit XML, for CI systems that show test results (GitLab, Jenkins, Azure DevOps, CircleCI).

One test suite per file; each finding that needs a change is a test case, failing when it fails
the gate, skipped when a suppression comment covers it, passing otherwise (the message is in its
output). Files that could not be scanned are test errors. A `gate` test case always exists, so a
clean scan still reports one passing test.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping

from neuron_migrate.api import ScanReport
from neuron_migrate.report.evidence_words import evidence_titles, in_words
from neuron_migrate.report.summary import failed_gate_text, location, sorted_findings, summarize
from neuron_migrate.scan.findings import Finding


def render_junit(report: ScanReport) -> str:
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in sorted_findings(report.findings):
        if f.status != "native":
            by_file[f.path].append(f)
    suppressed = defaultdict(list)
    for s in report.suppressed:
        suppressed[s.finding.path].append(s)
    errors = {e.path: e for e in report.errors}
    titles = evidence_titles(report.target)

    root = ET.Element("testsuites", name="neuron-migrate")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for path in sorted(set(by_file) | set(suppressed) | set(errors)):
        suite = ET.SubElement(root, "testsuite", name=path)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if path in errors:
            case = ET.SubElement(suite, "testcase", name="scan", classname=path)
            error = errors[path]
            message = f"{error.what}: {error.reason}" if error.partial else error.reason
            ET.SubElement(case, "error", message=message, type=error.kind)
            counts["tests"] += 1
            counts["errors"] += 1
        for f in by_file.get(path, []):
            case = _case(suite, f)
            counts["tests"] += 1
            if report.fails(f):
                message = in_words(f.message, titles)
                failure = ET.SubElement(case, "failure", message=message, type=f.status)
                failure.text = _details(f, titles)
                counts["failures"] += 1
            else:
                ET.SubElement(case, "system-out").text = _details(f, titles)
        for s in sorted(
            suppressed.get(path, []), key=lambda s: (s.finding.cell or 0, s.finding.line)
        ):
            case = _case(suite, s.finding)
            reason = f": {s.reason}" if s.reason else ""
            ET.SubElement(case, "skipped", message=f"{s.kind}{reason}")
            counts["tests"] += 1
            counts["skipped"] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value

    gate = summarize(report)["gate"]
    suite = ET.SubElement(root, "testsuite", name="neuron-migrate gate")
    case = ET.SubElement(suite, "testcase", name="gate", classname="neuron-migrate")
    statuses = ", ".join(gate["fail_on"]) or "none"
    if not gate["passed"]:
        ET.SubElement(
            case,
            "failure",
            type="gate",
            message=f"gate failed: {failed_gate_text(report, gate)} (fail-on: {statuses})",
        )
    suite.set("tests", "1")
    suite.set("failures", "0" if gate["passed"] else "1")
    totals["tests"] += 1
    totals["failures"] += 0 if gate["passed"] else 1
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _case(suite: ET.Element, f: Finding) -> ET.Element:
    name = f"{f.code} {f.api} ({location(f)})"
    return ET.SubElement(suite, "testcase", name=name, classname=f.path, line=str(f.line))


def _details(f: Finding, titles: Mapping[str, str]) -> str:
    lines = [f"{location(f)} {f.code} [{f.status}] {in_words(f.message, titles)}"]
    if f.replacement:
        lines.append(f"replacement: {f.replacement}")
    if f.snippet:
        lines.append(f"code: {f.snippet}")
    return "\n".join(lines)
