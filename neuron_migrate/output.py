"""Writing a report to stdout or to a file (atomically, so a reader never sees half a report)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def write_output(text: str, path: Path | None) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    atomic_write_text(path, text)


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
