"""An import guard nothing reads any more, collapsed to the side the device runs.

`try: import torch_xla... except ImportError: ...` decides which side of the program runs. Once
the guard pass has resolved every test of the names it binds and the import pass finds none of
its torch_xla names read, the `try` no longer decides anything: on the device the migrated code
is the torch_xla side. So the `try` becomes the statements of its torch_xla side (the `try`
block, then its `else:`), without the imports, and without a flag (`HAS_XLA = True`) that
nothing reads; a flag still read keeps the value that side gives it. The handlers go. A
comment above a statement that goes moves to the next one.

Only a `try` whose torch_xla side can raise nothing but the torch_xla import's error collapses:
its blocks hold torch_xla imports, constant assignments, lambdas bound to a name (a
version-compat `try` catching `(ImportError, AttributeError)` around `_world = xr.world_size`,
which the rewrite made a lambda on both sides) and `pass`, and it has no `finally:`. A lambda
stays, read or not: it is the program's own function.
A handler that binds a name the torch_xla side does not (`except ImportError: CPU_ONLY = True`)
keeps the `try` when code still reads that name.

A version-compat `try` around a call (`try: torch_xla.launch(fn) except AttributeError:
xmp.spawn(fn)`) collapses the same way once the rewrite has made both sides the same native
code (`same_arms`): on the device the `try` side is what runs.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

import libcst as cst

from neuron_migrate.rewrite.codemod.names import dotted
from neuron_migrate.rewrite.codemod.skeleton import OpaqueStatement
from neuron_migrate.rewrite.codemod.statements import DeletedStatement, deleted
from neuron_migrate.scan.analyzer.availability import is_torch_xla_import

_CONSTANTS = frozenset({"True", "False", "None"})


def catches_import_error(handler: cst.ExceptHandler, errors: frozenset[str]) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any(
        dotted(kind.value if isinstance(kind, cst.Element) else kind) in errors  # type: ignore[arg-type]
        for kind in kinds
    )


def _block(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return list(suite.body)
    assert isinstance(suite, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=suite.body)]


def real_statements(stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
    """An opaque run of statements (not a line of imports) as the statements it stands for."""
    if not isinstance(stmt, OpaqueStatement) or stmt.cut.import_line:
        return [stmt]
    parsed: Sequence[cst.BaseStatement] = stmt.parse().body
    if stmt.cut.indent:
        inner = parsed[0]
        assert isinstance(inner, cst.If) and isinstance(inner.body, cst.IndentedBlock)
        parsed = inner.body.body
    out = list(parsed)
    own = list(getattr(out[0], "leading_lines", ()))
    out[0] = out[0].with_changes(leading_lines=[*stmt.leading_lines, *own])
    return out


def _assignment(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """The name and value of a line that is one `name = value`; None for any other line."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
    ):
        return small.targets[0].target.value, small.value
    return None


def flag_set(stmt: cst.BaseStatement) -> str | None:
    """`HAS_XLA` for `HAS_XLA = True` (a constant: True, False, None); None otherwise."""
    found = _assignment(stmt)
    if found is not None and isinstance(found[1], cst.Name) and found[1].value in _CONSTANTS:
        return found[0]
    return None


def function_set(stmt: cst.BaseStatement) -> str | None:
    """`_world` for `_world = lambda: ...`: binding a lambda raises nothing (its body runs only
    when called), so such a line (a rank or world-size function the rewrite made of
    `xr.world_size`) cannot be what the handler catches; None otherwise."""
    found = _assignment(stmt)
    return found[0] if found is not None and isinstance(found[1], cst.Lambda) else None


def _is_pass(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Pass)
    )


def _bound(statements: Sequence[cst.BaseStatement]) -> set[str] | None:
    """The names `statements` bind (None when their code cannot be read alone)."""
    try:
        tree = ast.parse(cst.Module(body=list(statements)).code)  # type: ignore[arg-type]
    except SyntaxError:
        return None
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
    return found


def _side(node: cst.Try) -> list[cst.BaseStatement]:
    """The statements of the torch_xla side: the `try` block, then its `else:`."""
    side = [s for stmt in _block(node.body) for s in real_statements(stmt)]
    if node.orelse is not None:
        side += [s for stmt in _block(node.orelse.body) for s in real_statements(stmt)]
    return side


