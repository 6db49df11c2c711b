"""What a migrated file still needs of torch_xla: the imports that stop it on a machine without
torch_xla (every TorchNeuron machine), and the torch_xla names the rewrite binds to a stand-in
there (the code that uses them raises when it runs), read from its new text with the standard
library."""

from __future__ import annotations

import ast
import re

from neuron_migrate.scan.analyzer.availability import STAND_IN

# A line that may import torch_xla: a statement starting with `import` or `from` (at the start
# of a line or after a `;`, continued with backslashes) that names it. A cheap test before the
# parse: markers and comments name torch_xla too.
_IMPORTS_TORCH_XLA = re.compile(
    r"(?:^|;)[ \t]*(?:import|from)\b[^\n]*(?:\\\n[^\n]*)*\btorch_xla\b", re.MULTILINE
)
# Handlers that catch a missing module: an import under them is an availability guard.
_CATCHES_MISSING = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# The rules whose markers sit on the imports themselves: they say what holds an import, they do
# not hold it.
IMPORT_MARKERS = frozenset({"NM100", "NM198"})


def _is_torch_xla(module: str | None) -> bool:
    return module is not None and (module == "torch_xla" or module.startswith("torch_xla."))


def _catches_missing(node: ast.Try) -> bool:
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for kind in kinds:
            if kind is None:
                return True
            name = kind.id if isinstance(kind, ast.Name) else getattr(kind, "attr", None)
            if name in _CATCHES_MISSING:
                return True
    return False


def unguarded_torch_xla_imports(source: str) -> list[int]:
    """The lines of the torch_xla imports in `source` that raise ModuleNotFoundError where
    torch_xla is missing: every one not inside a `try` that catches ImportError. (One in a
    function counts: it fails when the function runs.)"""
    if _IMPORTS_TORCH_XLA.search(source) is None:  # markers and comments name it too
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines: list[int] = []
    # Imports are statements: only statement lists are entered, never expressions.
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Try) and _catches_missing(node):
            todo.extend([*node.handlers, *node.orelse, *node.finalbody])
            continue
        if isinstance(node, ast.Import):
            if any(_is_torch_xla(alias.name) for alias in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and _is_torch_xla(node.module):
                lines.append(node.lineno)
        else:
            for field in _STATEMENT_LISTS:
                todo.extend(getattr(node, field, ()))
    return sorted(lines)


# The fields that hold statements (or the handlers and cases that do).
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def stood_in_names(source: str) -> list[str]:
    """What the torch_xla names bound to a stand-in where torch_xla is missing name (the
    imports of the rewrite's `try: import torch_xla... except ImportError: xm = NotMigrated(...)`:
    `torch_xla.core.xla_model` for `xm`), in the order of the source."""
    if STAND_IN not in source:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try) or len(node.handlers) != 1:
            continue
        stood_in = {
            stmt.targets[0].id
            for stmt in node.handlers[0].body
            if isinstance(stmt, ast.Assign)
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name)
            and stmt.value.func.id == STAND_IN
        }
        for stmt in node.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    local = alias.asname or alias.name.partition(".")[0]
                    if local in stood_in:
                        names.append(alias.name if alias.asname else local)
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                for alias in stmt.names:
                    if (alias.asname or alias.name) in stood_in:
                        names.append(f"{stmt.module}.{alias.name}")
    return names
