"""Deleting statements without losing their comments.

A transform that deletes a statement returns a `DeletedStatement` placeholder. When the block
around it is left, the placeholder goes and its comments (leading lines and a trailing comment)
move to the next statement; a block left empty gets `pass`, keeping the comments.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from neuron_migrate.rewrite.codemod.passes import Transformer


class DeletedStatement(cst.SimpleStatementLine):
    """A statement a transform deleted; only its comments remain to be placed."""


def deleted(line: cst.SimpleStatementLine) -> DeletedStatement:
    lines = list(line.leading_lines)
    comment = line.trailing_whitespace.comment
    if comment is not None:
        lines.append(cst.EmptyLine(indent=True, comment=comment))
    return DeletedStatement(body=[cst.Pass()], leading_lines=lines)


def _lstrip_blank(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    out = list(lines)
    while out and out[0].comment is None:
        out.pop(0)
    return out


def _merge(
    carry: list[cst.EmptyLine], own: Sequence[cst.EmptyLine], first: bool
) -> list[cst.EmptyLine]:
    if own and own[0].comment is None and all(line.comment is None for line in carry):
        carry = []  # the statement brings its own blank line; no comment is carried
    lines = [*carry, *own]
    return _lstrip_blank(lines) if first else lines


def drop_deleted(
    body: Sequence[cst.BaseStatement], *, module: bool = False
) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
    """The body without placeholders, and the comments left over after its last statement.
    A block (unlike a module) cannot be empty: it keeps a `pass` carrying the comments. A
    module's new first statement keeps its blank lines, for the imports that may go above it
    (`strip_leading_blanks` removes them when none do)."""
    out: list[cst.BaseStatement] = []
    carry: list[cst.EmptyLine] = []
    dropped = False
    for stmt in body:
        if isinstance(stmt, DeletedStatement):
            carry.extend(stmt.leading_lines)
            dropped = True
            continue
        if dropped:
            own = getattr(stmt, "leading_lines", ())
            stmt = stmt.with_changes(leading_lines=_merge(carry, own, not out and not module))
            carry, dropped = [], False
        out.append(stmt)
    comments = [line for line in carry if line.comment is not None]
    if not out and not module:
        out.append(cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=comments))
        comments = []
    return out, comments


def has_deleted(body: Sequence[cst.BaseStatement]) -> bool:
    return any(isinstance(stmt, DeletedStatement) for stmt in body)


class StatementCleanup(Transformer):
    """Mixin for transformers that delete statements: resolves the placeholders per block."""

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not has_deleted(updated.body):
            return updated
        body, leftover = drop_deleted(updated.body)
        return updated.with_changes(body=body, footer=[*leftover, *updated.footer])

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not has_deleted(updated.body):
            return updated
        body, leftover = drop_deleted(updated.body, module=True)
        return updated.with_changes(body=body, footer=[*leftover, *updated.footer])


def strip_leading_blanks(module: cst.Module) -> cst.Module:
    """The module with no blank lines above its first statement (comments stay)."""
    if not module.body:
        return module
    first = module.body[0]
    lines = getattr(first, "leading_lines", ())
    if not lines or lines[0].comment is not None:
        return module
    first = first.with_changes(leading_lines=_lstrip_blank(lines))
    return module.with_changes(body=[first, *module.body[1:]])
