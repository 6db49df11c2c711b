"""`rewrite --apply`: a migrated file written where it is, and the file system's own facts about
it kept -- what git's checkout, ruff's `--fix` and an editor's safe write each keep.

- A symlink stays a symlink: the new text goes to its target, when the target lies inside the
  rewritten tree; a link that leads outside it is refused (rewrite the target itself).
- A file with other hard links is written in place (truncated and rewritten), so that every
  link sees the change; a replacement would leave the others with the old text.
- Mode and owner are kept; a file whose owner a replacement could not keep (another user's, in
  a folder this user may write) is written in place when this user may write it, else refused.
- A read-only file is refused as an error unless asked (`--write-read-only`): its mode says
  that someone meant it not to change.
- A file whose bytes are no longer the ones the rewrite read (edited while the run went on) is
  left as it is: the check is made once the new text is ready, just before it replaces the
  file (or, written in place, on the open file), as git checks a file before it overwrites it.

Everything else is replaced atomically (`rewriter.write_atomically`): a reader sees the old file
or the new one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from neuron_migrate.rewrite.rewriter import read_digest, write_atomically

CHANGED = "changed since it was read: not written (rewrite it again)"
DELETED = "deleted since it was read: not written"


class _Changed(Exception):
    """The file on disk is not the one the rewrite read."""


def write_in_place(
    path: str, data: bytes, root: Path, *, read_only_too: bool = False, read: bytes | None = None
) -> str | None:
    """Write `data` as the new text of the file at `path`, found under `root`. Returns why it
    was not written (one line), or None when it was. `read`: the
    digest of the bytes the rewrite read (`rewriter.read_digest`); a file whose bytes differ
    now is not written."""
    try:
        return _write(path, data, root, read_only_too, read)
    except _Changed:
        return CHANGED
    except FileNotFoundError:
        return DELETED
    except OSError as exc:  # a full disk, a folder this user may not write: this file only
        return f"not written: {exc.strerror or exc}"


def _write(
    path: str, data: bytes, root: Path, read_only_too: bool, read: bytes | None
) -> str | None:
    target = path
    if os.path.islink(path):
        real = os.path.realpath(path)
        if not _inside(real, os.path.realpath(root)):
            return f"a symlink to {real}, outside {root}: not written (rewrite its target)"
        target = real
    info = os.stat(target)
    if not read_only_too and _read_only(target, info):
        return "read-only: not written (--write-read-only writes it)"
    if info.st_nlink > 1:
        _overwrite(target, data, read)
        return None

    def unchanged() -> None:
        if read is not None:
            with open(target, "rb") as handle:
                _check(handle.read(), data, read)

    try:
        write_atomically(target, data, before_replace=unchanged)
    except PermissionError:
        if not os.access(target, os.W_OK):
            return "another user's file that this user may not write: not written"
        _overwrite(target, data, read)  # in place: the owner stays
    return None


def _check(now: bytes, new: bytes, read: bytes | None) -> None:
    """Raises _Changed unless the file holds what the rewrite read, or already its new text (a
    file reached twice, through a link, and written the first time)."""
    if read is not None and now != new and read_digest(now) != read:
        raise _Changed


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _read_only(path: str, info: os.stat_result) -> bool:
    """No write bit at all, or none this user has (root has them all, so the bits decide)."""
    return not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(
        path, os.W_OK
    )


def _overwrite(path: str, data: bytes, read: bytes | None) -> None:
    """The file's bytes replaced through the file itself: its inode, links, owner and mode stay."""
    with open(path, "r+b") as handle:
        _check(handle.read(), data, read)
        handle.seek(0)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
