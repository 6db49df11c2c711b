"""Unified diffs that `patch` and `git apply` take as they are.

`difflib` alone makes two mistakes a patch tool rejects: `str.splitlines` also ends a line at a
form feed, `\\x1c` or `\\u2028` (characters a string or comment may hold), and a last line with
no newline runs into the next line of the diff. Here lines end at `\\n` only, and such a last
line is followed by the `\\ No newline at end of file` marker.
"""

import difflib
from collections.abc import Iterator

# Part of the rewrite cache's key (`rewrite.store.settings_digest`): diffs stored by a version
# that made them otherwise are not handed out.
FORMAT = "2"
NO_NEWLINE = "\\ No newline at end of file\n"


def diff_header(display: str) -> str:
    """The two lines a unified diff of `display` starts with."""
    return f"--- a/{display}\n+++ b/{display}\n"


def unified_diff(old: str, new: str, display: str) -> str:
    """The diff from `old` to `new`, both the text of `display`; empty when they are equal."""
    return "".join(
        _marked(difflib.unified_diff(lines(old), lines(new), f"a/{display}", f"b/{display}"))
    )


def lines(text: str) -> list[str]:
    """`text` cut after each `\\n`, each piece keeping it; a last piece without one is kept."""
    pieces = text.split("\n")
    kept = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        kept.append(pieces[-1])
    return kept


def _marked(diff: Iterator[str]) -> Iterator[str]:
    for line in diff:
        if line.endswith("\n"):
            yield line
        else:
            yield line + "\n"
            yield NO_NEWLINE
