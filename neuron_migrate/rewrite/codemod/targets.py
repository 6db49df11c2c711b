"""What a transform is given, and the registries that map a rule's transform name to code.

Three shapes of transform exist, by where they act:
- expression: replaces a call (or a bare reference) with an expression;
- statement: replaces the statement a call stands in (`xm.mark_step()`, `y = xm.all_reduce(...)`);
- literal: replaces a string literal an idiom points at ('xla', 'openxla', 'XLA_USE_BF16').
A transform returns None when the site's shape is one it cannot rewrite safely; the site then
gets a TODO marker and stays as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.ruleset import Rule
from neuron_migrate.scan.analyzer import fixability
from neuron_migrate.scan.analyzer.sites import Site

NewStatement = cst.BaseStatement | cst.BaseSmallStatement
CallEdit = Callable[[cst.Call], cst.BaseExpression]


@dataclass
class CallTarget:
    ctx: FileContext
    rule: Rule
    site: Site
    node: cst.BaseExpression  # the updated call (or reference)
    original: cst.BaseExpression
    parents: Sequence[cst.CSTNode]  # original ancestors, nearest last
    # Edits to apply to an enclosing call when it is left, keyed by the original node.
    deferred: list[tuple[cst.CSTNode, CallEdit]] = field(default_factory=list)
    # Set by a transform that leaves its site to an enclosing call (original node): the site is
    # rewritten or left for a person with that call.
    follows: cst.Call | None = None

    @property
    def call(self) -> cst.Call:
        assert isinstance(self.node, cst.Call)
        return self.node

    @property
    def original_call(self) -> cst.Call:
        assert isinstance(self.original, cst.Call)
        return self.original


@dataclass
class StatementTarget(CallTarget):
    small: cst.BaseSmallStatement | None = None  # the updated Expr / Assign / Return
    alone: bool = True  # the only statement on its line: compound output is allowed
    notes: list[str] = field(default_factory=list)  # NOTE comments for the new statements

    @property
    def assign_target(self) -> cst.BaseAssignTargetExpression | None:
        """The single plain target of `y = call(...)`, else None."""
        if isinstance(self.small, cst.Assign) and len(self.small.targets) == 1:
            target = self.small.targets[0].target
            if isinstance(target, (cst.Name, cst.Attribute)):
                return target
        return None

    @property
    def is_expression_statement(self) -> bool:
        return isinstance(self.small, cst.Expr)

    @property
    def is_return(self) -> bool:
        return isinstance(self.small, cst.Return)


@dataclass
class LiteralTarget:
    ctx: FileContext
    rule: Rule
    site: Site
    literal: cst.SimpleString
    parents: Sequence[cst.CSTNode]
    deferred: list[tuple[cst.CSTNode, CallEdit]] = field(default_factory=list)
    # Set by a transform that removes the whole statement (an environment variable's setter).
    delete_statement: bool = False
    # With delete_statement: an assignment `os.environ[K] = v` becomes
    # `os.environ.setdefault(K, v)` instead, and a setdefault stays (a launcher's value wins).
    keep_as_default: bool = False

    def enclosing_call(self) -> cst.Call | None:
        """The call this literal is an argument of (original node)."""
        if len(self.parents) >= 2 and isinstance(self.parents[-1], cst.Arg):
            call = self.parents[-2]
            if isinstance(call, cst.Call):
                return call
        return None


ExpressionTransform = Callable[[CallTarget], cst.BaseExpression | None]
StatementTransform = Callable[[StatementTarget], list[NewStatement] | None]
LiteralTransform = Callable[[LiteralTarget], cst.SimpleString | None]

EXPRESSION: dict[str, ExpressionTransform] = {}
STATEMENT: dict[str, StatementTransform] = {}
LITERAL: dict[str, LiteralTransform] = {}
# Expression transforms that act on a bare reference (`xm.REDUCE_SUM`); the others take calls.
REFERENCE_TRANSFORMS = fixability.REFERENCE_TRANSFORMS
# Handled by the driver itself rather than by a function.
BUILTIN = frozenset({"unwrap-step-context", "remove-unused-import"})


def expression(name: str) -> Callable[[ExpressionTransform], ExpressionTransform]:
    def register(fn: ExpressionTransform) -> ExpressionTransform:
        EXPRESSION[name] = fn
        return fn

    return register


def statement(name: str) -> Callable[[StatementTransform], StatementTransform]:
    def register(fn: StatementTransform) -> StatementTransform:
        STATEMENT[name] = fn
        return fn

    return register


def literal(name: str) -> Callable[[LiteralTransform], LiteralTransform]:
    def register(fn: LiteralTransform) -> LiteralTransform:
        LITERAL[name] = fn
        return fn

    return register


def known_transforms() -> set[str]:
    return set(EXPRESSION) | set(STATEMENT) | set(LITERAL) | set(BUILTIN)
