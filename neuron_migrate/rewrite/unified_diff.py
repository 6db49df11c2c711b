"""Unified diffs that `patch` and `git apply` take as they are.

`difflib` alone makes two mistakes a patch tool rejects: `str.splitlines` also ends a line at a
form feed, `\\x1c` or `\\u2028` (characters a string or comment may hold), and a last line with
no newline runs into the next line of the diff. Here lines end at `\\n` only, and such a last
line is followed by the `\\ No newline at end of file` marker.
"""

import difflib
import os
from collections.abc import Iterator

# Part of the rewrite cache's key (`rewrite.store.settings_digest`): diffs stored by a version
# that made them otherwise are not handed out.
FORMAT = "2"
NO_NEWLINE = "\\ No newline at end of file\n"


def diff_header(display: str) -> str:
    """The two lines a unified diff of `display` starts with."""
    return f"--- {diff_name('a/', display)}\n+++ {diff_name('b/', display)}\n"


# Characters git quotes in a diff's file names (`core.quotePath`), with the escapes it uses.
_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}
_ESCAPES.update({'"': '\\"', "\\": "\\\\"})


def diff_path(path: str, display: str) -> str:
    """The name a diff gives the file at `path`, shown in reports as `display`: the display,
    or, where that shows bytes that are not UTF-8 as `\\xNN` (`discover.shown_name`), the real
    name (those bytes held as surrogate escapes), which `diff_name` quotes as git does."""
    if "\\x" not in display:
        return display
    parts = display.count("/") + 1
    return "/".join(path.replace(os.sep, "/").split("/")[-parts:])


def _quoted(ch: str) -> bool:
    return ch in _ESCAPES or ord(ch) < 0x20 or ord(ch) == 0x7F or "\udc80" <= ch <= "\udcff"


def _escaped(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if "\udc80" <= ch <= "\udcff":  # a byte that is not UTF-8, as the name holds it
        return f"\\{ord(ch) - 0xDC00:03o}"
    if ord(ch) < 0x20 or ord(ch) >= 0x7F:  # git writes each byte of the rest in octal
        return "".join(f"\\{byte:03o}" for byte in ch.encode("utf-8"))
    return ch


def diff_name(prefix: str, display: str) -> str:
    """`prefix` + `display` as a diff header names it: as it is, or, when it holds a control
    character, a quote, a backslash or a byte that is not UTF-8, in double quotes with C
    escapes, as git writes it (and `git apply` and `patch` read it): a newline in a name no
    longer ends the header line."""
    name = prefix + display
    if not any(map(_quoted, name)):
        return name
    return '"' + "".join(map(_escaped, name)) + '"'


def unified_diff(old: str, new: str, display: str) -> str:
    """The diff from `old` to `new`, both the text of `display`; empty when they are equal."""
    return "".join(
        _marked(
            difflib.unified_diff(
                lines(old), lines(new), diff_name("a/", display), diff_name("b/", display)
            )
        )
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
