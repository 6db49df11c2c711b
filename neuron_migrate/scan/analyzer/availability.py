"""Which names and functions of a module ask whether torch_xla is there: the availability
flags a `try` around a torch_xla import sets, the functions that answer the question (a library's
`is_torch_xla_available`, a function of the module's own that tries the import), and the
torch_xla imports such a test guards so that the rewrite settles them once it resolves the test.

The scan asks it for what its `fixable` promises; the rewrite's guard pass asks it for what to
resolve.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# The class the rewrite binds a kept torch_xla name to where torch_xla is missing
# (`except ImportError: xm = NotMigrated(...)`, `rewrite.codemod.stand_ins`): a placeholder.
STAND_IN = "NotMigrated"


def is_torch_xla_import(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "torch_xla" for a in node.names)
    return (
        isinstance(node, ast.ImportFrom)
        and not node.level
        and (node.module or "").split(".")[0] == "torch_xla"
    )


def _flags_set(body: Sequence[ast.stmt], value: bool) -> set[str]:
    return {
        target.id
        for stmt in body
        if isinstance(stmt, ast.Assign)
        and isinstance(stmt.value, ast.Constant)
        and stmt.value.value is value
        for target in stmt.targets
        if isinstance(target, ast.Name)
    }


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in IMPORT_ERRORS for k in kinds)


def availability_flags(tree: ast.AST, predicates: frozenset[str] = frozenset()) -> frozenset[str]:
    """The names a `try` around a torch_xla import sets True after it and False in its
    `except ImportError:` (`HAS_XLA`), or an `if` of one of `predicates` around one sets True
    and False in its `else:` (`if is_torch_xla_available(): import ...; XLA_AVAILABLE = True`),
    and that nothing else assigns."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.If)
            and _plain_test(node.test, frozenset(), predicates)
            and not isinstance(node.test, ast.UnaryOp)
            and any(map(is_torch_xla_import, node.body))
        ):
            found |= _flags_set(node.body, True) & _flags_set(node.orelse, False)
        if not isinstance(node, ast.Try) or not any(map(is_torch_xla_import, node.body)):
            continue
        true = _flags_set([*node.body, *node.orelse], True)
        for handler in node.handlers:
            if _catches_import_error(handler):
                found |= true & _flags_set(handler.body, False)
    if not found:
        return frozenset()
    assigned = [
        target.id
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id in found
    ]
    # each flag: once True, once False (per try); anything more and the test asks something else
    return frozenset(name for name in found if assigned.count(name) == 2)


def _returns(stmt: ast.stmt, value: bool) -> bool:
    return (
        isinstance(stmt, ast.Return)
        and isinstance(stmt.value, ast.Constant)
        and stmt.value.value is value
    )


def _tries_the_import(fn: ast.FunctionDef) -> bool:
    """`def f(): try: import torch_xla... except ImportError: return False; return True` (the
    True inside the `try` or its `else:` too): a function that asks whether torch_xla is there."""
    if fn.decorator_list or fn.args.args or fn.args.posonlyargs or fn.args.kwonlyargs:
        return False
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[0], ast.Try) or body[0].finalbody:
        return False
    node = body[0]
    rest = body[1:]
    if not any(map(is_torch_xla_import, node.body)) or not node.handlers:
        return False
    if not all(_catches_import_error(h) and _returns(h.body[-1], False) for h in node.handlers):
        return False
    if not all(is_torch_xla_import(s) or isinstance(s, ast.Pass) for s in node.body[:-1]):
        return False
    true = [node.body[-1], *node.orelse[-1:], *rest]
    return any(_returns(stmt, True) for stmt in true) and len(rest) <= 1


def availability_predicates(tree: ast.Module, library: Iterable[str]) -> frozenset[str]:
    """The names of the functions whose call asks whether torch_xla is there: one of
    `library` imported (`from transformers.utils import is_torch_xla_available`), or a function
    of the module's own that tries the import. A name bound more than once is left out."""
    wanted = frozenset(library)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.update(
                a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in wanted
            )
    found.update(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and _tries_the_import(node)
    )
    if not found:
        return frozenset()
    bound: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.append(node.id)
        elif isinstance(node, ast.arg):
            bound.append(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.extend((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(name for name in found if bound.count(name) == 1)


def _plain_test(test: ast.expr, names: frozenset[str], predicates: frozenset[str]) -> bool:
    """`xm`, `HAS_XLA`, `xm is (not) None`, `is_torch_xla_available()` and their negations: the
    tests the rewrite's guard pass resolves."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _plain_test(test.operand, names, predicates)
    if isinstance(test, ast.Name):
        return test.id in names
    if isinstance(test, ast.Call):
        return (
            isinstance(test.func, ast.Name)
            and test.func.id in predicates
            and not test.args
            and all(k.arg for k in test.keywords)
        )
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id in names
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def settled_guarded_imports(tree: ast.Module, library: Iterable[str]) -> frozenset[int]:
    """The lines of the torch_xla imports whose guard the rewrite resolves once the code it
    guards is migrated: an import right in a branch of a plain availability test (outside any
    `try`), or in a function of the module's own that tries the import and is only ever called
    as such a test. (A `try` around an import nothing read in the source never collapses.)"""
    predicates = availability_predicates(tree, library)
    names = availability_flags(tree, predicates) | {
        (a.asname or a.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and is_torch_xla_import(node)
        for a in node.names
    }
    tested: set[int] = set()  # the ids of the predicate calls that are an `if`'s plain test
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _plain_test(node.test, names, predicates):
            test = node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test
            tested.add(id(test))
    called_only_as_tests = {
        name
        for name in predicates
        if all(
            isinstance(n, ast.Call) and id(n) in tested
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        )
        and sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree))
        == sum(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
            for n in ast.walk(tree)
        )
    }
    found: set[int] = set()
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in called_only_as_tests:
            found.update(
                n.lineno for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))
            )
    _guarded_import_lines(tree.body, False, tested, found)
    return frozenset(found)


def _guarded_import_lines(
    body: Sequence[ast.stmt], in_try: bool, tested: set[int], found: set[int]
) -> None:
    """Add to `found` the torch_xla imports in the branches of the `if`s whose test is in
    `tested`, outside any `try`. (A module function: a nested one that calls itself holds a
    reference cycle that outlives each file's analysis.)"""
    for stmt in body:
        if isinstance(stmt, ast.If) and not in_try and id(_test_of(stmt)) in tested:
            found.update(s.lineno for s in [*stmt.body, *stmt.orelse] if is_torch_xla_import(s))
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner:
                nested = in_try or isinstance(stmt, ast.Try)
                if field == "handlers":
                    for handler in inner:
                        _guarded_import_lines(handler.body, True, tested, found)
                else:
                    _guarded_import_lines(inner, nested, tested, found)


def _test_of(node: ast.If) -> ast.expr:
    return node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test
