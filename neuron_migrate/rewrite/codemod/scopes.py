"""Which lines of a source a name bound at a given line can be read from: Python's function
scopes, read from the source with `ast`.

An import inside a function binds a local name: only that function (and the functions nested
in it that do not bind the name again) can read it. A module-level import is read everywhere
but in the functions that bind the same name themselves. `_mp_fn` importing torch_xla for its
own use does not keep the `import torch_xla` of another function, or of the module, alive.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class FunctionScope:
    first: int  # lines, 1-based, inclusive; decorators not included
    last: int
    local: frozenset[str]  # the names the function binds, less those it declares global


@dataclass(frozen=True)
class Region:
    """Where a name can be read from: lines `first`..`last` (None: the whole source), less the
    `excluded` line ranges (functions that bind the name again)."""

    first: int | None
    last: int | None
    excluded: tuple[tuple[int, int], ...]

    @property
    def whole_module(self) -> bool:
        return self.first is None and not self.excluded

    def misses(self, first: int, last: int) -> bool:
        """Whether no line of `first`..`last` is in the region."""
        if self.first is not None and (last < self.first or first > (self.last or first)):
            return True
        return any(a <= first and last <= b for a, b in self.excluded)

    def holds(self, line: int) -> bool:
        if self.first is not None and not (self.first <= line <= (self.last or line)):
            return False
        return not any(a <= line <= b for a, b in self.excluded)


WHOLE_MODULE = Region(None, None, ())


class Scopes:
    """The function scopes of a source (none when `ast` cannot parse it: every question is then
    answered for the whole module, which keeps imports rather than drops them)."""

    def __init__(self, source: str) -> None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            self.functions: list[FunctionScope] = []
            return
        self.functions = [
            FunctionScope(node.lineno, node.end_lineno or node.lineno, _bound_in(node))
            for node in ast.walk(tree)
            if isinstance(node, _FUNCTIONS)
        ]

    def region(self, name: str, line: int) -> Region:
        """Where `name`, bound at `line`, can be read."""
        binders = [f for f in self.functions if name in f.local]
        if not binders:
            return WHOLE_MODULE
        around = [f for f in binders if f.first <= line <= f.last]
        if not around:
            return Region(None, None, tuple((f.first, f.last) for f in binders))
        own = max(around, key=lambda f: f.first)  # the innermost
        inner = tuple(
            (f.first, f.last)
            for f in binders
            if f is not own and own.first <= f.first and f.last <= own.last
        )
        return Region(own.first, own.last, inner)


def _bound_in(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """The names `function` binds in its own scope (not in the functions nested in it)."""
    arguments = function.args
    bound = {
        a.arg
        for a in [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            *filter(None, [arguments.vararg, arguments.kwarg]),
        ]
    }
    declared: set[str] = set()
    body = [function.body] if isinstance(function, ast.Lambda) else function.body
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            # its decorators and defaults are read here; its body is its own scope
            stack.extend(getattr(node, "decorator_list", []))
            if not isinstance(node, ast.ClassDef):
                stack.extend(node.args.defaults + [d for d in node.args.kw_defaults if d])
            else:
                stack.extend(node.bases)
            continue
        if isinstance(node, ast.Lambda):
            stack.extend(node.args.defaults)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(bound - declared)
