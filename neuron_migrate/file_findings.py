"""One file's reported findings, held as the rows of JSON the report writes.

A scan of a large tree reports tens of thousands of findings. As `Finding` objects they cost
the main process hundreds of MB, a pickle round trip from every worker and from the cache, and
an encoding per report. Here each finding is encoded once, by the worker that found it, and a
file's rows are kept as the very bytes the JSON report lists for that file when no baseline is
in use and no finding fails the gate; the cache stores those bytes, and the report writes them
as they are (or sets the two run-dependent keys of the rows that differ). Beside the rows are
the fields the gate and the summary count (code, status, category, fixable, fingerprint), so
neither reads a row. `Finding` objects are decoded only for the formats that list them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from neuron_migrate.findings import Finding

# The encoder of `json.dumps(..., separators=(", ", ": "))`, built once instead of per row.
_encode = json.JSONEncoder(separators=(", ", ": "), check_circular=False).encode
_T = TypeVar("_T")

# Between two rows of the JSON report's `findings` list: one finding a line. JSON text holds
# no raw newline, so this never occurs inside a row.
ROW_SEPARATOR = b",\n    "


def finding_order(finding: Finding) -> tuple[int, int, int, str]:
    """The order of findings within a file; reports list files by path."""
    return (finding.cell or 0, finding.line, finding.col, finding.code)


def _tail(baseline: str | None, gate: bool) -> bytes:
    return f"{_encode(baseline)}, {_encode('gate')}: {_encode(gate)}}}".encode("ascii")


# A row ends `"baseline": <state>, "gate": <gate>}`: the keys that depend on the run.
_TAILS = {
    (state, gate): _tail(state, gate)
    for state in (None, "new", "unchanged")
    for gate in (False, True)
}
_DEFAULT_TAIL = _TAILS[(None, False)]


def finding_row(finding: Finding) -> bytes:
    """The finding's JSON object as the report lists it, with no baseline and passing the
    gate. ASCII, as json escapes the rest."""
    data = finding.to_json()
    data["baseline"] = None
    data["gate"] = False
    return _encode(data).encode("ascii")


def with_run_keys(row: bytes, baseline: str | None, gate: bool) -> bytes:
    """`row` with its `baseline` and `gate` keys set for this run."""
    return row[: -len(_DEFAULT_TAIL)] + _TAILS[(baseline, gate)]


@dataclass(frozen=True)
class FileFindings:
    """The findings of one file, in report order, as JSON rows with their counted fields."""

    path: str
    rows: bytes  # `finding_row`s joined by ROW_SEPARATOR
    codes: tuple[str, ...]
    statuses: tuple[str, ...]
    categories: tuple[str, ...]
    fixable: tuple[bool, ...]
    fingerprints: tuple[str, ...]

    @classmethod
    def of(cls, path: str, findings: Iterable[Finding]) -> FileFindings:
        ordered = sorted(findings, key=finding_order)
        return cls(
            path,
            ROW_SEPARATOR.join(map(finding_row, ordered)),
            tuple(f.code for f in ordered),
            tuple(f.status for f in ordered),
            tuple(f.category for f in ordered),
            tuple(f.fixable for f in ordered),
            tuple(f.fingerprint for f in ordered),
        )

    def __len__(self) -> int:
        return len(self.codes)

    def row_list(self) -> list[bytes]:
        return self.rows.split(ROW_SEPARATOR) if self.codes else []

    def decode(self) -> list[Finding]:
        if not self.codes:
            return []
        return [Finding.from_json(item) for item in json.loads(b"[" + self.rows + b"]")]

    def where(self, keep: Sequence[bool]) -> FileFindings:
        """The findings whose flag in `keep` is true."""
        if all(keep):
            return self
        return FileFindings(
            self.path,
            ROW_SEPARATOR.join(_kept(tuple(self.row_list()), keep)),
            _kept(self.codes, keep),
            _kept(self.statuses, keep),
            _kept(self.categories, keep),
            _kept(self.fixable, keep),
            _kept(self.fingerprints, keep),
        )

    def with_rows(self, rows: bytes) -> FileFindings:
        return FileFindings(
            self.path,
            rows,
            self.codes,
            self.statuses,
            self.categories,
            self.fixable,
            self.fingerprints,
        )


def _kept(values: tuple[_T, ...], keep: Sequence[bool]) -> tuple[_T, ...]:
    return tuple(value for value, flag in zip(values, keep, strict=True) if flag)


def group_by_file(findings: Iterable[Finding]) -> list[FileFindings]:
    """Findings of any files, as one `FileFindings` per file, in path order."""
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    return [FileFindings.of(path, by_path[path]) for path in sorted(by_path)]
