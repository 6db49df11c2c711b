"""A content-hash cache of per-file scan results, so an unchanged file is never parsed twice.

The key covers everything a result depends on: the file's bytes and display path, the tool
version, and a digest of the rules, the matrix and the API map in use. The value is the
file's `ScannedFile`, report rows included, so a re-scan neither analyses nor encodes it
again. One SQLite file, and the segment files of report rows beside it; only the main
process of a scan reads and writes them.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.errors import CacheError
from neuron_migrate.incremental.row_store import Segment, StoredBytes
from neuron_migrate.incremental.stat_index import StatIndex, index_name
from neuron_migrate.scan.file_findings import ROW_SEPARATOR, FileFindings
from neuron_migrate.scan.scanned import ScannedFile
from neuron_migrate.scan.store import FileIndex, SignatureSource

if TYPE_CHECKING:
    import sqlite3


def default_cache_dir() -> Path:
    configured = os.environ.get("NEURON_MIGRATE_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neuron-migrate"


# SQLite's limit on the parameters of one statement is 999 in older builds.
MAX_QUERY_KEYS = 900
# Named by the layout of its entries: another layout is another file, never misread.
_DB_NAME = "scan-results-v6.sqlite"
_SEGMENT_GLOB = "rows-*.bin"
_SEPARATOR = len(ROW_SEPARATOR)  # after each entry's rows in a segment
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
# Every flush writes a segment; past this many, the next scan that wrote one merges them all.
MAX_SEGMENTS = 32
# A segment file no entry names (its writer died before committing, or a reader on Windows
# held it open while it was merged away) is deleted once this old: until then, it may be
# a segment another scan is about to commit.
_ORPHAN_AGE_S = 3600.0


class ResultCache:
    """Each entry: the file's `ScannedFile` as pickled tuples, without its report rows, and
    where the rows are: in a segment file beside the database (`incremental.row_store`),
    from which the report copies them without reading them into the process. In a segment,
    every entry's rows are followed by ROW_SEPARATOR, what the JSON report writes between two
    files' rows: files whose rows lie one after the other are copied as one range.

    Concurrent scans may share a cache: segments are immutable once their entries are
    committed, written before that by their one writer, and merged (and deleted) under the
    database's write lock."""

    def __init__(self, directory: Path) -> None:
        import sqlite3  # here: a re-scan that no file changed for never opens the cache

        self.directory: Path | None = directory  # as NoCache has it: None there
        self._folder = directory
        with cache_errors(directory, "open"):
            directory.mkdir(parents=True, exist_ok=True)
            # A re-scan may close it on another thread than the one that opened it, once done
            # with it (`report_snapshot`): never used from two threads at once.
            self._db = sqlite3.connect(directory / _DB_NAME, check_same_thread=False)
            self._db.execute("PRAGMA mmap_size = 1073741824")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, meta BLOB,"
                " segment INTEGER, start INTEGER, length INTEGER)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS segments"
                " (id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS stat_indexes (name TEXT PRIMARY KEY, records BLOB)"
            )
        self._pending: list[tuple[str, bytes, bytes]] = []
        self._segments: dict[str, Segment | None] = {}  # opened by name; None: unreadable
        self._wrote_segment = False

    def get(self, key: str) -> ScannedFile | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, ScannedFile]:
        """The cached results among `keys`, in one query per 900 (a re-scan asks for all)."""
        found: dict[str, ScannedFile] = {}
        for start in range(0, len(keys), MAX_QUERY_KEYS):
            chunk = keys[start : start + MAX_QUERY_KEYS]
            marks = ",".join("?" * len(chunk))
            query = (
                "SELECT r.key, r.meta, s.name, r.start, r.length FROM results AS r"
                f" LEFT JOIN segments AS s ON s.id = r.segment WHERE r.key IN ({marks})"
            )
            for key, meta, name, at, length in self._db.execute(query, chunk):
                rows = self._rows(name, at, length)
                result = None if rows is None else _joined(meta, rows)
                if result is not None:
                    found[key] = result
        return found

    def _rows(self, name: str | None, at: int, length: int) -> bytes | StoredBytes | None:
        """An entry's rows; None when its segment is gone or shorter than it says."""
        if not length:
            return b""
        if name is None:
            return None
        if name not in self._segments:
            try:
                self._segments[name] = Segment(self._folder / name)
            except OSError:  # merged away by another scan since this one's query
                self._segments[name] = None
        segment = self._segments[name]
        if segment is None or at + length + _SEPARATOR > segment.size:
            return None
        return StoredBytes(segment, at, length)

    def put(self, key: str, result: ScannedFile) -> None:
        meta, rows = _entry(result)
        self._pending.append((key, meta, rows))
        if len(self._pending) >= 500:
            self.flush()

    def flush(self) -> None:
        """Write the pending rows to a new segment, then commit the entries that name it."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        with cache_errors(self._folder, "write"):
            self._commit(pending)

    def _commit(self, pending: list[tuple[str, bytes, bytes]]) -> None:
        written = _write_segment(self._folder, [rows for _, _, rows in pending])
        with self._db:
            segment, starts = None, [0] * len(pending)
            if written is not None:
                name, starts, size = written
                insert = "INSERT INTO segments (name, size) VALUES (?, ?)"
                segment = self._db.execute(insert, (name, size)).lastrowid
                self._wrote_segment = True
            entries = [
                (key, meta, segment if rows else None, start, len(rows))
                for (key, meta, rows), start in zip(pending, starts, strict=True)
            ]
            self._db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)", entries)

    def file_index(self, config_digest: str, taken: SignatureSource | None) -> StatIndex:
        """The stat index of scans from this folder with this configuration."""
        return StatIndex(self.stat_index(index_name(config_digest)), taken=taken)

    def keep_file_index(self, config_digest: str, index: FileIndex) -> None:
        if isinstance(index, StatIndex) and index.changed():
            self.store_stat_index(index_name(config_digest), index.blob())

    def stat_index(self, name: str) -> bytes | None:
        """The records of a `neuron_migrate.incremental.stat_index.StatIndex`, if stored."""
        row = self._db.execute("SELECT records FROM stat_indexes WHERE name = ?", (name,))
        found = row.fetchone()
        return found[0] if found else None

    def store_stat_index(self, name: str, records: bytes) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO stat_indexes VALUES (?, ?)", (name, records))

    def close(self) -> None:
        self.flush()
        if self._wrote_segment:
            (count,) = self._db.execute("SELECT count(*) FROM segments").fetchone()
            if count > MAX_SEGMENTS:
                merge_segments(self._db, self._folder)
        self._db.close()


@contextlib.contextmanager
def cache_errors(folder: Path, doing: str) -> Iterator[None]:
    """A cache folder that cannot be used (missing parent, read-only, full) as one line that
    names it; what was being written is not committed."""
    import sqlite3  # loaded by then: only an open cache reaches here

    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise CacheError(
            f"cannot {doing} the cache in {folder}: {reason} (--cache-dir DIR or --no-cache)"
        ) from None


def _write_segment(folder: Path, rows: list[bytes]) -> tuple[str, list[int], int] | None:
    """A new segment holding the non-empty `rows` one after another, each followed by the
    separator, on disk before any entry names it: its name, where each of `rows` starts in
    it (0 for an empty one) and its size; None when there is nothing to hold."""
    if not any(rows):
        return None
    name = f"rows-{os.urandom(8).hex()}.bin"
    starts, at = [], 0
    fd = os.open(folder / name, _NEW_FILE, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in rows:
                starts.append(at if piece else 0)
                if piece:
                    handle.write(piece)
                    handle.write(ROW_SEPARATOR)
                    at += len(piece) + _SEPARATOR
            handle.flush()
            os.fsync(handle.fileno())  # the commit that follows must not name lost bytes
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
        raise
    return name, starts, at


def merge_segments(db: sqlite3.Connection, folder: Path) -> None:
    """Copy every entry's rows into one new segment and delete the old ones, under the write
    lock. A scan reading the cache meanwhile opens the segments its query names while the
    query runs, which the lock waits for; one that finds a segment gone analyses the file
    again. Entries whose segment cannot be read are dropped."""
    name = f"rows-{os.urandom(8).hex()}.bin"
    db.execute("BEGIN IMMEDIATE")
    try:
        merged = dict(db.execute("SELECT id, name FROM segments"))
        entries = db.execute(
            "SELECT rowid, segment, start, length FROM results"
            " WHERE segment IS NOT NULL ORDER BY segment, start"
        ).fetchall()
        places, lost, size = _copy_rows(entries, merged, folder / name)
        db.execute("DELETE FROM segments")
        new = db.execute("INSERT INTO segments (name, size) VALUES (?, ?)", (name, size)).lastrowid
        db.executemany(
            "UPDATE results SET segment = ?, start = ? WHERE rowid = ?",
            [(new, at, rowid) for rowid, at in places],
        )
        db.executemany("DELETE FROM results WHERE rowid = ?", [(rowid,) for rowid in lost])
        db.commit()
    except BaseException:
        db.rollback()
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
        raise
    live = {found for (found,) in db.execute("SELECT name FROM segments")}
    _delete_segments(folder, set(merged.values()) - live, live)


def _copy_rows(
    entries: list[tuple[int, int, int, int]], names: dict[int, str], target: Path
) -> tuple[list[tuple[int, int]], list[int], int]:
    """Copy the rows of `entries` (rowid, segment, start, length) into a new file `target`:
    (rowid, new start) of those copied, the rowids of those whose segment is unreadable, and
    the new file's size."""
    places: list[tuple[int, int]] = []
    lost: list[int] = []
    opened: dict[int, Segment | None] = {}
    at = 0
    out = os.open(target, _NEW_FILE, 0o666)
    try:
        for rowid, segment, start, length in entries:
            if segment not in opened:
                try:
                    opened[segment] = Segment(target.parent / names[segment])
                except (OSError, KeyError):
                    opened[segment] = None
            source = opened[segment]
            if source is None or start + length + _SEPARATOR > source.size:
                lost.append(rowid)
                continue
            StoredBytes(source, start, length + _SEPARATOR).copy_to(out)
            places.append((rowid, at))
            at += length + _SEPARATOR
        os.fsync(out)
    finally:
        os.close(out)
    return places, lost, at


