"""A content-hash cache of per-file scan results, so an unchanged file is never parsed twice.

The key covers everything a result depends on: the file's bytes and display path, the tool
version, and a digest of the rules, the matrix and the API map in use. One SQLite file; only the
main process reads and writes it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
from pathlib import Path

from neuron_migrate.findings import FileResult


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


class ResultCache:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(directory / "scan-results-v2.sqlite")
        self._db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value BLOB)")
        self._pending: list[tuple[str, bytes]] = []

    def get(self, key: str) -> FileResult | None:
        row = self._db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            result = pickle.loads(row[0])
        except Exception:  # an entry from another tool version that no longer unpickles
            return None
        return result if isinstance(result, FileResult) else None

    def put(self, key: str, result: FileResult) -> None:
        self.put_pickled(key, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))

    def put_pickled(self, key: str, blob: bytes) -> None:
        """Store a result that is already pickled (as the workers send them)."""
        self._pending.append((key, blob))
        if len(self._pending) >= 500:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)", self._pending)
            self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._db.close()


class NoCache:
    def get(self, key: str) -> FileResult | None:
        return None

    def put(self, key: str, result: FileResult) -> None:
        pass

    def put_pickled(self, key: str, blob: bytes) -> None:
        pass

    def close(self) -> None:
        pass
