"""The first bytes of a re-scan's JSON report, written while the tree is still being statted.

A spliced re-scan (`incremental.report_snapshot`) stats every file before it knows which
changed (unless a server's watch names them), then copies tens of MB of the last report's rows
into the new one. On a large tree each takes tens of milliseconds, and only the copy leaves the
interpreter free: the kernel copies, and no lock is held meanwhile. So the copy starts at once.
The stat loop takes the files in report order and says, a block of files at a time, how far
every file has been found as it was (`confirm`); a thread writes the report's opening and those
files' rows. Where the first changed file lies, it stops; the rest of the report is written
after what it wrote (`stop` says how many bytes that was).

What it writes is the start of the report whatever the re-scan goes on to find, spliced or
scanned in full: the opening depends on the scan's settings alone (a snapshot serves only
scans with its settings), and the rows of the files before the first changed one, in report
order, are those files' rows as the last report had them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from neuron_migrate.incremental.row_store import StoredBytes
from neuron_migrate.pieces import Piece
from neuron_migrate.report.output import Sink
from neuron_migrate.scan.file_findings import ROW_SEPARATOR

# A file's rows in the report: the row file, where they start in it, how long they are.
Rows = tuple[str, int, int]
# The bytes at a place in a row file; OSError when the file is shorter than that.
Stored = Callable[[str, int, int], StoredBytes]


class PrefixWriter:
    """Writes to `sink` the report's `opening` and then the rows (`rows`, by file) of the
    files confirmed unchanged, in report order (`order`: the files' indices), on a thread of
    its own."""

    def __init__(
        self,
        sink: Sink,
        opening: bytes,
        order: list[int],
        rows: list[Rows | None],
        stored: Stored,
    ) -> None:
        self._sink = sink
        self._opening = opening
        self._order = order
        self._rows = list(rows)  # as they are now: the re-scan changes the snapshot's own list
        self._stored = stored
        self._state = threading.Condition()
        self._confirmed = 0  # positions in `order` known unchanged
        self._stopping = False
        self._written = 0  # bytes
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="report prefix", daemon=True)
        self._thread.start()

    def confirm(self, position: int) -> None:
        """Every file before `position` in report order is as it was."""
        with self._state:
            self._confirmed = position
            self._state.notify()

    def stop(self) -> int:
        """Write what is confirmed and stop; the number of bytes written. Raises what writing
        them raised."""
        with self._state:
            self._stopping = True
            self._state.notify()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._written

    def _run(self) -> None:
        done = 0
        try:
            while True:
                with self._state:
                    while self._confirmed == done and not self._stopping:
                        self._state.wait()
                    upto = self._confirmed
                if upto == done:
                    return
                listed = [index for index in self._order[done:upto] if self._rows[index]]
                done = upto
                try:
                    pieces = row_runs(listed, self._rows, self._stored)
                except OSError:  # a row file cut short: the re-scan finds it too, and copes
                    return
                if pieces:
                    pieces.insert(0, ROW_SEPARATOR if self._written else self._opening)
                    self._sink.write(pieces)
                    self._written += sum(map(len, pieces))
        except BaseException as error:  # for `stop` to raise
            self._error = error


def row_runs(listed: Iterable[int], rows: list[Rows | None], stored: Stored) -> list[Piece]:
    """The rows of the files at `listed`, in that order, joined by ROW_SEPARATOR: rows next to
    each other in a row file as one run. (What `row_store.coalesced` makes of one stored piece
    a file, gathered on the places instead: a third of the time.)"""
    pieces: list[Piece] = []
    gap = len(ROW_SEPARATOR)
    name, start, end = None, 0, 0  # the run being gathered
    for index in listed:
        place = rows[index]
        assert place is not None  # listed: it has rows
        if place[0] == name and end + gap == place[1]:
            end = place[1] + place[2]
            continue
        if name is not None:
            pieces += [stored(name, start, end - start), ROW_SEPARATOR]
        name, start, end = place[0], place[1], place[1] + place[2]
    if name is not None:
        pieces.append(stored(name, start, end - start))
    return pieces
