"""The recording printer: libcst's code generator state, noting where every node it prints
lands (its span, as `PositionProvider` gives it, and its extent, whitespace included).

`positions.printed` drives it; `recorded_printing` prints the common kinds of node onto it
without libcst's printing machinery.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState  # the printer libcst's own providers extend

from neuron_migrate.rewrite.codemod.passes import INERT

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


def note_extent(state: Recording, node: cst.CSTNode, line: int, column: int) -> None:
    """What the recording printer notes for a node it records, which started at `line`,
    `column`: its extent, and its span unless a syntactic one was noted inside."""
    extent = (line, column, state.line, state.column)
    state.extents[node] = extent
    if node not in state.spans:
        state.spans[node] = extent
