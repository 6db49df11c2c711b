"""Which files a re-scan need not read: what each file's bytes gave when they were last read,
under the stat signature the file had then.

A re-scan of an unchanged tree would otherwise read and hash every file only to find it in the
cache. Here a file whose signature (size, mtime, ctime, inode, device) is the one recorded
answers from the record: the cache key its bytes had, "prefiltered" or "empty". ctime is part
of it because no user call sets it: a write that restores an old mtime (`touch -d`, `rsync -t`)
still moves ctime (on POSIX; Windows reports the creation time there, so a same-size rewrite
that restores the mtime goes unseen, as it does for git). As in git's index, a record is kept
only for a file whose mtime and ctime were both already `SETTLED_NS` in the past when it was
read, so that a second write within the filesystem's timestamp granularity cannot leave the
signature as it was.

The records of one scan are one entry of the result cache, named by the working folder and the
configuration digest; the next scan in the same folder with the same configuration reads them.
"""

from __future__ import annotations

import os
import pickle
import time

from neuron_migrate.digests import cache_digest
from neuron_migrate.scan.store import Signature, SignatureSource

# A record: the file's signature, its display path (the key depends on it), its outcome.
_Record = tuple[Signature, str, str]

# Coarser than any filesystem's timestamps (FAT's are 2 s).
SETTLED_NS = 3_000_000_000


def signature(path: str) -> Signature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)  # inline: hot


def signature_of(st: os.stat_result) -> Signature:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def settled_before() -> int:
    """A signature taken now is trusted only if the file's mtime and ctime are before this."""
    return time.time_ns() - SETTLED_NS


def settled(sig: Signature | None, before: int) -> Signature | None:
    """`sig`, if the file had settled (`settled_before`, taken before `sig`); else None."""
    return sig if sig is not None and max(sig[1], sig[2]) < before else None


class Taken:
    """Stat signatures of files, each taken once, before the file is read: a full scan's
    snapshot and its stat index share them. `before` is the `settled_before` of the moment the
    first was taken."""

    def __init__(self) -> None:
        self.before = settled_before()
        self._by_path: dict[str, Signature | None] = {}

    def signature(self, path: str) -> Signature | None:
        """The file's signature: as taken already, else now."""
        by_path = self._by_path
        if path in by_path:
            return by_path[path]
        sig = by_path[path] = signature(path)
        return sig


def index_name(config_digest: str) -> str:
    """The index of scans run from this folder with this configuration (paths as given are
    relative to the working folder)."""
    return cache_digest(f"{os.getcwd()}\0{config_digest}".encode()).hexdigest()


class StatIndex:
    def __init__(self, blob: bytes | None, *, taken: SignatureSource | None = None) -> None:
        self._recorded: dict[str, _Record] = _loaded(blob)
        self._seen: dict[str, _Record] = {}
        self._taken = taken
        self._settled_before = settled_before() if taken is None else taken.before

    def signature(self, path: str) -> Signature | None:
        """The file's signature before it is read (taken now, or earlier in `taken`)."""
        return signature(path) if self._taken is None else self._taken.signature(path)

    def recall(self, path: str, display: str, sig: Signature | None) -> str | None:
        """The outcome recorded for the file at `path` if its signature is unchanged."""
        record = self._recorded.get(path)
        if record is None or sig is None or record[0] != sig or record[1] != display:
            return None
        self._seen[path] = record
        return record[2]

    def remember(self, path: str, display: str, sig: Signature | None, outcome: str) -> None:
        """Record what the file's bytes gave, read after its signature `sig` was taken."""
        trusted = settled(sig, self._settled_before)
        if trusted is not None:
            self._seen[path] = (trusted, display, outcome)

    def changed(self) -> bool:
        return self._seen != self._recorded

    def blob(self) -> bytes:
        """The records of the files seen by this scan (one that no longer exists drops out)."""
        return pickle.dumps(self._seen, pickle.HIGHEST_PROTOCOL)


def _loaded(blob: bytes | None) -> dict[str, _Record]:
    if not blob:
        return {}
    from neuron_migrate.incremental import sealed

    records = sealed.loads_payload(blob)  # None: another build's or damaged: start afresh
    return records if isinstance(records, dict) else {}
