"""The outline below the statement: a large kept statement with its site-less parts cut out.

The outline (`outline.py`) keeps whole every statement that holds a site. libcst's parser needs
about 0.85 KB a character of what it parses, so a data table of thousands of lines with one site
in it (torch's `op_db`) costs hundreds of MB. In a line of simple statements longer than
`LARGE_STATEMENT`, each element of a display (list, tuple, set, dict) and each argument of a call
on no line that makes a statement stay (a site, a torch_xla mention) is cut out as a `Piece` and
replaced by a placeholder name; `skeleton.py` puts, in its place, a node that prints the piece's
source. The same rule the outline applies to statements, one level down: the passes see every
line that holds a site. A call that starts on a site's line is kept whole, arguments included,
as the call a rule acts on may be.

What is left of such a statement may still be long: a list of 120,000 calls that are all sites
(libcst: 2 GB). Past `largest_parsed()` characters of code (a placeholder counted as a few) the
file is not rewritten (`StatementTooLarge`, reported as a `too_large_statement` error).
"""

from __future__ import annotations

import ast
import bisect
import io
import os
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from neuron_migrate.rewrite.codemod.results import StatementTooLarge

PIECE = "__neuron_migrate_piece_{}__"
# Characters of a line of simple statements from which its site-less parts are cut out: libcst
# parses one this long in about 14 MB. (Module attributes: tests lower them.)
LARGE_STATEMENT = 16_384
# A part shorter than this stays: cutting it out spares little.
SMALLEST_PIECE = 16
# What a placeholder costs libcst, in characters of code (about 4.7 KB a placeholder, 0.85 KB a
# character of dense code).
PLACEHOLDER_COST = 6
# Characters of a trimmed statement libcst is handed at most (its parse: about 55 MB);
# NEURON_MIGRATE_MAX_STATEMENT changes it (0: none). Checked from LARGE_STATEMENT on.
DEFAULT_LARGEST_PARSED = 65_536

_ENTERED = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Call)
_VALUED = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)


@dataclass(frozen=True)
class Piece:
    """An expression cut out of a kept statement: its source, first token to last. As libcst
    does with the whitespace between tokens, each later line that starts with the block's
    indentation, outside a string, holds it as that indentation (`reindented`, by index in the
    piece's lines), so that the piece follows its statement to another block."""

    text: str
    indent: str = ""  # the indentation of the block around the statement
    reindented: tuple[int, ...] = ()

    def lines(self) -> list[str]:
        return self.text.split("\n")


def trimmed(
    lines: list[str],
    first: int,
    last: int,
    stmts: Iterable[ast.stmt],
    keep: list[int],
    sites: list[int],
    numbered: int,
) -> tuple[str, dict[str, Piece]] | None:
    """The text of lines `first`..`last` (a line of simple statements, `stmts`) with its
    site-less parts replaced by placeholders named from `numbered` on, and what each stands
    for; None when it is short or nothing is cut. `keep` and `sites`: sorted lines. Raises
    StatementTooLarge when what is left is longer than `largest_parsed()`."""
    size = sum(len(lines[n]) for n in range(first - 1, last))
    if size < LARGE_STATEMENT:
        return None
    spans = sorted(_cuttable(stmts, keep, sites))
    limit = largest_parsed()
    if not spans:
        if limit and size > limit:
            raise StatementTooLarge(first, size, limit, last)
        return None
    starts = [0]
    for number in range(first - 1, last):
        starts.append(starts[-1] + len(lines[number]))
    text = "".join(lines[first - 1 : last])
    indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip(" "))]
    out: list[str] = []
    pieces: dict[str, Piece] = {}
    at = 0
    for line, column, end_line, end_column in spans:
        start = starts[line - first] + _characters(lines[line - 1], column)
        end = starts[end_line - first] + _characters(lines[end_line - 1], end_column)
        if "\\\n" in text[start:end]:
            continue  # a backslash's next line keeps its indentation in libcst: left to it
        name = PIECE.format(numbered + len(pieces))
        pieces[name] = _piece(text[start:end], indent)
        out.append(text[at:start])
        out.append(name)
        at = end
    out.append(text[at:])
    kept = "".join(out)
    names = sum(len(name) for name in pieces)
    cost = len(kept) - names + PLACEHOLDER_COST * len(pieces)  # what libcst pays for
    if limit and cost > limit:
        raise StatementTooLarge(first, cost, limit, last)
    return kept, pieces


def largest_parsed() -> int:
    """`DEFAULT_LARGEST_PARSED`, or NEURON_MIGRATE_MAX_STATEMENT (0: no limit)."""
    try:
        return int(os.environ.get("NEURON_MIGRATE_MAX_STATEMENT", DEFAULT_LARGEST_PARSED))
    except ValueError:
        return DEFAULT_LARGEST_PARSED


def _piece(text: str, indent: str) -> Piece:
    """`text` as a piece of a statement in a block indented by `indent`."""
    if "\n" not in text:
        return Piece(text)
    lines = text.split("\n")
    inside = _in_strings(text) if '"""' in text or "'''" in text else set()
    reindented = tuple(
        k for k in range(1, len(lines)) if k not in inside and lines[k].startswith(indent)
    )
    return Piece(text, indent, reindented)


def _in_strings(text: str) -> set[int]:
    """The lines of `text` (by index) that start inside a string token."""
    inside: set[int] = set()
    tokens = tokenize.generate_tokens(io.StringIO(f"({text})").readline)
    for token in tokens:
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            inside.update(range(token.start[0], token.end[0]))  # rows are 1-based
    return inside


def _cuttable(
    stmts: Iterable[ast.stmt], keep: list[int], sites: list[int]
) -> Iterator[tuple[int, int, int, int]]:
    """The spans (ast's: UTF-8 columns) of the parts to cut out, none inside another."""
    stack: list[ast.expr] = [s.value for s in stmts if isinstance(s, _VALUED) and s.value]
    while stack:
        node = stack.pop()
        if not isinstance(node, _ENTERED):
            continue
        if isinstance(node, ast.Call) and _any_between(sites, node.lineno, node.lineno):
            continue  # a site's own call, maybe: its rule may read every argument
        for child in _parts(node):
            end_line = child.end_lineno or child.lineno
            if _any_between(keep, child.lineno, end_line):
                stack.append(child)
            elif end_line > child.lineno or (child.end_col_offset or 0) - child.col_offset >= (
                SMALLEST_PIECE
            ):
                yield (child.lineno, child.col_offset, end_line, child.end_col_offset or 0)


def _parts(node: ast.expr) -> Iterator[ast.expr]:
    """The parts of a display or call a placeholder name may stand for: its elements, keys,
    values and arguments (a starred one's value: the star stays)."""
    if isinstance(node, ast.Dict):
        found: list[ast.expr] = [k for k in node.keys if k is not None] + node.values
    elif isinstance(node, ast.Call):
        found = [*node.args, *(k.value for k in node.keywords)]
    else:
        found = list(node.elts)  # type: ignore[attr-defined]
    for part in found:
        part = part.value if isinstance(part, ast.Starred) else part
        # A generator expression may share its parentheses with the call around it.
        if not isinstance(part, ast.GeneratorExp):
            yield part


def _any_between(lines: list[int], first: int, last: int) -> bool:
    at = bisect.bisect_left(lines, first)
    return at < len(lines) and lines[at] <= last


def _characters(line: str, offset: int) -> int:
    """A UTF-8 column of `line` (as ast gives it) in characters."""
    return offset if line.isascii() else len(line.encode()[:offset].decode())
