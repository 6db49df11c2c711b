"""What a cached result says of the code that computed it.

The version alone does not say it: an editable install or a checkout changes its code under one
version, and a result the old code computed would be read back as the new code's. So the
identity also holds the path, size and modification time of each of the package's Python files
(a stat of each, about 1 ms for the whole package; their bytes are not read).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from neuron_migrate import __version__

_PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def code_identity() -> str:
    """The tool's version and a listing of its code's files; equal for the same code."""
    entries: list[str] = []
    _list_python_files(str(_PACKAGE), len(str(_PACKAGE)) + 1, entries)
    entries.sort()
    return "\n".join([__version__, *entries])


def _list_python_files(folder: str, strip: int, into: list[str]) -> None:
    with os.scandir(folder) as found:
        for entry in found:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    _list_python_files(entry.path, strip, into)
            elif entry.name.endswith(".py"):
                stat = entry.stat()
                into.append(f"{entry.path[strip:]}\0{stat.st_size}\0{stat.st_mtime_ns}")
