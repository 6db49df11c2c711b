"""Print a tree and note where every node lands: the spans the codemod finds sites by.

The spans are the ones libcst's `PositionProvider` gives (syntactic: without the whitespace a
node owns, 1-based lines, 0-based character columns), from one printing of the tree that also
returns its code. It does the provider's work with tuples and plain context objects instead of
position objects and generator-based context managers, which makes it several times cheaper;
the common kinds of node print by functions of their own (`recorded_printing.py`), without
libcst's printing machinery.

A syntactic span may leave out part of a node (a function's decorators, a parameter's default),
so the printing also notes each node's extent: where all it prints starts and ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState  # the printer libcst's own providers extend

from neuron_migrate.rewrite.codemod.passes import INERT
from neuron_migrate.rewrite.codemod.recorded_printing import emit, note_extent

Span = tuple[int, int, int, int]
Extent = tuple[int, int, int, int]  # as a span, whitespace included
_NEWLINES = re.compile(r"\r\n?|\n")
# Whitespace and punctuation no pass looks up go unrecorded, but for the closing parenthesis of
# `from m import (a, b)`: where the import's own span ends.
_UNRECORDED = INERT - {cst.RightParen}


@dataclass
class Recording(CodegenState):
    """The printer that notes where every node lands (`printed`)."""

    spans: dict[cst.CSTNode, Span] = field(default_factory=dict)
    extents: dict[cst.CSTNode, Extent] = field(default_factory=dict)
    line: int = 1
    column: int = 0
    starts: list[tuple[int, int]] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\r" in value:
            segments = _NEWLINES.split(value)
            if len(segments) > 1:
                self.line += len(segments) - 1
                self.column = len(segments[-1])
                return
        newlines = value.count("\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - value.rindex("\n") - 1
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if type(node) not in _UNRECORDED:
            self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) in _UNRECORDED:
            return
        note_extent(self, node, *self.starts.pop())  # a syntactic span recorded inside wins

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Any:  # a context manager, as libcst's (a class: cheaper than a generator)
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """`with state.record_syntactic_position(node)`: the span of what is printed inside."""

    __slots__ = ("column", "end_node", "line", "node", "start_node", "state")

    def __init__(
        self,
        state: Recording,
        node: cst.CSTNode,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self) -> None:
        self.line, self.column = self.state.line, self.state.column

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Any:
        state = self.state
        start = (self.line, self.column)
        end = (state.line, state.column)
        if self.start_node is not None:
            start = state.spans[self.start_node][:2]
        if self.end_node is not None:
            end = state.spans[self.end_node][2:]
        state.spans[self.node] = (*start, *end)
        return None


@dataclass(frozen=True)
class Printed:
    code: str
    spans: dict[cst.CSTNode, Span]  # where each node is, as PositionProvider says
    extents: dict[cst.CSTNode, Extent]  # where all each node prints is


def printed(module: cst.Module, *, by_libcst: bool = False) -> Printed:
    """The module's code, with the span and the extent of every node in it. The common kinds
    of node print by `recorded_printing`, the others by libcst (`by_libcst`: all of them)."""
    state = Recording(default_indent=module.default_indent, default_newline=module.default_newline)
    if by_libcst:
        module._codegen(state)
    else:
        emit(state, module)
    return Printed("".join(state.tokens), state.spans, state.extents)
