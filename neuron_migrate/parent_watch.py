"""Pool workers that end with the process that started them.

A `scan` or `rewrite` killed with SIGKILL runs no clean-up: its pool workers lived on under
PID 1, each holding a share of the tree in memory. A worker calls `die_with_parent` first: on
Linux the kernel sends it SIGKILL when its parent ends (`PR_SET_PDEATHSIG`); elsewhere a thread
notices that its parent changed and ends it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_POLL_S = 1.0


def die_with_parent(parent: int) -> None:
    """End this process when `parent` (the pid that started it) ends, even by SIGKILL."""
    if sys.platform.startswith("linux") and _death_signal():
        pass
    elif hasattr(os, "getppid"):
        threading.Thread(target=_watch, args=(parent,), name="parent watch", daemon=True).start()
    if os.getppid() != parent:  # it ended before the kernel was told
        os._exit(1)


def _death_signal() -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_S)
    os._exit(1)
