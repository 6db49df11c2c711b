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
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState

from neuron_migrate.rewrite.codemod.recorded_printing import emit
from neuron_migrate.rewrite.codemod.recording import Extent, Recording
from neuron_migrate.rewrite.codemod.results import RewriteFailed
from neuron_migrate.rewrite.codemod.spansets import SourceText


class Printer:
    """Prints a module's top-level statements, each once (a pass may read what a statement
    it made says before the output is put together)."""

    def __init__(self, module: cst.Module) -> None:
        self.default_indent = module.default_indent
        self.default_newline = module.default_newline
        self._printed: dict[cst.CSTNode, tuple[list[str], list[str]]] = {}

    def tokens(self, stmt: cst.CSTNode) -> tuple[list[str], list[str]]:
        """What `stmt` prints, and the same with each opaque statement's source read as
        `pass` (what must parse)."""
        printed = self._printed.get(stmt)
        if printed is None:
            state = _Printing(self.default_indent, self.default_newline)
            emit(state, stmt)
            printed = self._printed[stmt] = (state.tokens, state.checked())
        return printed

    def text(self, stmt: cst.CSTNode) -> str:
        return "".join(self.tokens(stmt)[0])


def printed_checked(
    module: cst.Module,
    source: SourceText,
    extents: Mapping[cst.CSTNode, Extent],
    top_level: Collection[cst.CSTNode],
    printer: Printer,
) -> str:
    """`module`'s code, after checking that what changed parses. `top_level`: the module's
    statements as parsed. Raises RewriteFailed."""
    state = CodegenState(printer.default_indent, printer.default_newline)
    for line in module.header:
        line._codegen(state)
    made: list[str] = []  # what must parse
    for stmt in module.body:
        extent = extents.get(stmt) if stmt in top_level else None
        if extent is None:
            tokens, checked = printer.tokens(stmt)
            state.tokens.extend(tokens)
            made.extend(checked)
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


class _Unrecorded:
    """`with state.record_syntactic_position(node)` for a printer that records no position
    (libcst's is a generator-based context manager: costlier, for nothing)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_UNRECORDED = _Unrecorded()


@dataclass
class _Printing(Recording):
    """A printer that knows which of its tokens are an opaque statement's source. It is a
    `Recording`, whose positions `recorded_printing` reads while it prints; nothing reads them
    after, so the nodes libcst prints note no syntactic span."""

    sources: list[int] = field(default_factory=list)  # indices in `tokens`

    def record_syntactic_position(self, *args: Any, **kwargs: Any) -> Any:
        return _UNRECORDED

    def add_source(self, text: str) -> None:
        self.sources.append(len(self.tokens))
        self.add_token(text)

    def checked(self) -> list[str]:
        """The tokens, each opaque statement's source read as `pass`."""
        tokens = list(self.tokens)
        for index in self.sources:
            tokens[index] = "pass"
        return tokens
