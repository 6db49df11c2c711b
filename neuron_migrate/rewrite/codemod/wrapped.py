"""Whether a file wraps its model in DDP / FSDP2 on some paths only.

xm.optimizer_step becomes a plain `optimizer.step()` where DDP or FSDP2 visibly reduces the
gradients. A wrap under a flag (`if args.ddp: model = DDP(model)`) reduces them on that path
only: the other trains on each rank's own gradients unless the step still averages them, so
there the step keeps its all-reduce (an average of gradients already averaged is the same).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from neuron_migrate.rewrite.codemod.context import MODEL_WRAPPERS, Span

# Compound statements whose blocks may not run; a function or class starts afresh (its body runs
# whole when it is called). `with` and a `try` body run on the path that reaches them.
_MAY_SKIP = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Match)
_TRY = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))  # try/except* from 3.11
_CONDITIONAL_EXPRESSIONS = (
    ast.IfExp,
    ast.BoolOp,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def wraps_on_some_paths_only(tree: ast.Module, call_qualnames: Mapping[Span, str]) -> bool:
    """Whether a DDP / FSDP2 wrap of the file runs only on some paths of its function."""
    lines = {span[0] for span, qualname in call_qualnames.items() if qualname in MODEL_WRAPPERS}
    return any(_conditional(tree.body, line, False) for line in lines)


def _conditional(statements: Iterable[ast.stmt], line: int, skippable: bool) -> bool:
    for statement in statements:
        first = min((d.lineno for d in getattr(statement, "decorator_list", ())), default=None)
        start = statement.lineno if first is None else min(first, statement.lineno)
        if not start <= line <= (statement.end_lineno or statement.lineno):
            continue
        blocks = list(_blocks(statement, skippable))
        if not blocks:  # the simple statement holding the wrap
            return skippable or _in_conditional_expression(statement)
        return any(_conditional(block, line, may_skip) for block, may_skip in blocks)
    return False  # not in these statements


def _blocks(statement: ast.stmt, skippable: bool) -> Iterable[tuple[list[ast.stmt], bool]]:
    """The statement's blocks, each with whether a wrap in it may not run."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield statement.body, False
    elif isinstance(statement, ast.If) and _is_main_guard(statement.test):
        yield statement.body, skippable
        yield statement.orelse, True
    elif isinstance(statement, _MAY_SKIP):
        for name in ("body", "orelse"):
            yield getattr(statement, name), True
        for case in getattr(statement, "cases", ()):
            yield case.body, True
    elif isinstance(statement, _TRY):
        yield statement.body, skippable
        yield statement.finalbody, skippable
        yield statement.orelse, True
        for handler in statement.handlers:
            yield handler.body, True
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        yield statement.body, skippable


def _is_main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"`: the script's own entry, which runs when it is launched."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _in_conditional_expression(statement: ast.stmt) -> bool:
    """Whether the statement holds an expression that may skip part of itself (the wrap in
    `model = DDP(model) if ddp else model`); any such expression counts."""
    return any(isinstance(node, _CONDITIONAL_EXPRESSIONS) for node in ast.walk(statement))
