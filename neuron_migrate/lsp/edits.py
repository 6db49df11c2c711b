"""A rewrite as the smallest text edits: runs of lines that differ between the buffer and the
migrated text, each a replacement of whole lines.

Lines end where LSP ends them (`\\n`, `\\r\\n`, `\\r`), which is also where Python's parser ends
them, so a finding's line is an LSP line; `str.splitlines` would also end one at a form feed.
"""

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


# The line a rewrite adds where it leaves something for a person (`codemod.markers`).
MARKER = "# TODO(neuron-migrate "


def without_markers(all_hunks: Iterable[Hunk], code: str) -> list[Hunk]:
    """The hunks less the marker lines they add for rules other than `code`: a rewrite of one
    site marks the torch_xla import that the file's other, untouched sites still use, which is
    no part of that site's fix. A hunk left with nothing to do is dropped."""
    own = f"{MARKER}{code})"
    kept = []
    for hunk in all_hunks:
        added = [
            line
            for line in split_lines(hunk.new)
            if not (line.lstrip().startswith(MARKER) and not line.lstrip().startswith(own))
        ]
        if added or hunk.start != hunk.end:
            kept.append(hunk._replace(new="".join(added)))
    return kept


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
