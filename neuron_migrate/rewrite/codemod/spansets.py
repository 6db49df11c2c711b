"""Spans of a source -- its sites, the places a text occurs -- and whether a node holds one: how
a pruned pass (`passes.PrunedTransformer`) tells which subtrees can matter to it."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable

from neuron_migrate.rewrite.codemod.recording import Extent, Span


class SpanSet:
    """Spans, and whether a node's extent holds one of them whole."""

    def __init__(self, spans: Iterable[Span]) -> None:
        ordered = sorted(set(spans))
        self.starts = [(s[0], s[1]) for s in ordered]
        self.ends = [(s[2], s[3]) for s in ordered]

    def within(self, extent: Extent | None) -> bool:
        """Whether a node with this extent holds one of the spans (a made node: always)."""
        if extent is None:
            return True
        end = (extent[2], extent[3])
        at = bisect.bisect_left(self.starts, (extent[0], extent[1]))
        while at < len(self.starts) and self.starts[at] <= end:
            if self.ends[at] <= end:
                return True
            at += 1
        return False

    def lines(self) -> list[int]:
        return sorted({start[0] for start in self.starts})

    def __bool__(self) -> bool:
        return bool(self.starts)


class SourceText:
    """A source by line and column: where a pattern occurs in it (a pattern that matches within
    one line), and what lies between two places."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._line_starts: list[int] | None = None

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self.source))]
        return self._line_starts

    @functools.cached_property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    def occurrences(self, pattern: str) -> SpanSet:
        found = [m.span() for m in re.finditer(pattern, self.source)]
        if not found:
            return SpanSet(())
        starts = self.line_starts
        spans = []
        for start, end in found:
            line = bisect.bisect_right(starts, start)
            offset = starts[line - 1]
            spans.append((line, start - offset, line, end - offset))
        return SpanSet(spans)

    def between(self, extent: Extent) -> str:
        """The text of an extent. One that ends after the source's last line ends with the
        newline the source does not have (what a printer writes before dropping it)."""
        starts = self.line_starts
        first = starts[extent[0] - 1] + extent[1]
        if extent[2] > len(starts):
            return self.source[first:] + "\n"
        return self.source[first : starts[extent[2] - 1] + extent[3]]
