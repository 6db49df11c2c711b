"""The names a tree reads: what tells whether an import is still used.

Counting only reads the tree, so it walks the nodes' fields itself: a libcst visitor rebuilds
every node it enters, which costs several times more for the same answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import libcst as cst


def dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


class NameCount:
    """Names read outside import statements, and dotted chains (`torch_xla.debug.metrics`).
    A bare name only tested (`xm is None`, `if xm:`, `not xm`) is counted apart, in `tests`:
    such a read uses no API of the module."""

    def __init__(self) -> None:
        self.names: Counter[str] = Counter()
        self.tests: Counter[str] = Counter()
        self.chains: set[str] = set()

    def enter(self, node: cst.CSTNode) -> bool:
        """Whether to count what `node` holds (a subclass prunes)."""
        return True

    def count(self, root: cst.CSTNode) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if not self.enter(node):
                continue
            kind = type(node)
            if kind is cst.Name:
                self.names[node.value] += 1  # type: ignore[attr-defined]
            elif kind is cst.Attribute:
                chain = dotted(node)  # type: ignore[arg-type]
                if chain:
                    self.chains.add(chain)
                # The name after the dot is an attribute, not a use of a local name.
                stack.append(node.value)  # type: ignore[attr-defined]
            elif kind is cst.Global or kind is cst.Nonlocal:
                continue  # declares where a name lives; reads nothing
            elif kind in _BINDERS:
                # `xm = None`, `for xm in ...`, `except E as xm`: a bare name there is bound,
                # not read (an attribute or subscript target still reads its base)
                target = getattr(node, _BINDERS[kind])
                stack.extend(
                    c for c in children(node) if c is not target or type(c) is not cst.Name
                )
            elif kind in _TESTERS:
                tested = _tested_names(node)
                for name in tested:
                    self.tests[name.value] += 1
                stack.extend(c for c in children(node) if all(c is not n for n in tested))
            elif kind is not cst.Import and kind is not cst.ImportFrom:
                stack.extend(children(node))


_TESTERS = frozenset(
    {cst.Comparison, cst.If, cst.While, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation}
)


def _tested_names(node: cst.CSTNode) -> list[cst.Name]:
    """The bare names `node` only tests (as the analyzer's `_is_test` sees them)."""
    if isinstance(node, cst.Comparison):
        none_tests = all(
            isinstance(c.operator, (cst.Is, cst.IsNot))
            and isinstance(c.comparator, cst.Name)
            and c.comparator.value == "None"
            for c in node.comparisons
        )
        return [node.left] if none_tests and isinstance(node.left, cst.Name) else []
    if isinstance(node, (cst.If, cst.While, cst.IfExp)):
        return [node.test] if isinstance(node.test, cst.Name) else []
    if isinstance(node, cst.UnaryOperation):
        is_not = isinstance(node.operator, cst.Not)
        return [node.expression] if is_not and isinstance(node.expression, cst.Name) else []
    if isinstance(node, cst.BooleanOperation):
        return [n for n in (node.left, node.right) if isinstance(n, cst.Name)]
    return []


# Nodes that bind a name, and the field holding it.
_BINDERS: dict[type, str] = {
    cst.AssignTarget: "target",
    cst.AnnAssign: "target",
    cst.For: "target",
    cst.CompFor: "target",
    cst.NamedExpr: "target",
    cst.AsName: "name",
}

_FIELDS: dict[type, tuple[str, ...]] = {}
_IS_NODE: dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    found = _IS_NODE.get(kind)
    if found is None:
        found = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return found


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes in a node's fields (one level of sequences deep)."""
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(node.__dataclass_fields__)
    for name in names:
        value = getattr(node, name)
        if _is_node(type(value)):
            yield value
        elif type(value) is tuple or type(value) is list:
            for item in value:
                if _is_node(type(item)):
                    yield item
