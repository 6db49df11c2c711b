"""The rewritten source, printed where it changed and copied where it did not.

A top-level statement the passes left alone, where it was, is the very node that was printed from
the source (`positions.py`), so its text is the source's text from its extent. (A node can also
move: unwrapping `with torch_xla.step():` lifts its block's statements to the block around it,
where they print with another indentation.) The statements the passes made are printed, and only
they need re-parsing: for `ast.parse`, which checks the grammar, the statements of a block are
independent of each other (each starts on a fresh line at the block's margin and ends its own
lines), so the output parses if what was made does -- with each opaque statement inside it, a
source statement that parsed in that very place, read as `pass`.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState

from neuron_migrate.codemod.positions import Extent
from neuron_migrate.codemod.spansets import SourceText


class RewriteFailed(Exception):
    """The rewritten source did not parse: a bug in a transform. The file is left alone."""


def printed_checked(
    module: cst.Module,
    source: SourceText,
    extents: Mapping[cst.CSTNode, Extent],
    top_level: Collection[cst.CSTNode],
) -> str:
    """`module`'s code, after checking that what changed parses. `top_level`: the module's
    statements as parsed. Raises RewriteFailed."""
    state = _Printing(default_indent=module.default_indent, default_newline=module.default_newline)
    for line in module.header:
        line._codegen(state)
    made: list[str] = []  # what must parse
    for stmt in module.body:
        extent = extents.get(stmt) if stmt in top_level else None
        if extent is None:
            first = len(state.tokens)
            stmt._codegen(state)
            made.extend(state.checked(first))
            continue
        text = source.between(extent)
        newline = state.default_newline
        if text.endswith(newline):  # a token of its own, as a printed statement's newline is
            state.add_token(text[: -len(newline)])
            state.add_token(newline)
        else:
            state.add_token(text)
    for line in module.footer:
        line._codegen(state)
    if not module.has_trailing_newline:
        state.pop_trailing_newline()
    elif not state.tokens:
        state.add_token(state.default_newline)
    if made:
        try:
            ast.parse("".join(made))
        except SyntaxError as exc:
            reason = " ".join(str(exc).split())
            raise RewriteFailed(f"rewritten code does not parse: {reason}") from exc
    return "".join(state.tokens)


@dataclass
class _Printing(CodegenState):
    """A printer that knows which of its tokens are an opaque statement's source."""

    sources: list[int] = field(default_factory=list)  # indices in `tokens`

    def add_source(self, text: str) -> None:
        self.sources.append(len(self.tokens))
        self.add_token(text)

    def checked(self, first: int) -> list[str]:
        """The tokens from `first` on, each opaque statement's source read as `pass`."""
        tokens = self.tokens[first:]
        for index in self.sources:
            if index >= first:
                tokens[index - first] = "pass"
        self.sources.clear()
        return tokens