def _delete_segments(folder: Path, merged: set[str], live: set[str]) -> None:
    """The merged segments, and orphans old enough not to be another scan's next commit."""
    now = time.time()
    for path in folder.glob(_SEGMENT_GLOB):
        if path.name in live:
            continue
        with contextlib.suppress(OSError):  # held open on Windows: a later merge deletes it
            if path.name in merged or now - path.stat().st_mtime > _ORPHAN_AGE_S:
                path.unlink()


# An entry's meta is the result's fields as a tuple, and its findings' fields (less the rows) as
# a tuple inside it: plain tuples load several times faster than pickled dataclasses, and a
# re-scan loads one a file.
# All but `from_cache`, the last field, which a lookup sets.
_RESULT_FIELDS = ScannedFile._fields[:-1]
_TABLE_FIELDS = tuple(name for name in FileFindings._fields if name != "rows")
_FINDINGS_AT = _RESULT_FIELDS.index("findings")
_ROWS_AT = FileFindings._fields.index("rows")


def _entry(result: ScannedFile) -> tuple[bytes, bytes]:
    values = [getattr(result, name) for name in _RESULT_FIELDS]
    table = result.findings
    if table is not None:
        values[_FINDINGS_AT] = tuple(getattr(table, name) for name in _TABLE_FIELDS)
    return pickle.dumps(tuple(values), pickle.HIGHEST_PROTOCOL), bytes(table.rows) if table else b""


def _joined(meta: bytes, rows: bytes | StoredBytes) -> ScannedFile | None:
    # Positional arguments: a re-scan builds one of each a file, and keywords cost more.
    try:
        values = list(pickle.loads(meta))
        table = values[_FINDINGS_AT]
        if len(values) != len(_RESULT_FIELDS):
            return None
        if table is not None:
            if len(table) != len(_TABLE_FIELDS):
                return None
            parts = (*table[:_ROWS_AT], rows, *table[_ROWS_AT:])
            values[_FINDINGS_AT] = FileFindings(*parts)
        return ScannedFile(*values)
    except Exception:  # an entry this build cannot read: analyse the file again
        return None
