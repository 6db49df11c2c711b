"""The pieces a report is written from: bytes in memory, or bytes held elsewhere.

`HeldBytes` are bytes a report names without holding them: the incremental cache's report rows
(`incremental.row_store.StoredBytes`), which the writer copies from their file in the kernel.
The plain path never makes one, so it never loads the cache to write a report.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator


class HeldBytes(ABC):
    """Bytes not read until asked: `bytes()` reads them, `copy_to` writes them to a descriptor."""

    __slots__ = ()

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __bytes__(self) -> bytes: ...

    @abstractmethod
    def __getitem__(self, part: slice) -> HeldBytes: ...

    @abstractmethod
    def copy_to(self, out_fd: int) -> None:
        """Append the bytes to `out_fd` at its position."""

    @abstractmethod
    def joined(self, gap: int, other: HeldBytes) -> HeldBytes | None:
        """These bytes, `gap` bytes that lie after them where they are held, and `other`, as
        one piece, if `other` lies just after that gap; else None."""


# A piece of a report to write: bytes, a view of bytes, or bytes held elsewhere.
Piece = bytes | memoryview | HeldBytes


def coalesced(pieces: Iterable[Piece], separator: bytes) -> Iterator[Piece]:
    """`pieces`, where a `separator` lies between two held pieces that are, with the separator,
    one run of where they are held, as one held piece: one copy instead of three writes. The
    holder guarantees that what lies between is the separator (see `incremental.cache`)."""
    run: HeldBytes | None = None  # held bytes not yet given
    between = False  # a `separator` came after the run, not yet given
    for piece in pieces:
        if run is not None:
            if between and isinstance(piece, HeldBytes):
                joined = run.joined(len(separator), piece)
                if joined is not None:
                    run, between = joined, False
                    continue
            if not between and isinstance(piece, bytes) and piece == separator:
                between = True
                continue
            yield run
            run = None
            if between:
                yield separator
                between = False
        if isinstance(piece, HeldBytes):
            run = piece
        else:
            yield piece
    if run is not None:
        yield run
        if between:
            yield separator
