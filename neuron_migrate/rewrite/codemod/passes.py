"""The base classes of the codemod's passes.

libcst finds a node's `visit_<Node>` and `leave_<Node>` hooks by name at every node, and looks
up `visit_<Node>_<field>` hooks for every field of every node; here the first lookup is made
once per class and kind of node, and the second not at all (no pass has field hooks).

A pruned transformer enters only the nodes that can matter to it: a node printed from the source
has an extent (`positions.py`), and a node whose extent holds none of what the pass acts on (the
sites, the torch_xla mentions) is kept as it is -- libcst neither rebuilds it nor calls its
hooks -- and so is whitespace and punctuation. A node the codemod made has no extent and is
always entered.
"""

from __future__ import annotations

from typing import Any

import libcst as cst


class Kinds:
    """Node classes under some bases, tested with `type(node) in kinds` (cheaper than an ABC
    `isinstance`, and it knows the classes defined after it)."""

    def __init__(self, *bases: type) -> None:
        self.bases = bases
        self.known: dict[type, bool] = {}

    def __contains__(self, kind: type) -> bool:
        found = self.known.get(kind)
        if found is None:
            found = self.known[kind] = issubclass(kind, self.bases)
        return found


def _classes(*bases: type) -> frozenset[type]:
    """libcst's node classes under `bases` (a frozenset: the fastest test on a hot path)."""
    found: set[type] = set()
    todo = list(bases)
    while todo:
        kind = todo.pop()
        found.add(kind)
        todo.extend(kind.__subclasses__())
    return frozenset(found)


# Nodes no pass acts on, nor looks inside.
INERT = _classes(
    cst.BaseParenthesizableWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
    cst.Comma,
    cst.Dot,
    cst.Colon,
    cst.Semicolon,
    cst.AssignEqual,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseUnaryOp,
    cst.BaseAugOp,
)
EXPRESSIONS = _classes(cst.BaseExpression)
STATEMENTS = Kinds(cst.BaseStatement)


_HOOKS: dict[tuple[type, str, type], Any] = {}


def hook_of(owner: type, prefix: str, kind: type) -> Any:
    """`owner.visit_Call` for a Call: the lookup libcst makes with a new string every time."""
    key = (owner, prefix, kind)
    try:
        return _HOOKS[key]
    except KeyError:
        hook = _HOOKS[key] = getattr(owner, prefix + kind.__name__, None)
        return hook


class Visitor(cst.CSTVisitor):
    def on_visit(self, node: cst.CSTNode) -> bool:
        hook = hook_of(type(self), "visit_", type(node))
        return hook is None or hook(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        hook = hook_of(type(self), "leave_", type(original_node))
        if hook is not None:
            hook(self, original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


class Transformer(cst.CSTTransformer):
    def on_visit(self, node: cst.CSTNode) -> bool:
        hook = hook_of(type(self), "visit_", type(node))
        return hook is None or hook(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        hook = hook_of(type(self), "leave_", type(original_node))
        return updated_node if hook is None else hook(self, original_node, updated_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


class PrunedTransformer(Transformer):
    """A transformer that enters a node only when `wanted` says it may matter."""

    _skipped: cst.CSTNode | None = None

    def wanted(self, node: cst.CSTNode) -> bool:
        return True

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not self.wanted(node):
            self._skipped = node  # libcst leaves it next, without entering it
            return False
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        if original is self._skipped:
            self._skipped = None
            return updated
        return super().on_leave(original, updated)
