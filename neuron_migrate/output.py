"""Writing a report to stdout or to a file (atomically, so a reader never sees half a report)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

Chunk = str | bytes | memoryview


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
    text_pending = True  # whatever was printed before goes first
    for chunk in chunks:
        if isinstance(chunk, str):
            sys.stdout.write(chunk)
            text_pending = True
        elif buffer is not None:
            if text_pending:
                sys.stdout.flush()
                text_pending = False
            buffer.write(chunk)
        else:
            sys.stdout.write(bytes(chunk).decode("utf-8"))


def atomic_write_text(path: Path, text: str | Iterable[Chunk]) -> None:
    chunks = (text,) if isinstance(text, str) else text
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
