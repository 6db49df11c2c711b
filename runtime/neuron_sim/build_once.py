"""Build a file once across processes: an OS lock, a private folder, an atomic rename.

The native engine is compiled on first use into the user's cache, where several processes
(torchrun's workers, two terminals, a test run) may ask for it at once. The lock is an
`fcntl.flock` on an open file beside the output: the OS releases it when its holder exits,
however it exits (Ctrl-C, an OOM kill, a CI timeout), so a killed build never blocks the next
one. (torch's own build lock is a file whose existence is the lock, which a killed build leaves
behind and every later build then waits on forever; here it only ever sees a private folder.)
The build writes into that private folder and its output reaches its final name by
`os.replace`, so no process ever finds, let alone loads, a half-written file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

_BUILDING = ".building-"  # prefix of the private folders builds run in


def built_once(
    target: Path, build: Callable[[Path], Path], announce: Callable[[str], None]
) -> Path:
    """`target`, made by `build(folder)` unless it exists already.

    `build` gets an empty private folder and returns the file it made there, which is then
    renamed to `target`. Only one process builds at a time: another one waits for it, after
    passing `announce` one line that says who it waits for, and then uses what it built.
    An exception from `build` propagates, leaving nothing behind but the lock file.
    """
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(target.with_name(f"{target.name}.lock"), target.parent, announce):
        if target.exists():  # built by the process we waited for
            return target
        _remove_abandoned_builds(target.parent)
        folder = Path(tempfile.mkdtemp(prefix=_BUILDING, dir=target.parent))
        try:
            os.replace(build(folder), target)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return target


@contextlib.contextmanager
def _exclusive(lock: Path, where: Path, announce: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive `flock` on `lock` (created if missing), waiting for its holder if
    another process has it. The holder's pid is written into the file for the waiters' line."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            announce(
                f"neuron-migrate: waiting for process {holder}, which is building the native "
                f"neuron engine in {where}"
                if holder
                else f"neuron-migrate: waiting for another process, which is building the "
                f"native neuron engine in {where}"
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote into it ("" while it has not yet)."""
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return text if text.isdigit() else ""


def _remove_abandoned_builds(folder: Path) -> None:
    """The private folders of builds that were killed: only the lock's holder builds, and it
    holds it now."""
    for leftover in folder.glob(f"{_BUILDING}*"):
        shutil.rmtree(leftover, ignore_errors=True)
