"""Where the scan engine finds earlier results, and what it asks of that place.

The engine talks to a `ResultStore`: the incremental cache (`incremental.cache.ResultCache`,
with its stat index) or `NoCache`, the plain path's, which holds nothing. The engine imports
only this module, so a scan with `--no-cache` never loads the speed machinery.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from neuron_migrate.digests import cache_digest

if TYPE_CHECKING:
    from neuron_migrate.scan.scanned import ScannedFile

Signature = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device

# What a file's bytes gave, as a file index records it: a cache key (64 hex digits), or one of
# these, which are not keys.
PREFILTERED = ""  # a file the prefilter skipped
EMPTY = "empty"  # an empty (or whitespace-only) file: nothing to analyse


def file_key(config_digest: str, display: str, data: bytes) -> str:
    """The key of a file's result: its bytes, its display path and the scan's configuration."""
    digest = cache_digest(data)
    digest.update(b"\0" + display.encode() + b"\0" + config_digest.encode())
    return digest.hexdigest()


class FileIndex(Protocol):
    """Which files need not be read: what each file's bytes gave, under its stat signature."""

    def signature(self, path: str) -> Signature | None: ...

    def recall(self, path: str, display: str, sig: Signature | None) -> str | None: ...

    def remember(self, path: str, display: str, sig: Signature | None, outcome: str) -> None: ...


class SignatureSource(Protocol):
    """Stat signatures taken before any file was read (`incremental.stat_index.Taken`)."""

    before: int

    def signature(self, path: str) -> Signature | None: ...


class ResultStore(Protocol):
    @property
    def directory(self) -> Path | None:
        """The cache's folder; None for a store that keeps nothing."""
        ...

    def get(self, key: str) -> ScannedFile | None: ...

    def get_many(self, keys: list[str]) -> dict[str, ScannedFile]: ...

    def put(self, key: str, result: ScannedFile) -> None: ...

    def file_index(self, config_digest: str, taken: SignatureSource | None) -> FileIndex: ...

    def keep_file_index(self, config_digest: str, index: FileIndex) -> None: ...

    def close(self) -> None: ...


class NoFileIndex:
    """The index of a scan that reads every file: it stats none and recalls nothing."""

    def signature(self, path: str) -> Signature | None:
        return None

    def recall(self, path: str, display: str, sig: Signature | None) -> str | None:
        return None

    def remember(self, path: str, display: str, sig: Signature | None, outcome: str) -> None:
        pass


NO_FILE_INDEX = NoFileIndex()


class NoCache:
    """The store of a scan that neither reads nor writes a cache (`--no-cache`)."""

    directory: Path | None = None

    def get(self, key: str) -> ScannedFile | None:
        return None

    def get_many(self, keys: list[str]) -> dict[str, ScannedFile]:
        return {}

    def put(self, key: str, result: ScannedFile) -> None:
        pass

    def file_index(self, config_digest: str, taken: SignatureSource | None) -> FileIndex:
        return NO_FILE_INDEX

    def keep_file_index(self, config_digest: str, index: FileIndex) -> None:
        pass

    def close(self) -> None:
        pass
