"""Report rows kept in flat files, and copied from there into the report by the kernel.

A re-scan of a large tree that the cache answers prints tens of MB of report rows it already
has. Read out of SQLite, each byte is copied three times (into SQLite's buffer, into a Python
object, into the output); from a flat file, `copy_file_range` or `sendfile` copies it once,
inside the kernel, and the process never holds the rows at all.

A `Segment` is one such file: written whole by one process, then never changed, so a reader
needs no lock. The cache's database says which rows are where.
"""

from __future__ import annotations

import mmap
import os
import sys
import weakref
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from neuron_migrate.pieces import HeldBytes, Piece


def read_at(fd: int, start: int, length: int) -> bytes:
    if hasattr(os, "pread"):
        data = os.pread(fd, length, start)
    else:  # pragma: no cover - Windows has no pread; the one reader moves the offset
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, length)
    if len(data) != length:
        raise OSError(f"a row segment ended {length - len(data)} bytes early")
    return data


class DamagedSegment(OSError):
    """A segment whose bytes are not those its writer recorded."""


class Segment:
    """An open segment file. What was read from it stays readable after the cache closes (the
    report is written later) and after another process deletes the file (an open file's data
    stays until it is closed).

    With `checksum` (the CRC-32 its writer recorded, `file_checksum`), its bytes are checked
    when it is opened, before any is copied into a report: DamagedSegment when they differ."""

    def __init__(self, path: Path, checksum: int | None = None) -> None:
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        weakref.finalize(self, os.close, self.fd)
        self.size = os.fstat(self.fd).st_size
        if checksum is not None and file_checksum(self.fd, self.size) != checksum:
            raise DamagedSegment(f"{path} is damaged (its checksum differs)")


def file_checksum(fd: int, size: int) -> int:
    """The CRC-32 of the first `size` bytes of the file open at `fd`."""
    if not size:
        return 0
    with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mapped:
        return zlib.crc32(mapped)


class StoredBytes(HeldBytes):
    """Bytes of a segment, not read until asked: a cached file's report rows, and the slices
    of them a report writes. `bytes()` reads them; `copy_to` writes them to a descriptor."""

    __slots__ = ("length", "segment", "start")

    def __init__(self, segment: Segment, start: int, length: int) -> None:
        self.segment = segment
        self.start = start
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __bytes__(self) -> bytes:
        return read_at(self.segment.fd, self.start, self.length)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredBytes | bytes):
            return bytes(self) == bytes(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(bytes(self))

    def __getitem__(self, part: slice) -> StoredBytes:
        start, stop, _ = part.indices(self.length)
        return StoredBytes(self.segment, self.start + start, max(0, stop - start))

    def __reduce__(self) -> tuple[type[bytes], tuple[bytes]]:
        return bytes, (bytes(self),)  # another process gets the bytes, not a descriptor

    def joined(self, gap: int, other: HeldBytes) -> StoredBytes | None:
        if (
            isinstance(other, StoredBytes)
            and other.segment is self.segment
            and other.start == self.start + self.length + gap
        ):
            return StoredBytes(self.segment, self.start, self.length + gap + other.length)
        return None

    def copy_to(self, out_fd: int) -> None:
        """Append the bytes to `out_fd` at its position."""
        offset, left = self.start, self.length
        while left:
            done = _copy(self.segment.fd, offset, left, out_fd)
            offset += done
            left -= done


# File to file: copy_file_range (Linux). To a pipe or a terminal: sendfile (Linux; macOS
# sends only to sockets). Where neither exists or either refuses this descriptor (one opened
# to append, say): read and write.
_COPY_FILE_RANGE = hasattr(os, "copy_file_range")
_SENDFILE = hasattr(os, "sendfile") and sys.platform.startswith("linux")
_CHUNK = 1 << 20


def _copy(src: int, offset: int, count: int, out_fd: int) -> int:
    """Copy up to `count` bytes at `offset` of `src` to `out_fd`; how many were copied."""
    if _COPY_FILE_RANGE:
        try:
            done = os.copy_file_range(src, out_fd, count, offset_src=offset)
            if done:
                return done
        except OSError:
            pass
    if _SENDFILE:
        try:
            done = os.sendfile(out_fd, src, offset, count)
            if done:
                return done
        except OSError:
            pass
    data = read_at(src, offset, min(count, _CHUNK))
    write_all(out_fd, data)
    return len(data)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of `data` to `fd` at its position (`os.write` may write less)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def after(pieces: Iterable[Piece], skipped: int) -> Iterator[Piece]:
    """`pieces` without their first `skipped` bytes."""
    for piece in pieces:
        if skipped >= len(piece):
            skipped -= len(piece)
            continue
        yield piece[skipped:] if skipped else piece
        skipped = 0
