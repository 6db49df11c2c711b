"""A child command run the way a shell runs a job: in a process group of its own, the terminal's
foreground while it runs, and the signals `run` itself gets passed on to its whole group.

Without it, `kill -TERM` of `neuron-migrate run` ended `run` at once and left the command (and
its workers) running under PID 1, and a SIGINT sent to `run`'s PID alone was swallowed. Now
SIGINT, SIGTERM and SIGHUP sent to `run` reach every process of the command, `run` waits for
it, and exits with its status (128 + the signal's number when a signal ended it).
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


@contextlib.contextmanager
def forwarding_signals(pid: int) -> Iterator[None]:
    """While the child `pid` (the leader of its own process group) runs: the terminal's
    foreground is its group, and SIGINT/SIGTERM/SIGHUP sent to this process go to its group."""
    if NEW_GROUP is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    terminal = _foreground(pid)
    try:
        yield
    finally:
        if terminal is not None:
            _restore_foreground(*terminal)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


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
