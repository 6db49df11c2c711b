"""A stand-in for a module with lines too long to analyse whole: in each such line, the elements
of its displays that cannot change what the rest of the line means, blanked out.

A kept statement with a line longer than `trim.largest_parsed()` characters that holds a site is
never rewritten: no part of a site's line is cut out (`trim.py`), so it stays over the limit.
Finding that out from the module itself costs its whole `ast` tree: 334 MB for one 2 MB line of
120,000 `xm.xla_device()` calls, most of its rewrite's peak. The proxy is the module with, in
each long line, the elements of a list, tuple, set or dict display that repeat, character for
character, an element kept before them in the same display, or that hold no name (numbers,
strings, operators), replaced by spaces (with their commas): every line keeps its length and
every kept token its place, and the proxy costs what its kept elements cost.

Nothing blanked binds a name the kept elements do not (a repeat binds the same names; an element
without a name binds none; an f-string may, so it counts as a name), and a display that is a
target is never read from the proxy (`Proxy.readable`). So a site the proxy holds on a long line
is in the module too, at the same place, and its statement is refused for the same size: the
engine refuses the module from the proxy when its outline refuses such a statement, once the
blanked elements are known to parse where they are (`Proxy.blanked_parse`). Any other outcome,
and any layout this module does not follow, leaves the module to be analysed whole.
"""

from __future__ import annotations

import ast
import io
import keyword
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field

_CLOSING = {"(": ")", "[": "]", "{": "}"}
# Keywords that make a display's commas something else than element separators at its depth: a
# comprehension's `for` (a target list), a lambda's parameters, a yield's tuple.
_NOT_ELEMENTS = frozenset({"for", "async", "lambda", "yield"})
# Blanked elements are parsed for their syntax in runs of at most this many characters.
_CHECKED_RUN = 32_768
_SKIPPED = frozenset(
    {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}
)
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12 on
# Python 3.12.0-3.12.3 tokenize a line in time quadratic in its length (each token copies the
# line: CPython gh-119118, fixed in 3.12.4): over 2 minutes for a 2 MB line. There, no proxy.
_SLOW_TOKENIZE = (3, 12) <= sys.version_info < (3, 12, 4)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass(frozen=True)
class _Run:
    """Blanked elements of one display, in a row, as a comma-separated run of its source."""

    opening: str
    first: str  # the display's first element, which is never blanked
    row: int
    start: int
    end: int


@dataclass(frozen=True)
class Proxy:
    text: str  # the module with its blanked elements replaced by spaces
    rows: frozenset[int]  # the long lines something was blanked on (1-based)
    runs: tuple[_Run, ...]  # what was blanked that is no kept element's repeat
    lines: list[str] = field(repr=False)  # the module's

    def holds(self, first: int, last: int) -> bool:
        """Whether the statement on lines `first`..`last` has a line with blanks."""
        return any(first <= row <= last for row in self.rows)

    def readable(self, tree: ast.Module) -> bool:
        """Whether `tree` (the proxy's) has no list or tuple target and no `case` pattern on a
        line with blanks: there a blanked element could bind a name or be an error
        (`[a, 1] = b`, `case [x, x]:`)."""
        return not any(
            (
                isinstance(node, ast.pattern)
                or (isinstance(node, ast.List | ast.Tuple) and not isinstance(node.ctx, ast.Load))
            )
            and self.holds(node.lineno, node.end_lineno or node.lineno)
            for node in ast.walk(tree)
        )

    def blanked_parse(self) -> bool:
        """Whether the blanked elements that are no kept element's repeat parse, each run in its
        display after its first element: the module then parses as the proxy does."""
        for run in self.runs:
            text = self.lines[run.row - 1][run.start : run.end]
            try:
                ast.parse(f"{run.opening}{run.first}, {text}{_CLOSING[run.opening]}", mode="eval")
            except (SyntaxError, ValueError):
                return False
        return True


def long_line_proxy(source: str, limit: int) -> Proxy | None:
    """The proxy of `source` for lines of `limit` characters or more; None when it has no such
    line, nothing on them can be blanked, or its layout is one this module does not follow."""
    if len(source) < limit:  # most modules: no line can be that long, nothing to split
        return None
    if _SLOW_TOKENIZE or limit <= 0 or "\r" in source or "\f" in source:
        return None
    lines = source.split("\n")
    long = frozenset(n for n, line in enumerate(lines, 1) if len(line) >= limit)
    if not long:
        return None
    try:
        walk = _Walk(lines, long)
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            walk.step(token)
    except (tokenize.TokenError, SyntaxError, _Unfollowed):
        return None
    if walk.stack or not walk.blanks:
        return None
    proxy_lines = list(_blanked(lines, walk.blanks))
    rows = frozenset(walk.blanks)
    if 2 * sum(_dense(proxy_lines[n - 1]) for n in rows) > sum(_dense(lines[n - 1]) for n in rows):
        return None  # most of what the lines hold is left: not worth a second tree
    text = "\n".join(proxy_lines)
    return Proxy(text, rows, tuple(walk.runs), lines)


class _Unfollowed(Exception):
    """A token stream this module does not follow (an error token, unbalanced brackets)."""


@dataclass(slots=True)
class _Frame:
    """An open bracket, and the element being read at its depth."""

    display: bool  # a display (not a call's or a subscript's bracket)
    opening: str
    elements: bool = True  # its commas separate elements (see _NOT_ELEMENTS)
    named: bool = False  # a name anywhere inside
    count: int = 0  # elements read
    first: str = ""
    kept: set[str] = field(default_factory=set)  # the texts of the elements kept on long lines
    start: tuple[int, int] | None = None  # the element being read: its first token's start
    end: tuple[int, int] = (0, 0)  # and its last token's end
    element_named: bool = False
    # Spans (row, start, end) blanked, and runs to check, when the display closes.
    blanks: list[list[int]] = field(default_factory=list)
    runs: list[list[int]] = field(default_factory=list)


