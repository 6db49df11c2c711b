"""Writing a report to stdout or to a file (atomically, so a reader never sees half a report).

Pieces held in a cache segment (`HeldBytes`) are copied to the output's descriptor by the
kernel, after what was written before them is flushed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from neuron_migrate.pieces import HeldBytes

TYPE_CHECKING = False  # `typing` is a few milliseconds to import; mypy reads this name as True
if TYPE_CHECKING:
    from types import TracebackType
    from typing import BinaryIO

Chunk = str | bytes | memoryview | HeldBytes


def write_output(text: str | Iterable[Chunk], path: Path | None) -> None:
    """Write `text`, or its pieces in order, to stdout or atomically to `path`. Byte pieces
    (UTF-8) go to stdout's buffer as they are, without a decode and encode. OutputError (one
    line) when it cannot be written."""
    with Sink(path) as sink:
        sink.write((text,) if isinstance(text, str) else text)


@contextlib.contextmanager
def _writing(path: Path | None) -> Iterator[None]:
    """An OSError of writing the report (a full disk, a folder where the file should be) as
    OutputError; a reader that left (BrokenPipeError) is the CLI's to handle."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        from neuron_migrate.errors import OutputError

        where = "stdout" if path is None else str(path)
        why = exc.strerror or str(exc)
        if isinstance(exc, IsADirectoryError) and path is not None and path.is_dir():
            why = "it is a folder (give a file name)"
        raise OutputError(f"cannot write the report to {where}: {why}") from None


class Sink:
    """A report being written, in one or more calls of `write`: to stdout as it comes, or to
    a temporary file beside `path` that replaces `path` when the block ends without an error
    (and is deleted when it ends with one)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._temporary: str | None = None
        self._file: BinaryIO | None = None
        if path is not None:
            import tempfile  # here: a report to stdout does not load it (nor `random` with it)

            with _writing(path):
                if path.is_dir():
                    raise IsADirectoryError(path)
                if path.is_symlink():  # the link stays; its target gets the report
                    path = self._path = Path(os.path.realpath(path))
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, self._temporary = tempfile.mkstemp(
                    dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
                )
            self._file = os.fdopen(fd, "wb")

    def write(self, chunks: Iterable[Chunk]) -> None:
        """Append `chunks`. One thread at a time."""
        with _writing(self._path):
            if self._file is None:
                _write_stdout(chunks)
            else:
                _write_file(self._file, chunks)

    def __enter__(self) -> Sink:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._file is None or self._temporary is None or self._path is None:
            return
        try:
            with _writing(self._path):
                self._file.close()
                if kind is None:
                    # mkstemp made it 0600: give it the mode a plain open would, as other
                    # tools' reports have (an existing report's own; a new one's from the umask).
                    os.chmod(self._temporary, _mode_for(self._path))
                    os.replace(self._temporary, self._path)
        finally:
            if os.path.exists(self._temporary):
                os.unlink(self._temporary)


def _mode_for(path: Path) -> int:
    """The mode of the file at `path`, or the one a new file gets under the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """This process's umask, read without changing it where the system says it."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no other way: set and restore it at once
    os.umask(mask)
    return mask


def _write_stdout(chunks: Iterable[Chunk]) -> None:
    buffer = getattr(sys.stdout, "buffer", None)  # None when stdout is a StringIO (tests)
    fd = _descriptor(sys.stdout) if buffer is not None else None
    text_pending = True  # whatever was printed before goes first
    for chunk in chunks:
        if isinstance(chunk, str):
            sys.stdout.write(chunk)
            text_pending = True
        elif buffer is None:
            sys.stdout.write(bytes(chunk).decode("utf-8"))
        elif isinstance(chunk, HeldBytes) and fd is not None:
            sys.stdout.flush()  # the text layer and the bytes buffer beneath it
            text_pending = False
            chunk.copy_to(fd)
        else:
            if text_pending:
                sys.stdout.flush()
                text_pending = False
            buffer.write(chunk if not isinstance(chunk, HeldBytes) else bytes(chunk))


def _write_file(handle: BinaryIO, chunks: Iterable[Chunk]) -> None:
    for chunk in chunks:
        if isinstance(chunk, HeldBytes):
            handle.flush()
            chunk.copy_to(handle.fileno())
        else:
            handle.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
    handle.flush()  # a later `write` may come from another thread


def _descriptor(stream: object) -> int | None:
    try:
        return stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # a stream with no descriptor of its own
        return None
