"""A content-hash cache of per-file scan results, so an unchanged file is never parsed twice.

The key covers everything a result depends on: the file's bytes and display path, the tool
version, and a digest of the rules, the matrix and the API map in use. The value is the
file's `ScannedFile`, report rows included, so a re-scan neither analyses nor encodes it
again. One SQLite file; only the main process reads and writes it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
from dataclasses import fields
from pathlib import Path

from neuron_migrate.file_findings import FileFindings
from neuron_migrate.scanned import ScannedFile


def default_cache_dir() -> Path:
    configured = os.environ.get("NEURON_MIGRATE_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neuron-migrate"


def file_key(config_digest: str, display: str, data: bytes) -> str:
    digest = hashlib.sha256(data)
    digest.update(b"\0" + display.encode() + b"\0" + config_digest.encode())
    return digest.hexdigest()


# SQLite's limit on the parameters of one statement is 999 in older builds.
_MAX_QUERY_KEYS = 900
# Named by the layout of its entries: another layout is another file, never misread.
_DB_NAME = "scan-results-v5.sqlite"


class ResultCache:
    """Each entry: the file's `ScannedFile` as pickled tuples, without its report rows, and
    the rows (tens of MB over a large tree) in a column of their own, so a re-scan reads them
    once, through a memory map, instead of copying them out of a pickle as well."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory: Path | None = directory
        self._db = sqlite3.connect(directory / _DB_NAME)
        self._db.execute("PRAGMA mmap_size = 1073741824")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, meta BLOB, rows BLOB)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS stat_indexes (name TEXT PRIMARY KEY, records BLOB)"
        )
        self._pending: list[tuple[str, bytes, bytes]] = []

    def get(self, key: str) -> ScannedFile | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, ScannedFile]:
        """The cached results among `keys`, in one query per 900 (a re-scan asks for all)."""
        found: dict[str, ScannedFile] = {}
        for start in range(0, len(keys), _MAX_QUERY_KEYS):
            chunk = keys[start : start + _MAX_QUERY_KEYS]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, meta, rows FROM results WHERE key IN ({marks})"
            for key, meta, rows in self._db.execute(query, chunk):
                result = _joined(meta, rows)
                if result is not None:
                    found[key] = result
        return found

    def put(self, key: str, result: ScannedFile) -> None:
        meta, rows = _entry(result)
        self._pending.append((key, meta, rows))
        if len(self._pending) >= 500:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO results VALUES (?, ?, ?)", self._pending
                )
            self._pending.clear()

    def stat_index(self, name: str) -> bytes | None:
        """The records of a `neuron_migrate.stat_index.StatIndex`, if stored."""
        row = self._db.execute("SELECT records FROM stat_indexes WHERE name = ?", (name,))
        found = row.fetchone()
        return found[0] if found else None

    def store_stat_index(self, name: str, records: bytes) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO stat_indexes VALUES (?, ?)", (name, records))

    def close(self) -> None:
        self.flush()
        self._db.close()


# An entry's meta is the result's fields as a tuple, and its findings' fields (less the rows) as
# a tuple inside it: plain tuples load several times faster than pickled dataclasses, and a
# re-scan loads one a file.
_RESULT_FIELDS = tuple(f.name for f in fields(ScannedFile) if f.name != "from_cache")
_TABLE_FIELDS = tuple(f.name for f in fields(FileFindings) if f.name != "rows")
_FINDINGS_AT = _RESULT_FIELDS.index("findings")


def _entry(result: ScannedFile) -> tuple[bytes, bytes]:
    values = [getattr(result, name) for name in _RESULT_FIELDS]
    table = result.findings
    if table is not None:
        values[_FINDINGS_AT] = tuple(getattr(table, name) for name in _TABLE_FIELDS)
    return pickle.dumps(tuple(values), pickle.HIGHEST_PROTOCOL), table.rows if table else b""


def _joined(meta: bytes, rows: bytes) -> ScannedFile | None:
    try:
        values = dict(zip(_RESULT_FIELDS, pickle.loads(meta), strict=True))
        table = values["findings"]
        if table is not None:
            table_values = dict(zip(_TABLE_FIELDS, table, strict=True))
            values["findings"] = FileFindings(rows=rows, **table_values)
        return ScannedFile(**values)
    except Exception:  # an entry this build cannot read: analyse the file again
        return None


class NoCache:
    directory: Path | None = None

    def get(self, key: str) -> ScannedFile | None:
        return None

    def get_many(self, keys: list[str]) -> dict[str, ScannedFile]:
        return {}

    def put(self, key: str, result: ScannedFile) -> None:
        pass

    def stat_index(self, name: str) -> bytes | None:
        return None

    def store_stat_index(self, name: str, records: bytes) -> None:
        pass

    def close(self) -> None:
        pass
