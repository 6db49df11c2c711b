"""Memoised recursion over a graph that may have cycles, for the analyses that follow a value to
where it was made (a name to its assignments, `self.w` to the class's `self.w = ...`, an alias
to what it aliases).

Without a cache such a walk costs the number of paths, not of nodes: `a1 = a0 + a0; a2 = a1 +
a1; ...` doubles with every link. With one, each key is computed once. A key met again while it
is being computed (a cycle: `x = x + 1`, `a = b; b = a`) gives `cut`, the analysis's "the other
paths decide". A result that leant on a cut of a key still being computed further up is only
provisional -- seen from elsewhere the cycle would be cut at another place -- so it is kept only
until the outermost computation ends (one walk of the cycle per query, not one per path); every
other result is kept for good. Lowlinks as in Tarjan's strongly connected components.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

A = TypeVar("A")
V = TypeVar("V")


class Memo(Generic[V]):
    __slots__ = ("_active", "_cut", "_final", "_lows", "_provisional", "cuts")

    def __init__(self, cut: V) -> None:
        self._cut = cut
        # How many times a cycle was cut: while none was, every result is the same whatever
        # the order of the questions asked.
        self.cuts = 0
        self._final: dict[Hashable, V] = {}
        self._provisional: dict[Hashable, tuple[V, int]] = {}  # value, the depth it leant on
        self._active: dict[Hashable, int] = {}  # keys being computed, by depth
        self._lows: list[int] = []  # per computation in progress: the shallowest cut it met

    def get(self, key: Hashable, compute: Callable[[A], V], argument: A) -> V:
        """`compute(argument)` for `key`, once. (An argument rather than a closure: one frame
        less a link of the chain, whose depth is Python's recursion limit's business.)"""
        final = self._final
        if key in final:
            return final[key]
        lows = self._lows
        provisional = self._provisional.get(key)
        if provisional is not None:
            lows[-1] = min(lows[-1], provisional[1])
            return provisional[0]
        depth = self._active.get(key)
        if depth is not None:
            lows[-1] = min(lows[-1], depth)
            self.cuts += 1
            return self._cut
        depth = len(lows)
        self._active[key] = depth
        lows.append(depth)
        try:
            value = compute(argument)
        finally:
            low = lows.pop()
            del self._active[key]
        if low >= depth:  # no cut above this key: its own cycle at most
            final[key] = value
        else:
            self._provisional[key] = (value, low)
            lows[-1] = min(lows[-1], low)
        if not lows:
            self._provisional.clear()
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._final
