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

from dataclasses import dataclass

import libcst as cst

from neuron_migrate.rewrite.codemod.recorded_printing import emit
from neuron_migrate.rewrite.codemod.recording import Extent, Recording, Span


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
