"""One file's reported findings, held as the rows of JSON the report writes.

A scan of a large tree reports tens of thousands of findings. As `Finding` objects they cost
the main process hundreds of MB, a pickle round trip from every worker and from the cache, and
an encoding per report. Here each finding is encoded once, by the worker that found it, and a
file's rows are kept as the very bytes the JSON report lists for that file when no baseline is
in use and no finding fails the gate; the cache stores those bytes, and the report writes them
as they are (or sets the two run-dependent keys of the rows that differ, found by the offsets
kept beside the rows). Beside them too are what the gate and the summary count -- each finding's
kind (code, status, category, fixable) and fingerprint -- so neither reads a row. `Finding`
objects are decoded only for the formats that list them.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Container, Iterable, Sequence
from typing import Any, Literal, TypeVar

from neuron_migrate.pieces import HeldBytes, Piece
from neuron_migrate.scan.findings import Finding
from neuron_migrate.scan.gate import gate_status
from neuron_migrate.scan.records import Record

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


def run_tail(baseline: str | None, gate: bool) -> bytes:
    """The end of a row whose `baseline` and `gate` keys are set for this run."""
    return _TAILS[(baseline, gate)]


def with_run_keys(row: bytes, baseline: str | None, gate: bool) -> bytes:
    """`row` with its `baseline` and `gate` keys set for this run."""
    return row[: -len(_DEFAULT_TAIL)] + _TAILS[(baseline, gate)]


# What the gate and the summary count of a finding: (code, status, category, fixable); the
# status is `gate.gate_status`, which tells an unsure fallback apart.
Kind = tuple[str, str, str, bool]


class FileFindings(Record):
    """The findings of one file, in report order, as JSON rows with their counted fields.
    Never changed once made.

    The counted fields are kept per kind, not per finding: a file of a thousand findings holds
    a dozen kinds, so the cache stores (and a re-scan unpickles) a few small tuples and packed
    integers instead of thousands of strings, and the summary and the gate count kinds."""

    _fields = ("path", "rows", "row_ends", "kinds", "kind_counts", "kind_of", "fingerprint_lines")
    __slots__ = _fields

    def __init__(
        self,
        path: str,
        rows: bytes | HeldBytes,
        row_ends: bytes,
        kinds: tuple[Kind, ...],
        kind_counts: tuple[int, ...],
        kind_of: bytes,
        fingerprint_lines: str,
    ) -> None:
        self.path = path
        self.rows = rows  # `finding_row`s joined by ROW_SEPARATOR; cached: in a segment
        self.row_ends = row_ends  # packed `_OFFSET`s: where each row ends in `rows`
        self.kinds = kinds  # the distinct kinds, in order of first finding
        self.kind_counts = kind_counts  # how many findings have each kind
        self.kind_of = kind_of  # packed `_INDEX`es: each finding's index in `kinds`
        self.fingerprint_lines = fingerprint_lines  # the findings' fingerprints, one a line

    @classmethod
    def of(cls, path: str, findings: Iterable[Finding]) -> FileFindings:
        ordered = sorted(findings, key=finding_order)
        return cls.from_rows(
            path,
            [finding_row(f) for f in ordered],
            [(f.code, gate_status(f), f.category, f.fixable) for f in ordered],
            [f.fingerprint for f in ordered],
        )

    @classmethod
    def from_rows(
        cls, path: str, rows: Sequence[bytes], kinds: Sequence[Kind], fingerprints: Sequence[str]
    ) -> FileFindings:
        """The table of findings given, in order, as their rows, kinds and fingerprints."""
        index: dict[Kind, int] = {}
        kind_of = [index.setdefault(kind, len(index)) for kind in kinds]
        counts = [0] * len(index)
        for position in kind_of:
            counts[position] += 1
        ends = []
        end = -len(ROW_SEPARATOR)
        for row in rows:
            end += len(ROW_SEPARATOR) + len(row)
            ends.append(end)
        return cls(
            path,
            ROW_SEPARATOR.join(rows),
            _packed(_OFFSET, ends),
            tuple(index),
            tuple(counts),
            _packed(_INDEX, kind_of),
            "\n".join(fingerprints),
        )

    def __len__(self) -> int:
        return len(self.kind_of) // _INDEX_SIZE

    @property
    def codes(self) -> tuple[str, ...]:
        return self._field(0)

    @property
    def statuses(self) -> tuple[str, ...]:
        return self._field(1)

    @property
    def fingerprints(self) -> tuple[str, ...]:
        return tuple(self.fingerprint_lines.split("\n")) if self.kind_of else ()

    def _field(self, column: int) -> tuple[Any, ...]:
        values = [kind[column] for kind in self.kinds]
        return tuple(values[position] for position in _unpacked(_INDEX, self.kind_of))

    def count_with_status(self, statuses: Container[str]) -> int:
        """How many findings have one of `statuses`."""
        return counted_with_status(zip(self.kinds, self.kind_counts, strict=True), statuses)

    def positions_with_status(self, statuses: Container[str]) -> list[int]:
        """The positions of the findings that have one of `statuses`."""
        chosen = {i for i, (_, status, _, _) in enumerate(self.kinds) if status in statuses}
        if not chosen:
            return []
        positions = enumerate(_unpacked(_INDEX, self.kind_of))
        return [position for position, kind in positions if kind in chosen]

    def row_list(self) -> list[bytes]:
        return bytes(self.rows).split(ROW_SEPARATOR) if self.kind_of else []

    def with_tails(self, tails: Iterable[tuple[int, bytes]]) -> list[Piece]:
        """The rows, as pieces to write in order, with the run-dependent tail of some replaced:
        (position, tail) pairs in increasing position. Only those rows are touched; the bytes
        between are slices of `rows`, not copies (a large file's rows are megabytes)."""
        ends = _unpacked(_OFFSET, self.row_ends)
        rows = memoryview(self.rows) if isinstance(self.rows, bytes) else self.rows
        pieces: list[Piece] = []
        start = 0
        for position, tail in tails:
            end = ends[position]
            pieces.append(rows[start : end - len(_DEFAULT_TAIL)])
            pieces.append(tail)
            start = end
        if not pieces:
            return [self.rows]
        pieces.append(rows[start:])
        return pieces

    def decode(self) -> list[Finding]:
        if not self.kind_of:
            return []
        rows = json.loads(b"[" + bytes(self.rows) + b"]")
        return [Finding.from_json(item) for item in rows]

    def where(self, keep: Sequence[bool]) -> FileFindings:
        """The findings whose flag in `keep` is true."""
        if all(keep):
            return self
        kinds = [self.kinds[position] for position in _unpacked(_INDEX, self.kind_of)]
        return FileFindings.from_rows(
            self.path,
            _kept(self.row_list(), keep),
            _kept(kinds, keep),
            _kept(list(self.fingerprints), keep),
        )


def counted_with_status(kind_counts: Iterable[tuple[Kind, int]], statuses: Container[str]) -> int:
    """How many of the findings counted by kind have one of `statuses`."""
    return sum(count for (_, status, _, _), count in kind_counts if status in statuses)


# Packed integers: little-endian whatever the machine, so that a cache moves between machines.
_Typecode = Literal["H", "Q"]
_INDEX: _Typecode = "H"  # a file holds far fewer than 65,536 kinds of finding
_INDEX_SIZE = 2
_OFFSET: _Typecode = "Q"


def _packed(typecode: _Typecode, values: list[int]) -> bytes:
    packed = array(typecode, values)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _unpacked(typecode: _Typecode, data: bytes) -> Sequence[int]:
    if sys.byteorder == "little":
        return memoryview(data).cast(typecode)
    values = array(typecode, data)
    values.byteswap()
    return values


def _kept(values: Sequence[_T], keep: Sequence[bool]) -> list[_T]:
    return [value for value, flag in zip(values, keep, strict=True) if flag]


def group_by_file(findings: Iterable[Finding]) -> list[FileFindings]:
    """Findings of any files, as one `FileFindings` per file, in path order."""
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    return [FileFindings.of(path, by_path[path]) for path in sorted(by_path)]
