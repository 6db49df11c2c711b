"""The report's first bytes, written by a thread while the re-scan still stats the tree: only
what is confirmed, in report order, and whatever writing them raised."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from neuron_migrate.incremental.report_prefix import PrefixWriter, Rows, Stored, row_runs
from neuron_migrate.incremental.row_store import Segment, StoredBytes, after
from neuron_migrate.pieces import Piece
from neuron_migrate.report.output import Chunk, Sink
from neuron_migrate.scan.file_findings import ROW_SEPARATOR

ROWS = [b'{"a": 1}', b'{"b": 2}', b'{"c": 3}', b'{"d": 4}']


class Collected(Sink):
    """A sink that keeps what it is given."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(None)
        self.data = b""
        self.fail = fail

    def write(self, chunks: Iterable[Chunk]) -> None:
        if self.fail:
            raise BrokenPipeError("stdout closed")
        self.data += b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)


def _row_file(tmp_path: Path) -> tuple[list[Rows | None], dict[str, Segment]]:
    """ROWS in one row file as a report lists them, one file each; a fifth file has none."""
    path = tmp_path / "one.rows"
    path.write_bytes(ROW_SEPARATOR.join(ROWS))
    places: list[Rows | None] = []
    start = 0
    for row in ROWS:
        places.append(("one.rows", start, len(row)))
        start += len(row) + len(ROW_SEPARATOR)
    return [*places, None], {"one.rows": Segment(path)}


def _stored(segments: dict[str, Segment]) -> Stored:
    def stored(name: str, start: int, length: int) -> StoredBytes:
        segment = segments[name]
        if start + length > segment.size:
            raise OSError("short")
        return StoredBytes(segment, start, length)

    return stored


def test_only_confirmed_files_are_written_in_report_order(tmp_path: Path) -> None:
    rows, segments = _row_file(tmp_path)
    sink = Collected()
    order = [4, 0, 1, 3, 2]  # report order: the file without rows first; 3 before 2
    writer = PrefixWriter(sink, b"HEAD[", order, rows, _stored(segments))
    writer.confirm(2)
    writer.confirm(3)
    written = writer.stop()
    assert sink.data == b"HEAD[" + ROW_SEPARATOR.join(ROWS[:2])
    assert written == len(sink.data)


def test_nothing_confirmed_writes_nothing(tmp_path: Path) -> None:
    rows, segments = _row_file(tmp_path)
    sink = Collected()
    writer = PrefixWriter(sink, b"HEAD[", [0, 1, 2, 3, 4], rows, _stored(segments))
    writer.confirm(0)
    assert writer.stop() == 0 and sink.data == b""
    only_rowless = PrefixWriter(sink, b"HEAD[", [4, 0], rows, _stored(segments))
    only_rowless.confirm(1)
    assert only_rowless.stop() == 0 and sink.data == b""


def test_a_short_row_file_stops_it_quietly_and_a_failed_write_is_raised(tmp_path: Path) -> None:
    rows, segments = _row_file(tmp_path)
    rows[3] = ("one.rows", 10_000, 5)  # past the end of the file
    sink = Collected()
    writer = PrefixWriter(sink, b"[", [0, 1, 2, 3], rows, _stored(segments))
    writer.confirm(4)
    assert writer.stop() == len(sink.data) == 0  # the rest of the report is the scan's
    failing = PrefixWriter(Collected(fail=True), b"[", [0], rows, _stored(segments))
    failing.confirm(1)
    with pytest.raises(BrokenPipeError):
        failing.stop()


def test_row_runs_copy_rows_that_lie_together_at_once(tmp_path: Path) -> None:
    rows, segments = _row_file(tmp_path)
    runs = row_runs([0, 1, 3, 2], rows, _stored(segments))
    assert [bytes(p) for p in runs] == [
        ROW_SEPARATOR.join(ROWS[:2]),
        ROW_SEPARATOR,
        ROWS[3],
        ROW_SEPARATOR,
        ROWS[2],
    ]


def test_after_skips_bytes_across_pieces(tmp_path: Path) -> None:
    _, segments = _row_file(tmp_path)
    stored = _stored(segments)("one.rows", 0, len(ROWS[0]))
    pieces: list[Piece] = [b"abc", stored, memoryview(b"xyz")]
    whole = b"".join(bytes(p) for p in pieces)
    for skipped in range(len(whole) + 2):
        assert b"".join(bytes(p) for p in after(pieces, skipped)) == whole[skipped:]
