"""A rewrite as the smallest text edits: runs of lines that differ between the buffer and the
migrated text, each a replacement of whole lines.

Lines end where LSP ends them (`\\n`, `\\r\\n`, `\\r`), which is also where Python's parser ends
them, so a finding's line is an LSP line; `str.splitlines` would also end one at a form feed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import NamedTuple

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its ending."""
    return _LINE.findall(text)


class Hunk(NamedTuple):
    """Old lines [start, end) (0-based) replaced by `new` (whole lines, endings kept)."""

    start: int
    end: int
    new: str


def hunks(old: str, new: str) -> list[Hunk]:
    """The runs of lines that differ, in order and not overlapping: applied together to `old`
    they give `new`."""
    a, b = split_lines(old), split_lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [
        Hunk(i1, i2, "".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def touching(all_hunks: Iterable[Hunk], first: int, last: int) -> list[Hunk]:
    """The hunks that change lines `first`..`last` (0-based, inclusive) or insert lines among
    them (before `first` up to after `last`-1): the rewrite's edit of a site spanning them."""
    return [
        h
        for h in all_hunks
        if (h.start <= last and h.end > first) or (h.start == h.end and first <= h.start <= last)
    ]


def apply(old: str, chosen: Iterable[Hunk]) -> str:
    """`old` with `chosen` hunks applied (tests and the fix-all check use it)."""
    lines = split_lines(old)
    out: list[str] = []
    at = 0
    for hunk in sorted(chosen):
        out.extend(lines[at : hunk.start])
        out.append(hunk.new)
        at = hunk.end
    out.extend(lines[at:])
    return "".join(out)
