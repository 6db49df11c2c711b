"""A content-hash cache of rewrite results: `rewrite --check` on every pull request, or the
`rewrite` a person reads before `rewrite --apply`, migrates no unchanged file twice.

The key is `rewrite.store.rewrite_key`. The value, compressed, is what the run needs besides
the file it read: the new source when the file changes, the outcomes, the diff's hunks when a
run made them, and the error of a file that does not parse. An internal error (a bug in a
transform) is not kept: that file is tried again. Each entry is sealed with its key
(`incremental.sealed`): a damaged entry, or an intact one moved under another key, is a miss,
never the new text of another file; a damaged database is discarded and made afresh, as the
scan's is. One SQLite file in the scan's cache folder (`incremental.cache`), written only by
the main process of a rewrite.
"""

import contextlib
import pickle
import sqlite3
import zlib
from pathlib import Path

from neuron_migrate.incremental import cache as result_cache
from neuron_migrate.incremental import sealed
from neuron_migrate.incremental.cache import MAX_QUERY_KEYS, cache_errors
from neuron_migrate.rewrite.codemod.results import Outcome
from neuron_migrate.rewrite.store import CachedRewrite

# Named by the layout of its entries: another layout is another file, never misread.
_DB_NAME = "rewrite-results-v2.sqlite"
_FLUSH_EVERY = 200
# Entries are compressed: new sources and their diffs shrink 4.5 times at this level (a CI
# cache uploads the folder), and decompressing them is about a sixth of a warm run.
_ZLIB_LEVEL = 3


class RewriteCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        sealed.check_folder(directory)
        path = directory / _DB_NAME
        with cache_errors(directory, "open"):
            directory.mkdir(parents=True, exist_ok=True)
            # A cache this user may not write is read, never written (`incremental.cache`).
            self.read_only = not result_cache.may_write(directory, path)
            if self.read_only:
                result_cache.say_once(
                    f"neuron-migrate: the cache in {directory} is read-only: read, not written"
                )
            self._db = self._opened(path)
        self._pending: list[tuple[str, bytes]] = []

    def _opened(self, path: Path) -> sqlite3.Connection:
        """The database; a damaged one is discarded and made afresh (a read-only one: an empty
        one in memory), as the scan's is."""
        if self.read_only and path.exists():
            return sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        if self.read_only:
            return _connected(":memory:")
        return result_cache.opened_or_remade(path, _connected)

    def _rebuilt(self) -> None:
        """Discard a database found damaged while in use, and start an empty one."""
        with contextlib.suppress(Exception):
            self._db.close()
        path = self.directory / _DB_NAME
        if not self.read_only:
            result_cache.discard(path)
        with cache_errors(self.directory, "open"):
            self._db = _connected(":memory:" if self.read_only else path)

    def get_many(self, keys: list[str]) -> dict[str, CachedRewrite]:
        found: dict[str, CachedRewrite] = {}
        for start in range(0, len(keys), MAX_QUERY_KEYS):
            chunk = keys[start : start + MAX_QUERY_KEYS]
            query = f"SELECT key, entry FROM rewrites WHERE key IN ({','.join('?' * len(chunk))})"
            with cache_errors(self.directory, "read"):
                try:
                    rows = self._db.execute(query, chunk).fetchall()
                except sqlite3.DatabaseError as exc:
                    if not result_cache.damaged(exc):
                        raise
                    self._rebuilt()  # what is left is migrated again
                    return found
            for key, entry in rows:
                cached = _loaded(key, entry)
                if cached is not None:
                    found[key] = cached
        return found

    def put(self, key: str, cached: CachedRewrite) -> None:
        if self.read_only:
            return
        outcomes = tuple(tuple(outcome) for outcome in cached.outcomes)
        entry = (cached.new, outcomes, cached.hunks, cached.error)
        data = zlib.compress(pickle.dumps(entry, pickle.HIGHEST_PROTOCOL), _ZLIB_LEVEL)
        self._pending.append((key, sealed.seal(data, key.encode())))
        if len(self._pending) >= _FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        with cache_errors(self.directory, "write"):
            result_cache.written_or_rebuilt(lambda: self._commit(pending), self._rebuilt)

    def _commit(self, pending: list[tuple[str, bytes]]) -> None:
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO rewrites VALUES (?, ?)", pending)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._db.close()


def _connected(path: Path | str) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    try:
        db.execute("CREATE TABLE IF NOT EXISTS rewrites (key TEXT PRIMARY KEY, entry BLOB)")
    except BaseException:
        db.close()
        raise
    return db


def _loaded(key: str, entry: bytes) -> CachedRewrite | None:
    """An entry as stored; None for one this build cannot read, or that is not intact or not
    `key`'s (the file is migrated again)."""
    payload = sealed.unsealed(entry, key.encode())
    if payload is None:
        return None
    try:
        new, outcomes, hunks, error = sealed.loads_payload(zlib.decompress(payload))
        return CachedRewrite(new, tuple(map(Outcome._make, outcomes)), hunks, error)
    except Exception:
        return None
