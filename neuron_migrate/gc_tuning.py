"""Fewer cycle collections while a run makes and frees many short-lived objects.

A parse makes hundreds of thousands of objects, and reference counting frees them: at the
collector's default threshold (700 allocations) its passes over the young generation find
little and cost a noticeable share of a scan or a rewrite. What is loaded before the work never
becomes garbage, so it is frozen out of every pass.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def collect_less(thresholds: tuple[int, ...]) -> tuple[int, int, int]:
    """Freeze what is loaded and raise the thresholds (those not given stay); returns the
    thresholds it replaced. For a worker whose whole life is the run."""
    replaced = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*thresholds)
    return replaced


@contextmanager
def collecting_less(thresholds: tuple[int, ...]) -> Iterator[None]:
    """`collect_less` for the duration of a block, in a process that lives on after it."""
    replaced = collect_less(thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*replaced)
        gc.unfreeze()
