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
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.errors import CacheError
from neuron_migrate.incremental import sealed
from neuron_migrate.incremental.row_store import Segment, StoredBytes, file_checksum
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
_DB_NAME = "scan-results-v8.sqlite"
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
    """Each entry: the file's `ScannedFile` as pickled tuples, without its report rows, sealed
    (`incremental.sealed`: data only, checked by a checksum that also covers its key and where
    its rows lie), and where the rows are: in a segment file beside the database
    (`incremental.row_store`), from which the report copies them without reading them into the
    process. In a segment, every entry's rows are followed by ROW_SEPARATOR, what the JSON
    report writes between two files' rows: files whose rows lie one after the other are copied
    as one range.

    Concurrent scans may share a cache: segments are immutable once their entries are
    committed, written before that by their one writer, and merged (and deleted) under the
    database's write lock. Each segment's checksum is recorded with it and checked when a scan
    opens it: an entry whose meta or rows are damaged is analysed again, never reported."""

    def __init__(self, directory: Path) -> None:
        # sqlite3 is imported where used: a re-scan that no file changed for never opens the cache
        self.directory: Path | None = directory  # as NoCache has it: None there
        self._folder = directory
        sealed.check_folder(directory)
        self.read_only = False  # a populated cache this user may not write: read, never write
        with cache_errors(directory, "open"):
            directory.mkdir(parents=True, exist_ok=True)
            self._db = self._opened()
        self._pending: list[tuple[str, bytes, bytes]] = []
        self._segments: dict[str, Segment | None] = {}  # opened by name; None: unreadable
        self._checksums: dict[str, int] = {}  # of the segments, by name, as recorded
        self._wrote_segment = False

    def _opened(self) -> sqlite3.Connection:
        """The database; a damaged one (truncated, overwritten) is discarded and made afresh,
        as git does with an index that fails its checksum: a cache only saves work."""
        import sqlite3

        path = self._folder / _DB_NAME
        if path.exists() and not may_write(self._folder, path):
            self.read_only = True
            say_once(f"neuron-migrate: the cache in {self._folder} is read-only: read, not written")
            uri = f"{path.as_uri()}?mode=ro"
            return sqlite3.connect(uri, uri=True, check_same_thread=False)
        return opened_or_remade(path, _connected)

    def _rebuilt(self) -> None:
        """Discard a database found damaged while in use, and start an empty one."""
        with contextlib.suppress(Exception):
            self._db.close()
        path = self._folder / _DB_NAME
        if self.read_only:
            import sqlite3

            self._db = sqlite3.connect(":memory:", check_same_thread=False)
            _create_tables(self._db)
            return
        discard(path)
        with cache_errors(self._folder, "open"):
            self._db = _connected(path)

    def get(self, key: str) -> ScannedFile | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, ScannedFile]:
        """The cached results among `keys`, in one query per 900 (a re-scan asks for all)."""
        import sqlite3

        found: dict[str, ScannedFile] = {}
        for start in range(0, len(keys), MAX_QUERY_KEYS):
            chunk = keys[start : start + MAX_QUERY_KEYS]
            marks = ",".join("?" * len(chunk))
            query = (
                "SELECT r.key, r.meta, s.name, s.checksum, r.start, r.length FROM results AS r"
                f" LEFT JOIN segments AS s ON s.id = r.segment WHERE r.key IN ({marks})"
            )
            try:
                entries = self._db.execute(query, chunk).fetchall()
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    raise
                self._rebuilt()  # what is left is analysed again
                return found
            for key, meta, name, checksum, at, length in entries:
                payload = sealed.unsealed(meta, _place(key, name, at, length))
                if payload is None:  # damaged, or moved to another key or place
                    continue
                if name is not None:
                    self._checksums[name] = checksum
                rows = self._rows(name, at, length)
                result = None if rows is None else _joined(payload, rows)
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
                self._segments[name] = Segment(self._folder / name, self._checksums[name])
            except (OSError, ValueError):  # merged away since this one's query, or damaged
                self._segments[name] = None
        segment = self._segments[name]
        if segment is None or at + length + _SEPARATOR > segment.size:
            return None
        return StoredBytes(segment, at, length)

    def put(self, key: str, result: ScannedFile) -> None:
        if self.read_only:
            return
        meta, rows = _entry(result)
        self._pending.append((key, meta, rows))
        if len(self._pending) >= 500:
            self.flush()

    def flush(self) -> None:
        """Write the pending rows to a new segment, then commit the entries that name it."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        import sqlite3

        with cache_errors(self._folder, "write"):
            try:
                self._commit(pending)
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    raise
                self._rebuilt()  # damaged since it was opened: start afresh
                self._commit(pending)

    def _commit(self, pending: list[tuple[str, bytes, bytes]]) -> None:
        written = _write_segment(self._folder, [rows for _, _, rows in pending])
        with self._db:
            segment, name, starts = None, None, [0] * len(pending)
            if written is not None:
                name, starts, size, checksum = written
                insert = "INSERT INTO segments (name, size, checksum) VALUES (?, ?, ?)"
                segment = self._db.execute(insert, (name, size, checksum)).lastrowid
                self._wrote_segment = True
            entries = []
            for (key, meta, rows), start in zip(pending, starts, strict=True):
                held = name if rows else None
                place = _place(key, held, start, len(rows))
                entries.append(
                    (key, sealed.seal(meta, place), segment if rows else None, start, len(rows))
                )
            self._db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)", entries)

    def file_index(self, config_digest: str, taken: SignatureSource | None) -> StatIndex:
        """The stat index of scans from this folder with this configuration."""
        return StatIndex(self.stat_index(index_name(config_digest)), taken=taken)

    def keep_file_index(self, config_digest: str, index: FileIndex) -> None:
        if isinstance(index, StatIndex) and index.changed():
            self.store_stat_index(index_name(config_digest), index.blob())

    def stat_index(self, name: str) -> bytes | None:
        """The records of a `neuron_migrate.incremental.stat_index.StatIndex`, if stored."""
        import sqlite3

        try:
            row = self._db.execute("SELECT records FROM stat_indexes WHERE name = ?", (name,))
            found = row.fetchone()
        except sqlite3.DatabaseError as exc:
            if not damaged(exc):
                raise
            self._rebuilt()
            return None
        payload = sealed.unsealed(found[0], name.encode()) if found else None
        return None if payload is None else bytes(payload)

    def store_stat_index(self, name: str, records: bytes) -> None:
        if self.read_only:
            return
        entry = sealed.seal(records, name.encode())
        with cache_errors(self._folder, "write"):
            written_or_rebuilt(lambda: self._store_stat_index(name, entry), self._rebuilt)

    def _store_stat_index(self, name: str, entry: bytes) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO stat_indexes VALUES (?, ?)", (name, entry))

    def close(self) -> None:
        import sqlite3

        try:
            self.flush()
            if self._wrote_segment and not self.read_only:
                try:
                    (count,) = self._db.execute("SELECT count(*) FROM segments").fetchone()
                    if count > MAX_SEGMENTS:
                        merge_segments(self._db, self._folder)
                except (OSError, sqlite3.Error):  # a merge only saves a later scan some reads
                    pass
        finally:
            self._db.close()


def damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether an error says the database is damaged rather than busy. An OperationalError is
    a lock, a read-only file or a full disk, which rebuilding would not mend, except a text
    value that is not UTF-8 (bytes overwritten inside a row) and a table or column the schema
    no longer has (bytes overwritten in the schema)."""
    import sqlite3

    if not isinstance(exc, sqlite3.OperationalError):
        return True
    return any(sign in str(exc) for sign in _DAMAGE_SIGNS)


