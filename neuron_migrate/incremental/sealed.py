"""What the cache keeps on disk, in a form that can neither run code nor pass for something else.

A cache folder is written by one scan and read by another, maybe restored from a CI artifact:
what is read from it is untrusted input. Two guards, as ruff's and mypy's caches and git's
index have them:

- Data only. Pickles are read by an unpickler that loads no global but the plain data classes
  named in `DATA_CLASSES` (named tuples, enums, a path): a pickle that names anything else --
  `os.system`, `builtins.eval`, any `__reduce__` payload -- is refused before anything is
  called. Building a named tuple or an enum member runs no code of the pickle's choosing.
- A checksum. Every sealed blob starts with a magic number and a CRC-32 of what follows it
  (git's index ends with a SHA-1 of itself for the same reason): a flipped bit, a truncated or
  half-written file is found before its bytes are used, and the entry is computed again.

The cache folder itself must be the user's own and not writable by others
(`folder_problem`), as git's `safe.directory` asks of a repository.
"""

from __future__ import annotations

import io
import os
import pickle
import stat
import struct
import zlib
from pathlib import Path
from typing import Any

MAGIC = b"NMc1"
_HEADER = struct.Struct("<4sI")  # magic, CRC-32 of the payload
HEADER_SIZE = _HEADER.size

# The only globals a cache pickle may name: plain data, whose construction runs no code of the
# pickle's choosing. Named tuples of the tool's data modules (built by `tuple.__new__`), and
# these records, rebuilt attribute by attribute (`__slots__` or a plain `__dict__`, no
# `__setstate__`, no property that sets). `tests/scan/test_cache_trust.py` checks them all.
DATA_CLASSES: frozenset[tuple[str, str]] = frozenset(
    {
        ("collections", "Counter"),
        ("neuron_migrate.api", "ScanReport"),
        ("neuron_migrate.api", "Tally"),
        ("neuron_migrate.ruleset.ruleset", "RuleSet"),
    }
)
DATA_MODULES: frozenset[str] = frozenset(
    {
        "neuron_migrate.api",
        "neuron_migrate.incremental.report_snapshot",
        "neuron_migrate.matrix.api_map",
        "neuron_migrate.matrix.model",
        "neuron_migrate.project.config",
        "neuron_migrate.ruleset.model",
        "neuron_migrate.scan.findings",
        "neuron_migrate.scan.scan_data",
        "neuron_migrate.scan.suppressions",
    }
)


def is_named_tuple(found: object) -> bool:
    return (
        isinstance(found, type)
        and issubclass(found, tuple)
        and hasattr(found, "_fields")
        and not any("__setstate__" in vars(klass) for klass in found.__mro__)
    )


class NotData(pickle.UnpicklingError):
    """A pickle named a global that is not plain data."""


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in DATA_CLASSES:
            return super().find_class(module, name)
        if module in DATA_MODULES and name.isidentifier():
            found = super().find_class(module, name)
            if is_named_tuple(found):
                return found
        raise NotData(f"{module}.{name} is not data")

    def persistent_load(self, pid: Any) -> Any:
        raise NotData("persistent ids are not data")


def checksum(data: bytes | memoryview, context: bytes = b"") -> int:
    """CRC-32 of `data` after `context` (what the blob is for: an entry's key and where its
    rows lie, so that an entry moved to another key or pointed elsewhere does not check)."""
    return zlib.crc32(data, zlib.crc32(context)) if context else zlib.crc32(data)


def seal(payload: bytes, context: bytes = b"") -> bytes:
    """`payload` behind its magic number and checksum."""
    return _HEADER.pack(MAGIC, checksum(payload, context)) + payload


def unsealed(data: bytes, context: bytes = b"") -> memoryview | None:
    """The payload of a sealed blob; None when it is not one, or not intact."""
    if not isinstance(data, bytes) or len(data) < HEADER_SIZE:
        return None
    magic, expected = _HEADER.unpack_from(data)
    payload = memoryview(data)[HEADER_SIZE:]
    if magic != MAGIC or checksum(payload, context) != expected:
        return None
    return payload


def dumps(value: object, *, fast: bool = False, context: bytes = b"") -> bytes:
    """`value` pickled and sealed. `fast`: without a memo (no cycles, little sharing)."""
    if not fast:
        return seal(pickle.dumps(value, pickle.HIGHEST_PROTOCOL), context)
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.fast = True
    pickler.dump(value)
    return seal(buffer.getvalue(), context)


def loads(data: bytes, context: bytes = b"") -> Any:
    """What `dumps` sealed; None when `data` is damaged, not sealed or names anything but
    plain data (never an exception: a cache entry that cannot be read is computed again)."""
    payload = unsealed(data, context)
    if payload is None:
        return None
    return loads_payload(payload)


def loads_payload(payload: bytes | memoryview) -> Any:
    """An unsealed pickle, read as data only; None when it cannot be."""
    try:
        return _DataUnpickler(io.BytesIO(payload)).load()
    except Exception:
        return None


def read(path: Path | str) -> Any:
    """The sealed pickle in the file at `path`; None when missing or not intact."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return loads(data)


def folder_problem(folder: Path) -> str | None:
    """Why `folder` must not be trusted as a cache, or None: it must be a folder owned by this
    user and writable by no other (by its group only when that is this user's own group), as
    git asks of a repository (`safe.directory`): what another user could write there, a scan
    would read. Missing is fine: the cache creates it."""
    try:
        info = os.stat(folder)
    except OSError:  # missing (made when opened), or unusable: opening it says why
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # pragma: no cover - Windows: ACLs, not modes
        return None
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != geteuid():
        return f"owned by uid {info.st_uid}, not by this user"
    if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and info.st_gid != os.getegid()):
        return f"writable by other users (mode {mode:o})"
    return None


def check_folder(folder: Path) -> None:
    """CacheError when `folder` must not be used as a cache (`folder_problem`)."""
    problem = folder_problem(folder)
    if problem is not None:
        from neuron_migrate.errors import CacheError

        raise CacheError(
            f"refusing the cache in {folder}: {problem} (--cache-dir DIR or --no-cache)"
        )
