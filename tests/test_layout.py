"""The package's layout holds: no two modules import each other (even for type checking, or
inside a function), and
only the command line and the speed machinery itself import `neuron_migrate.incremental` when
they load (the plain path opens it inside the functions that use a cache)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import neuron_migrate

PACKAGE = Path(neuron_migrate.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["neuron_migrate", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _loaded_with(body: list[ast.stmt]) -> Iterator[str]:
    """The names imported when the module loads: at its top level, under `if` (type
    checking included) and `try`, not inside functions."""
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.If):
            yield from _loaded_with(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _loaded_with(node.body + node.orelse + node.finalbody)


def _imported_anywhere(tree: ast.Module) -> Iterator[str]:
    """The names imported anywhere in a module, inside functions (lazily) too."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from _loaded_with([node])


def _graph(lazy: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    imported = _imported_anywhere if lazy else lambda tree: _loaded_with(tree.body)
    return {
        name: {
            target
            for target in imported(ast.parse(path.read_text()))
            if target in modules and target != name
        }
        for name, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other() -> None:
    assert _cycles(_graph()) == []


def test_no_modules_import_each_other_even_lazily() -> None:
    """An import inside a function closes a cycle all the same, once both ends have run."""
    assert _cycles(_graph(lazy=True)) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_cli_and_the_speed_machinery_load_with_incremental() -> None:
    speed = "neuron_migrate.incremental"
    loading = sorted(
        name
        for name, targets in _graph().items()
        if not name.startswith((speed, "neuron_migrate.cli"))
        and any(t == speed or t.startswith(speed + ".") for t in targets)
    )
    assert loading == []
