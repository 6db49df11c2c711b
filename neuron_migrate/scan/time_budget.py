"""A time budget for analysing or rewriting one file, so that one pathological file is reported
as an error (`timeout`) instead of stalling the whole run (the cost of a file is meant to be
linear in its size and findings; this is the guard for what that misses). `scan` and `rewrite`
share it.

The budget is a real-time interval timer (SIGALRM) around the analysis, so it works only on a
process's main thread with `setitimer` -- a pool worker's, or a scan's own with `-j 1`.
Elsewhere the file is analysed without one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

# Seconds one file may take to analyse; NEURON_MIGRATE_FILE_BUDGET_S changes it (0: none).
DEFAULT_BUDGET_S = 60.0


class OverBudget(Exception):
    """The file's analysis ran past its budget."""


def budget_s() -> float:
    try:
        return float(os.environ.get("NEURON_MIGRATE_FILE_BUDGET_S", DEFAULT_BUDGET_S))
    except ValueError:
        return DEFAULT_BUDGET_S


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise OverBudget in the block once it has run `seconds` (where a timer can be had)."""
    usable = (
        seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise OverBudget

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