@dataclass(slots=True)
class _Walk:
    lines: list[str]
    long: frozenset[int]
    stack: list[_Frame] = field(default_factory=list)
    blanks: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    runs: list[_Run] = field(default_factory=list)
    previous: tokenize.TokenInfo | None = None
    fstrings: int = 0  # f-strings open (Python 3.12 tokenizes their insides)

    def step(self, token: tokenize.TokenInfo) -> None:
        kind = token.type
        if kind == tokenize.NEWLINE:
            self.previous = None  # a bracket that starts a statement opens a display
        if kind in _SKIPPED or kind == tokenize.ENDMARKER:
            return
        if kind == tokenize.ERRORTOKEN:
            raise _Unfollowed(token.string)
        previous, self.previous = self.previous, token
        if self.fstrings or kind == _FSTRING_START:
            self.fstrings += (kind == _FSTRING_START) - (kind == _FSTRING_END)
            self._read(token, named=True)
            return
        text = token.string
        if kind == tokenize.OP and text in _CLOSING:
            self._read(token, named=False)
            self.stack.append(_Frame(_is_display(text, previous), text))
        elif kind == tokenize.OP and text in ")]}":
            if not self.stack or _CLOSING[self.stack[-1].opening] != text:
                raise _Unfollowed(text)
            frame = self.stack.pop()
            self._element_end(frame, None)
            self._close(frame)
            if self.stack:
                self.stack[-1].named |= frame.named
                self.stack[-1].element_named |= frame.named
            self._read(token, named=False)
        elif kind == tokenize.OP and text == "," and self.stack:
            self._element_end(self.stack[-1], token.end)
        else:
            named = (kind == tokenize.NAME and not keyword.iskeyword(text)) or (
                kind == tokenize.STRING and "f" in _prefix(text)
            )
            if kind == tokenize.NAME and text in _NOT_ELEMENTS and self.stack:
                self.stack[-1].elements = False
            self._read(token, named=named)

    def _read(self, token: tokenize.TokenInfo, *, named: bool) -> None:
        """`token` is part of the element being read at the top."""
        if not self.stack:
            return
        frame = self.stack[-1]
        if frame.start is None:
            frame.start = token.start
        frame.end = token.end
        frame.named |= named
        frame.element_named |= named

    def _element_end(self, frame: _Frame, comma: tuple[int, int] | None) -> None:
        start, end, named = frame.start, frame.end, frame.element_named
        frame.start, frame.element_named = None, False
        if start is None:
            return  # a trailing comma's empty element
        frame.count += 1
        row = start[0]
        one_row = row == end[0] and (comma is None or comma[0] == row)
        if frame.count == 1:
            frame.first = _text(self.lines, start, end)
            frame.kept.add(frame.first)
            return
        text = self.lines[row - 1][start[1] : end[1]] if one_row else ""
        if not (frame.display and one_row and row in self.long):
            return
        repeat = text in frame.kept
        if not repeat and named:
            frame.kept.add(text)
            return
        stop = comma[1] if comma is not None else end[1]
        _extend(self.lines[row - 1], frame.blanks, row, start[1], stop)
        if not repeat:
            _extend(self.lines[row - 1], frame.runs, row, start[1], stop, _CHECKED_RUN)

    def _close(self, frame: _Frame) -> None:
        if not (frame.display and frame.elements and frame.blanks):
            return
        for row, start, end in frame.blanks:
            self.blanks.setdefault(row, []).append((start, end))
        for row, start, end in frame.runs:
            self.runs.append(_Run(frame.opening, frame.first, row, start, end))


def _is_display(opening: str, previous: tokenize.TokenInfo | None) -> bool:
    """Whether a bracket opens a display: not after a name (a call, a subscript) or after a
    closing bracket or a string (a call or subscript of their value)."""
    if opening == "{" or previous is None:
        return True
    if previous.type == tokenize.NAME:  # (`import (a, b)`: names, not a tuple)
        return keyword.iskeyword(previous.string) and previous.string != "import"
    if previous.type == tokenize.OP:
        return previous.string not in (")", "]", "}")
    return previous.type not in (tokenize.STRING, _FSTRING_END, tokenize.NUMBER)


def _prefix(string: str) -> str:
    return string[: min(string.find(q) for q in "'\"" if q in string)].lower()


def _extend(
    line: str, spans: list[list[int]], row: int, start: int, end: int, most: int | None = None
) -> None:
    """Add `start`..`end` of `row` to `spans`, joined to the last one when only blanks part
    them (and the joined one stays under `most` characters)."""
    if spans:
        last = spans[-1]
        if (
            last[0] == row
            and not line[last[2] : start].strip()
            and (most is None or end - last[1] <= most)
        ):
            last[2] = end
            return
    spans.append([row, start, end])


def _text(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]]
    middle = lines[start[0] : end[0] - 1]
    return "\n".join([lines[start[0] - 1][start[1] :], *middle, lines[end[0] - 1][: end[1]]])


def _dense(line: str) -> int:
    return len(line) - line.count(" ")


def _blanked(lines: list[str], blanks: dict[int, list[tuple[int, int]]]) -> Iterator[str]:
    for row, line in enumerate(lines, 1):
        spans = sorted(blanks.get(row, ()))
        parts: list[str] = []
        at = 0  # characters before this one are placed
        for start, end in spans:  # (a display's blanks may hold an inner one's)
            if end <= at:
                continue
            start = max(start, at)
            parts += (line[at:start], " " * (end - start))
            at = end
        parts.append(line[at:])
        yield "".join(parts)
