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

# Scanning and rewriting make next to no reference cycles (tests/scan and tests/rewrite check
# it: the only ones are the closures of `ast.literal_eval`, which libcst calls for a literal's
# value), so the collector's passes find next to nothing; at the defaults they cost about an
# eighth of a cold scan, and a twentieth of a rewrite or of a re-scan the cache answers.
FEW_CYCLES = (100_000, 50, 100)


def collect_less(thresholds: tuple[int, ...]) -> tuple[int, int, int]:
    """Freeze what is loaded and raise the thresholds (those not given stay); returns the
    thresholds it replaced. For a worker whose whole life is the run."""
    replaced = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*thresholds)
    return replaced


_nested = 0  # how many `collecting_less` blocks are open


@contextmanager
def collecting_less(thresholds: tuple[int, ...]) -> Iterator[None]:
    """`collect_less` for the duration of a block, in a process that lives on after it. Inside
    another such block it changes nothing: the outermost one restores the collector."""
    global _nested
    replaced = collect_less(thresholds) if not _nested else None
    _nested += 1
    try:
        yield
    finally:
        _nested -= 1
        if replaced is not None:
            # What the block made and kept joins the oldest generation with what was frozen,
            # instead of being traversed by the first young pass after it.
            gc.freeze()
            gc.unfreeze()
            gc.set_threshold(*replaced)
