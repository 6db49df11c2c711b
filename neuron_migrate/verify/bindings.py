"""What a source line hands over: the name a module or optimizer is bound to where it is built,
and the names a statement mentions.

`verify` confirms an nn module or optimizer through a line that called into other user code
(`utils.step(model, criterion)`) only when that line names the object: the main script is a
caller of every op of a run, so its file alone says nothing. Pure Python, stdlib `ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path


class Bindings:
    """The statements of the files asked about, each file parsed once."""

    def __init__(self) -> None:
        self._statements: dict[str, list[ast.stmt]] = {}

    def _innermost(self, path: str, line: int, kinds: tuple[type, ...]) -> ast.stmt | None:
        """The smallest statement of one of `kinds` that spans `line`."""
        statements = self._statements.get(path)
        if statements is None:
            statements = self._statements[path] = _statements(path)
        spanning = [
            s
            for s in statements
            if isinstance(s, kinds) and s.lineno <= line <= (s.end_lineno or s.lineno)
        ]
        return min(spanning, key=lambda s: (s.end_lineno or s.lineno) - s.lineno, default=None)

    def bound_name(self, path: str, line: int) -> str | None:
        """The name the object built on `line` is assigned to (`criterion`, `self.loss_fn` ->
        `loss_fn`); None when it is not assigned to one name."""
        statement = self._innermost(path, line, (ast.Assign, ast.AnnAssign))
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target: ast.expr | None = statement.targets[0]
        elif isinstance(statement, ast.AnnAssign):
            target = statement.target
        else:
            return None
        if isinstance(target, ast.Name):
            return target.id
        if isinstance(target, ast.Attribute):
            return target.attr
        return None

    def names_on(self, path: str, line: int) -> set[str]:
        """The names and attribute names the statement at `line` mentions."""
        statement = self._innermost(path, line, (ast.stmt,))
        if statement is None:
            return set()
        names = set()
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
        return names


def _statements(path: str) -> list[ast.stmt]:
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []  # unreadable now: nothing is confirmed through its calling lines
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
