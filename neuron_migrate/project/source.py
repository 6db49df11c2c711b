"""Reading a source file into text, or a one-line reason why it cannot be read.

Both the scan and the rewrite read files through here, so they reject the same bad input in the
same words.
"""

import errno
import os
import stat
from codecs import BOM_UTF8
from typing import NamedTuple

from neuron_migrate.scan.findings import FileError

DEFAULT_MAX_BYTES = 2 * 1024 * 1024


class SourceFile(NamedTuple):
    text: str
    data: bytes
    encoding: str


# Opening a FIFO to read waits for a writer, for ever: opened without waiting, then refused.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


def read_bytes(path: str, display: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes | FileError:
    # os-level calls: a scan reads every file of the tree, and a re-scan does little else.
    try:
        fd = os.open(path, OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return not_regular(display, info.st_mode)
            size = info.st_size
            if size > max_bytes:
                return FileError(
                    display,
                    f"too large to scan ({size / 1e6:.1f} MB > {max_bytes / 1e6:.1f} MB limit; "
                    "raise it with --max-file-size)",
                    "too_large",
                )
            return _read_all(fd, size)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return FileError(display, "symlink loop", "loop")
        if exc.errno == errno.ENXIO:  # a socket: it cannot be opened at all
            return not_regular(display, stat.S_IFSOCK)
        if exc.errno == errno.ENOENT:
            return FileError(
                display, "cannot read: dangling symlink or file vanished", "unreadable"
            )
        return FileError(display, f"cannot read: {exc.strerror or exc}", "unreadable")


# What a file that is not a regular one is (`FileError.kind`): listed as skipped, never read.
NOT_REGULAR = "not_regular"


def not_regular(display: str, mode: int) -> FileError:
    what = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "a special file"
    )
    return FileError(display, f"{what}: not a regular file, not read", NOT_REGULAR)


def _read_all(fd: int, size: int) -> bytes:
    # A byte more than fstat saw: a regular file that returns no more than `size` is read whole.
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    parts = [data]  # the file grew since fstat
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
    return b"".join(parts)


def decode(data: bytes, display: str) -> SourceFile | FileError:
    """Decode as Python does: a PEP 263 coding cookie or BOM, else UTF-8."""
    if b"\x00" in data:
        return FileError(display, "binary file (contains NUL bytes), not Python source", "binary")
    if _says_no_encoding(data):
        try:
            return SourceFile(data.decode("utf-8"), data, "utf-8")
        except UnicodeDecodeError:
            pass  # reported below, as Python reports it
    import io
    import tokenize  # here: most files name no encoding

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except SyntaxError as exc:
        return FileError(display, f"bad encoding declaration: {exc.msg}", "encoding")
    except (UnicodeDecodeError, LookupError) as exc:
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        return FileError(display, f"not valid {encoding}{where}", "encoding")
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(text, data, encoding)


def _says_no_encoding(data: bytes) -> bool:
    """No BOM, and no "coding" in the first two lines, where a coding cookie must be: Python
    reads the file as UTF-8 (what `tokenize.detect_encoding` finds, without loading it)."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    head = second if second >= 0 else len(data)
    return not data.startswith(BOM_UTF8) and data.find(b"coding", 0, head) < 0


def syntax_error(exc: SyntaxError, display: str) -> FileError:
    where = f" at line {exc.lineno}" if exc.lineno else ""
    hint = (
        " (Python 2 code?)"
        if "print" in (exc.text or "") or "Missing parentheses" in (exc.msg or "")
        else ""
    )
    return FileError(display, f"syntax error{where}: {exc.msg}{hint}", "syntax")
