"""The canonical, versioned JSON report. Its schema is documented in docs/report-schema.md.

`report merge` reads these back (`neuron_migrate.report.load`), so everything a format or the
gate needs is in here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.api import ScanReport
from neuron_migrate.pieces import Piece, coalesced
from neuron_migrate.report import indented_json
from neuron_migrate.report.summary import summarize
from neuron_migrate.scan.file_findings import ROW_SEPARATOR, FileFindings, run_tail

SCHEMA_VERSION = "1.3"


def scan_to_dict(report: ScanReport) -> dict[str, Any]:
    """The report as one JSON-ready dict (what `render_json` writes)."""
    data = _document(report)
    data["findings"] = [json.loads(row) for row in finding_rows(report)]
    return data


def _document(report: ScanReport) -> dict[str, Any]:
    return {
        **_leading(report),
        "findings": [],
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


def _leading(report: ScanReport) -> dict[str, Any]:
    """What comes before the findings: the scan's settings, none of its results."""
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
    }


def finding_rows(report: ScanReport) -> Iterator[bytes]:
    """Each reported finding's JSON object, in report order, as this run lists it."""
    for table in sorted(report.files, key=lambda t: t.path):
        if table:
            yield from b"".join(map(bytes, listed_rows(report, table))).split(ROW_SEPARATOR)


def listed_rows(report: ScanReport, table: FileFindings) -> list[Piece]:
    """The file's rows as this run lists them. The stored rows say "no baseline, passes the
    gate": most files are written as they are, and only rows that differ are touched."""
    failing = report.failing_positions(table)
    if report.baseline is None:
        return table.with_tails((position, _FAILING) for position in failing)
    fails = set(failing)
    states = ("new" if report.is_new_fingerprint(fp) else "unchanged" for fp in table.fingerprints)
    return table.with_tails(
        (position, run_tail(state, position in fails)) for position, state in enumerate(states)
    )


_FAILING = run_tail(None, True)


def _order(finding: Any) -> tuple[str, int, int, int, str]:
    return (finding.path, finding.cell or 0, finding.line, finding.col, finding.code)


_FINDINGS_SLOT = "\x00findings\x00"


def render_json(report: ScanReport) -> str:
    return b"".join(map(bytes, json_chunks(report))).decode("ascii")


def json_chunks(report: ScanReport) -> Iterator[Piece]:
    """Indented JSON with one finding per line: readable and grep-able. The rows were encoded
    by the workers (an indented dump of 80,000 findings takes seconds in json's pure-Python
    encoder); the rest of the document is small. Written a file's rows at a time."""
    head, tail = around_findings(report)
    tables = sorted((t for t in report.files if t), key=lambda t: t.path)
    yield from framed(head, tail, coalesced(_all_rows(report, tables), ROW_SEPARATOR))


def framed(head: bytes, tail: bytes, rows: Iterable[Piece]) -> Iterator[Piece]:
    """The document around its findings: `head`, the findings' `rows` (joined by
    ROW_SEPARATOR, taken as they are written), `tail`."""
    pieces = iter(rows)
    first = next(pieces, None)
    if first is None:
        yield head + b"[]" + tail + b"\n"
        return
    yield head + _OPEN
    yield first
    yield from pieces
    yield b"\n  ]" + tail + b"\n"


_OPEN = b"[\n    "  # between the head and the first finding


def around_findings(report: ScanReport) -> tuple[bytes, bytes]:
    """The document, indented, before and after the findings list."""
    data = _document(report)
    data["findings"] = _FINDINGS_SLOT
    return _split_at_findings(data)


def opening(report: ScanReport) -> bytes:
    """What `framed` writes before the first finding of a report that has findings. It depends
    on the scan's settings alone: the same for every scan with the same settings."""
    return _split_at_findings({**_leading(report), "findings": _FINDINGS_SLOT})[0] + _OPEN


def _split_at_findings(data: dict[str, Any]) -> tuple[bytes, bytes]:
    # Thousands of unmapped APIs on a large tree: json's indenting encoder (pure Python) would
    # take milliseconds over them.
    text = indented_json.dumps(data, ensure_ascii=True)  # json escapes the rest
    head, tail = text.split(json.dumps(_FINDINGS_SLOT), 1)
    return head.encode("ascii"), tail.encode("ascii")


def _all_rows(report: ScanReport, tables: list[FileFindings]) -> Iterator[Piece]:
    for index, table in enumerate(tables):
        if index:
            yield ROW_SEPARATOR
        yield from listed_rows(report, table)