def collapsible(
    node: cst.Try,
    errors: frozenset[str],
    import_line: Callable[[cst.BaseStatement], bool],
    removed: Callable[[cst.BaseStatement], bool],
    read: Callable[[str], bool],
) -> bool:
    """Whether `node` (a `try` as the guard pass left it) no longer decides anything.
    `import_line`: whether a statement is a line of imports; `removed`: whether every name
    such a line binds is a torch_xla name the import pass removes; `read`: whether code reads
    a name."""
    if node.finalbody is not None or not node.handlers:
        return False
    if not all(catches_import_error(h, errors) for h in node.handlers):
        return False
    side = _side(node)
    imports = [stmt for stmt in side if import_line(stmt)]
    if not imports or not all(map(removed, imports)):
        return False
    if not all(s in imports or flag_set(s) or function_set(s) or _is_pass(s) for s in side):
        return False
    kept = {flag_set(s) or function_set(s) for s in side} - {None}
    handlers = _bound(
        [s for h in node.handlers for b in _block(h.body) for s in real_statements(b)]
    )
    return handlers is not None and not any(read(name) for name in handlers - kept)


def collapsed(node: cst.Try, read: Callable[[str], bool]) -> list[cst.BaseStatement]:
    """The statements a collapsible `try` (as the import pass rebuilt it, its imports deleted)
    becomes: its torch_xla side, without a `pass` or a flag nothing reads."""
    out: list[cst.BaseStatement] = []
    for stmt in _side(node):
        name = flag_set(stmt)
        if (
            isinstance(stmt, DeletedStatement)
            or (name is not None and read(name))
            or function_set(stmt) is not None
        ):
            out.append(stmt)
        else:
            assert isinstance(stmt, cst.SimpleStatementLine)
            comments = [line for line in stmt.leading_lines if line.comment is not None]
            out.append(deleted(stmt.with_changes(leading_lines=comments)))
    first = out[0]
    out[0] = first.with_changes(
        leading_lines=[*node.leading_lines, *getattr(first, "leading_lines", ())]
    )
    return out


# What a version-compat `try` catches: the newer API missing from an older torch_xla.
VERSION_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})


def _code(statements: Sequence[cst.BaseStatement]) -> str | None:
    """What `statements` do, comments, layout and their torch_xla imports aside (the import
    pass settles those as any others); None when they do nothing or cannot be read."""
    kept = [s for s in statements if not isinstance(s, DeletedStatement)]
    try:
        tree = ast.parse(cst.Module(body=kept).code)  # type: ignore[arg-type]
    except SyntaxError:
        return None
    # a side left with nothing to do (`pass`, a deleted step) decides nothing either way
    tree.body = [s for s in tree.body if not is_torch_xla_import(s) and not isinstance(s, ast.Pass)]
    # unparsed, not dumped: `ast.dump` leaves a cycle of closures per call
    return ast.unparse(tree) if tree.body else None


def same_arms(node: cst.Try) -> bool:
    """Whether a version-compat `try` (`try: torch_xla.launch(...) except AttributeError:
    xmp.spawn(...)`) now does the same on both sides: the rewrite made the newer and the older
    torch_xla API the same native code. Such a `try` no longer decides anything; its `try` side
    is what a current torch_xla ran."""
    if node.finalbody is not None or node.orelse is not None or len(node.handlers) != 1:
        return False
    handler = node.handlers[0]
    if handler.type is None or handler.name is not None:
        return False
    kinds = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    # only the errors of a missing API: `except RuntimeError: train()` again is a retry
    if not all(
        dotted(kind.value if isinstance(kind, cst.Element) else kind) in VERSION_ERRORS  # type: ignore[arg-type]
        for kind in kinds
    ):
        return False
    side = [s for stmt in _block(node.body) for s in real_statements(stmt)]
    other = [s for stmt in _block(handler.body) for s in real_statements(stmt)]
    code = _code(side)
    return code is not None and code == _code(other)


def try_side(node: cst.Try) -> list[cst.BaseStatement]:
    """The statements of a `try` whose arms do the same: its `try` side, in its place."""
    side = [s for stmt in _block(node.body) for s in real_statements(stmt)]
    first = side[0]
    side[0] = first.with_changes(
        leading_lines=[*node.leading_lines, *getattr(first, "leading_lines", ())]
    )
    return side
