"""Writing a report to stdout or to a file (atomically, so a reader never sees half a report).

Pieces held in a cache segment (`StoredBytes`) are copied to the output's descriptor by the
kernel, after what was written before them is flushed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from neuron_migrate.row_store import StoredBytes

Chunk = str | bytes | memoryview | StoredBytes


def write_output(text: str | Iterable[Chunk], path: Path | None) -> None:
    """Write `text`, or its pieces in order, to stdout or atomically to `path`. Byte pieces
    (UTF-8) go to stdout's buffer as they are, without a decode and encode."""
    chunks = (text,) if isinstance(text, str) else text
    if path is None:
        _write_stdout(chunks)
        return
    atomic_write_text(path, chunks)


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
        elif isinstance(chunk, StoredBytes) and fd is not None:
            sys.stdout.flush()  # the text layer and the bytes buffer beneath it
            text_pending = False
            chunk.copy_to(fd)
        else:
            if text_pending:
                sys.stdout.flush()
                text_pending = False
            buffer.write(chunk if not isinstance(chunk, StoredBytes) else bytes(chunk))


def _descriptor(stream: object) -> int | None:
    try:
        return stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # a stream with no descriptor of its own
        return None


def atomic_write_text(path: Path, text: str | Iterable[Chunk]) -> None:
    import tempfile  # here: a report to stdout does not load it (nor `random` with it)

    chunks = (text,) if isinstance(text, str) else text
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                if isinstance(chunk, StoredBytes):
                    handle.flush()
                    chunk.copy_to(fd)
                else:
                    handle.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
