"""A child command run the way a shell runs a job: in a process group of its own, the terminal's
foreground while it runs, and the signals `run` itself gets passed on to its whole group.

Without it, `kill -TERM` of `neuron-migrate run` ended `run` at once and left the command (and
its workers) running under PID 1, and a SIGINT sent to `run`'s PID alone was swallowed. Now
SIGINT, SIGTERM and SIGHUP sent to `run` reach every process of the command, `run` waits for
it, and exits with its status (128 + the signal's number when a signal ended it).

SIGKILL cannot be passed on: a `run` killed so left its command running. A watcher process
forked once the command starts (`_group_reaper`) waits on a pipe whose writing end only `run`
holds, and kills the command's group when the pipe closes without `run` saying it is done.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

FORWARDED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
# Popen's `process_group` that puts the child in a group of its own (POSIX; None elsewhere).
NEW_GROUP: int | None = 0 if hasattr(os, "killpg") else None


class Forwarder:
    """Where the signals go: the child's group once it is started (`started`); a signal that
    comes before that is passed on as soon as it is."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []
        self.terminal: tuple[int, int] | None = None
        self.reaper: tuple[int, int] | None = None  # its pipe's writing end, its pid

    def forward(self, signum: int, frame: object = None) -> None:
        if self.pid is None:
            self.pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def started(self, pid: int) -> None:
        self.pid = pid
        if NEW_GROUP is not None and threading.current_thread() is threading.main_thread():
            self.terminal = _foreground(pid)
            self.reaper = _group_reaper(pid)
        for signum in self.pending:
            self.forward(signum)


@contextlib.contextmanager
def forwarding_signals() -> Iterator[Forwarder]:
    """SIGINT/SIGTERM/SIGHUP sent to this process go to the child's group from now on (call
    `started` with its pid, the leader of its own group); while it runs, the terminal's
    foreground is its group. Installed before the child starts: no signal falls in between."""
    forwarder = Forwarder()
    if NEW_GROUP is None or threading.current_thread() is not threading.main_thread():
        yield forwarder
        return
    previous = {signum: signal.signal(signum, forwarder.forward) for signum in FORWARDED}
    try:
        yield forwarder
    finally:
        if forwarder.reaper is not None:
            _done(*forwarder.reaper)
        if forwarder.terminal is not None:
            _restore_foreground(*forwarder.terminal)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _group_reaper(group: int) -> tuple[int, int] | None:
    """A process that kills `group` with SIGKILL when this process ends without calling
    `_done` (killed with SIGKILL, say): the pipe it reads closes with the last writer, and
    only this process holds that end (not inheritable: the command never gets it)."""
    if not hasattr(os, "fork"):
        return None
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # the watcher: os-level calls only, then out
        try:
            os.close(write)
            for signum in FORWARDED:  # `run`'s to pass on, not the watcher's to die of
                signal.signal(signum, signal.SIG_IGN)
            if not os.read(read, 1):
                os.killpg(group, signal.SIGKILL)
        finally:
            os._exit(0)
    os.close(read)
    return write, pid


def _done(write: int, pid: int) -> None:
    """Tell the watcher the command was waited for, and reap it."""
    with contextlib.suppress(OSError):
        os.write(write, b"d")
    with contextlib.suppress(OSError):
        os.close(write)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def _foreground(pid: int) -> tuple[int, int] | None:
    """Make the child's group the terminal's foreground, as a shell does for a job, when this
    process's group holds it: a Ctrl-C then reaches the command (and not `run`), and the
    command may read the terminal. The terminal and the group to give it back to."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or os.tcgetpgrp(fd) != os.getpgrp():
            return None
        own = os.getpgrp()
        with _ttou_ignored():
            os.tcsetpgrp(fd, pid)
    except (OSError, ValueError, AttributeError):
        return None
    return fd, own


def _restore_foreground(fd: int, group: int) -> None:
    with contextlib.suppress(OSError), _ttou_ignored():
        os.tcsetpgrp(fd, group)


@contextlib.contextmanager
def _ttou_ignored() -> Iterator[None]:
    """A background group that sets the terminal's foreground gets SIGTTOU (and stops) unless
    it ignores it."""
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGTTOU, previous)