# What SQLite's OperationalError says of a damaged file, as against a lock or a full disk.
_DAMAGE_SIGNS = (
    "decode",
    "no such column",
    "no such table",
    "malformed",
    "unsupported file format",
)


def opened_or_remade(
    path: Path, connect: Callable[[Path], sqlite3.Connection]
) -> sqlite3.Connection:
    """`connect(path)`; a database found damaged on opening is discarded and made afresh."""
    import sqlite3

    try:
        if not header_writable(path):
            raise sqlite3.DatabaseError("malformed header: SQLite would only read it")
        return connect(path)
    except sqlite3.DatabaseError as exc:
        if not damaged(exc):
            raise
        discard(path)
        return connect(path)


def written_or_rebuilt(write: Callable[[], None], rebuild: Callable[[], None]) -> None:
    """`write()`; SQLite may find damage only on a write: then `rebuild()`, and write again."""
    import sqlite3

    try:
        write()
    except sqlite3.DatabaseError as exc:
        if not damaged(exc):
            raise
        rebuild()
        write()


def header_writable(path: Path) -> bool:
    """Whether the database header's write version is one SQLite writes (1 or 2, at byte 18).
    Any other it opens read-only, and each write fails as if the file were read-only, which
    this user may write: that is damage, not a read-only cache. True for a missing file."""
    try:
        with open(path, "rb") as file:
            header = file.read(20)
    except FileNotFoundError:
        return True
    return len(header) < 20 or header[18] in (1, 2)


def _connected(path: Path) -> sqlite3.Connection:
    import sqlite3

    # A re-scan may close it on another thread than the one that opened it, once done with it
    # (`report_snapshot`): never used from two threads at once.
    db = sqlite3.connect(path, check_same_thread=False)
    try:
        db.execute("PRAGMA mmap_size = 1073741824")
        _create_tables(db)
    except BaseException:
        db.close()
        raise
    return db


def _create_tables(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, meta BLOB,"
        " segment INTEGER, start INTEGER, length INTEGER)"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS segments"
        " (id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER NOT NULL,"
        " checksum INTEGER NOT NULL)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS stat_indexes (name TEXT PRIMARY KEY, records BLOB)")


