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
        conditions: set[int] = set()  # `and`/`or` operations only truth-tested, by id
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
                tested: list[cst.Name] = []
                for operand in _truth_tested(node, id(node) in conditions):
                    if type(operand) is cst.Name:
                        tested.append(operand)
                        self.tests[operand.value] += 1
                    elif type(operand) is cst.BooleanOperation:
                        conditions.add(id(operand))
                stack.extend(c for c in children(node) if all(c is not n for n in tested))
            elif kind is not cst.Import and kind is not cst.ImportFrom:
                stack.extend(children(node))


_TESTERS = frozenset(
    {cst.Comparison, cst.If, cst.While, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation}
)


def _truth_tested(node: cst.CSTNode, condition: bool) -> list[cst.BaseExpression]:
    """The operands of `node` whose value only its truth is read of (as the analyzer's
    `_is_test` sees them): a condition, `not x`, `x is None`, an operand of `and` but the last
    (its value comes out only when false), either operand of an `and`/`or` that is itself only
    truth-tested (`condition`). `m = xm or fallback` hands `xm` on as a value."""
    if isinstance(node, cst.Comparison):
        none_tests = all(
            isinstance(c.operator, (cst.Is, cst.IsNot))
            and isinstance(c.comparator, cst.Name)
            and c.comparator.value == "None"
            for c in node.comparisons
        )
        return [node.left] if none_tests and isinstance(node.left, cst.Name) else []
    if isinstance(node, (cst.If, cst.While, cst.IfExp)):
        return [node.test]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression] if isinstance(node.operator, cst.Not) else []
    if isinstance(node, cst.BooleanOperation):
        if condition:
            return [node.left, node.right]
        return [node.left] if isinstance(node.operator, cst.And) else []
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