def discard(path: Path) -> None:
    """Remove a damaged database and its journals (its segments are checked when read)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def may_write(folder: Path, path: Path) -> bool:
    """Whether this user may write the database at `path` (a read-only cache is only read)."""
    return os.access(folder, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


_said: set[str] = set()


def say_once(line: str) -> None:
    """A note on stderr, once a process (a server's child runs many scans)."""
    if line not in _said:
        _said.add(line)
        print(line, file=sys.stderr)


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


def _write_segment(folder: Path, rows: list[bytes]) -> tuple[str, list[int], int, int] | None:
    """A new segment holding the non-empty `rows` one after another, each followed by the
    separator, on disk before any entry names it: its name, where each of `rows` starts in
    it (0 for an empty one), its size and checksum; None when there is nothing to hold."""
    if not any(rows):
        return None
    name = f"rows-{os.urandom(8).hex()}.bin"
    starts, at, checksum = [], 0, 0
    fd = os.open(folder / name, _NEW_FILE, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in rows:
                starts.append(at if piece else 0)
                if piece:
                    handle.write(piece)
                    handle.write(ROW_SEPARATOR)
                    checksum = zlib.crc32(ROW_SEPARATOR, zlib.crc32(piece, checksum))
                    at += len(piece) + _SEPARATOR
            handle.flush()
            os.fsync(handle.fileno())  # the commit that follows must not name lost bytes
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(folder / name)
        raise
    return name, starts, at, checksum


def merge_segments(db: sqlite3.Connection, folder: Path) -> None:
    """Copy every entry's rows into one new segment and delete the old ones, under the write
    lock. A scan reading the cache meanwhile opens the segments its query names while the
    query runs, which the lock waits for; one that finds a segment gone analyses the file
    again. Entries whose segment cannot be read are dropped."""
    name = f"rows-{os.urandom(8).hex()}.bin"
    db.execute("BEGIN IMMEDIATE")
    try:
        segments = {
            id: (name, checksum)
            for id, name, checksum in db.execute("SELECT id, name, checksum FROM segments")
        }
        merged = {id: found for id, (found, _) in segments.items()}
        entries = db.execute(
            "SELECT r.rowid, r.key, r.meta, r.segment, r.start, r.length FROM results AS r"
            " WHERE r.segment IS NOT NULL ORDER BY r.segment, r.start"
        ).fetchall()
        places, lost, size = _copy_rows(entries, segments, folder / name)
        checksum = _checksum_of(folder / name, size)
        db.execute("DELETE FROM segments")
        insert = "INSERT INTO segments (name, size, checksum) VALUES (?, ?, ?)"
        new = db.execute(insert, (name, size, checksum)).lastrowid
        db.executemany(
            "UPDATE results SET segment = ?, start = ?, meta = ? WHERE rowid = ?",
            [(new, at, meta, rowid) for rowid, at, meta in places],
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
    entries: list[tuple[int, str, bytes, int, int, int]],
    segments: dict[int, tuple[str, int]],
    target: Path,
) -> tuple[list[tuple[int, int, bytes]], list[int], int]:
    """Copy the rows of `entries` (rowid, key, meta, segment, start, length) into a new file
    `target`: (rowid, new start, meta sealed for it) of those copied, the rowids of those whose
    meta or segment is damaged or unreadable, and the new file's size."""
    places: list[tuple[int, int, bytes]] = []
    lost: list[int] = []
    opened: dict[int, Segment | None] = {}
    at = 0
    out = os.open(target, _NEW_FILE, 0o666)
    try:
        for rowid, key, meta, segment, start, length in entries:
            if segment not in opened:
                try:
                    name, checksum = segments[segment]
                    opened[segment] = Segment(target.parent / name, checksum)
                except (OSError, KeyError, ValueError):
                    opened[segment] = None
            source = opened[segment]
            old = segments.get(segment, ("", 0))[0]
            payload = sealed.unsealed(meta, _place(key, old, start, length))
            if payload is None or source is None or start + length + _SEPARATOR > source.size:
                lost.append(rowid)
                continue
            StoredBytes(source, start, length + _SEPARATOR).copy_to(out)
            resealed = sealed.seal(bytes(payload), _place(key, target.name, at, length))
            places.append((rowid, at, resealed))
            at += length + _SEPARATOR
        os.fsync(out)
    finally:
        os.close(out)
    return places, lost, at


def _checksum_of(path: Path, size: int) -> int:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        return file_checksum(fd, size)
    finally:
        os.close(fd)


def _place(key: str, segment: str | None, start: int, length: int) -> bytes:
    """What an entry's checksum covers besides its meta: its key and where its rows lie."""
    return f"{key}\0{segment}\0{start}\0{length}".encode()


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
    meta = pickle.dumps(tuple(values), pickle.HIGHEST_PROTOCOL)
    return meta, bytes(table.rows) if table else b""


def _joined(meta: memoryview, rows: bytes | StoredBytes) -> ScannedFile | None:
    # Positional arguments: a re-scan builds one of each a file, and keywords cost more.
    try:
        values = list(sealed.loads_payload(meta))
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
