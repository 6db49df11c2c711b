"""A libcst tree of a module in which what the codemod cannot act on is opaque.

`parse_printed` parses the module's outline (`outline.py`) and puts back what its placeholders
stand for: an `OpaqueStatement`, without children, prints a cut statement's source; an
`OpaqueCompound` prints a compound statement's headers as their source and holds its blocks as
real nodes; an `OpaqueExpression` prints the source of a piece of a large statement
(`trim.py`). The tree prints the module exactly (checked when the spans are taken: anything else
and the module is parsed whole), while libcst parses, and the codemod's passes see, only what
they may change.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState, visit_sequence

from neuron_migrate.rewrite.codemod.outline import Cut, Headers, OutlineError, outline
from neuron_migrate.rewrite.codemod.positions import Printed, printed
from neuron_migrate.rewrite.codemod.recorded_printing import HANDLERS, emit
from neuron_migrate.rewrite.codemod.recording import Recording, note_extent
from neuron_migrate.rewrite.codemod.trim import Piece


@dataclass(frozen=True)
class OpaqueStatement(cst.BaseStatement):
    """A statement the codemod leaves alone, kept as its source. Its leading lines are real
    nodes: a statement deleted before it hands its comments on to them."""

    cut: Cut
    leading_lines: Sequence[cst.EmptyLine] = ()

    def _visit_and_replace_children(self, visitor: Any) -> OpaqueStatement:
        return self  # nothing inside is visited

    def _codegen_impl(self, state: CodegenState) -> None:
        self.print_with(state, _by_libcst(state))

    def print_with(self, state: CodegenState, emit: Callable[[cst.CSTNode], None]) -> None:
        """Print onto `state`, each child node by `emit`."""
        for line in self.leading_lines:
            emit(line)
        state.add_indent_tokens()
        text = self.cut.text
        # The newline is a token of its own, as every statement ends: a module without a
        # trailing newline drops its last token. A printer may want to know the source apart.
        add_source = getattr(state, "add_source", state.add_token)
        add_source(text[:-1] if text.endswith("\n") else text)
        state.add_token(state.default_newline)

    def parse(self) -> cst.Module:
        """The statement parsed on its own (inside an `if` block when it was indented)."""
        text = self.cut.text
        return cst.parse_module(f"if 1:\n{self.cut.indent}{text}" if self.cut.indent else text)

    def parse_line(self) -> cst.SimpleStatementLine:
        """A line of simple statements as the node it stands for: parsed at the indentation it
        had (which its continuation lines' whitespace is relative to), its leading lines kept."""
        line: cst.BaseStatement = self.parse().body[0]
        if self.cut.indent:
            assert isinstance(line, cst.If) and isinstance(line.body, cst.IndentedBlock)
            line = line.body.body[0]
        assert isinstance(line, cst.SimpleStatementLine)
        return line.with_changes(leading_lines=self.leading_lines)


@dataclass(frozen=True)
class OpaqueCompound(cst.BaseStatement):
    """A compound statement whose headers hold no site: each header is kept as its source, each
    block is a real node (`bodies[k]` follows `headers.texts[k]`)."""

    headers: Headers
    bodies: Sequence[cst.IndentedBlock]
    clause_lines: Sequence[Sequence[cst.EmptyLine]]  # the leading lines of `else:`, `elif ...:`
    leading_lines: Sequence[cst.EmptyLine] = ()

    def _visit_and_replace_children(self, visitor: Any) -> OpaqueCompound:
        bodies = [body.visit(visitor) for body in self.bodies]
        assert all(isinstance(body, cst.IndentedBlock) for body in bodies)
        return OpaqueCompound(self.headers, bodies, self.clause_lines, self.leading_lines)  # type: ignore[arg-type]

    def _codegen_impl(self, state: CodegenState) -> None:
        self.print_with(state, _by_libcst(state))

    def print_with(self, state: CodegenState, emit: Callable[[cst.CSTNode], None]) -> None:
        """Print onto `state`, each child node by `emit`."""
        for line in self.leading_lines:
            emit(line)
        for k, (header, body) in enumerate(zip(self.headers.texts, self.bodies, strict=True)):
            for line in self.clause_lines[k - 1] if k else ():
                emit(line)
            state.add_indent_tokens()
            state.add_token(header)
            emit(body)

    def parse_headers(self) -> cst.Module:
        """The headers parsed on their own, each over a `pass` (inside an `if` block when the
        statement was indented)."""
        indent = self.headers.indent
        text = "".join(f"{indent}{header}\n{indent} pass\n" for header in self.headers.texts)
        return cst.parse_module(f"if 1:\n{text}" if indent else text)


@dataclass(frozen=True)
class OpaqueExpression(cst.BaseExpression):
    """A part of a large statement that holds no site, kept as its source (in the parentheses
    around it, which are real nodes)."""

    piece: Piece
    lpar: Sequence[cst.LeftParen] = ()
    rpar: Sequence[cst.RightParen] = ()

    def _visit_and_replace_children(self, visitor: Any) -> OpaqueExpression:
        return OpaqueExpression(
            self.piece,
            visit_sequence(self, "lpar", self.lpar, visitor),
            visit_sequence(self, "rpar", self.rpar, visitor),
        )

    def _codegen_impl(self, state: CodegenState) -> None:
        with self._parenthesize(state):
            piece = self.piece
            if not piece.reindented:
                state.add_token(piece.text)
                return
            lines = piece.lines()
            reindented = frozenset(piece.reindented)
            for k, line in enumerate(lines):
                if k in reindented:  # the block's indentation, wherever the statement is now
                    state.add_indent_tokens()
                    line = line[len(piece.indent) :]
                state.add_token(line if k == len(lines) - 1 else line + "\n")

    def parse(self) -> cst.BaseExpression:
        """The piece parsed on its own (in parentheses: it may span lines)."""
        return cst.parse_expression(f"({self.piece.text})")


class _PutPiecesBack(cst.CSTTransformer):
    def __init__(self, cuts: dict[str, Cut | Headers | Piece]) -> None:
        super().__init__()
        self.cuts = cuts

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        piece = self.cuts.get(updated.value)
        if not isinstance(piece, Piece):
            return updated
        return OpaqueExpression(piece, updated.lpar, updated.rpar)


def _by_libcst(state: CodegenState) -> Callable[[cst.CSTNode], None]:
    return lambda node: node._codegen(state)


def _recorded(state: Recording, node: OpaqueStatement | OpaqueCompound) -> None:
    """How `recorded_printing` prints an opaque node: its children by their handlers."""
    line, column = state.line, state.column
    node.print_with(state, lambda child: emit(state, child))
    note_extent(state, node, line, column)


HANDLERS[OpaqueStatement] = _recorded
HANDLERS[OpaqueCompound] = _recorded


# Where the statements of each compound node are, in source order.
_BLOCK_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {
    cst.If: ("body", "orelse"),
    cst.Else: ("body",),
    cst.For: ("body", "orelse"),
    cst.While: ("body", "orelse"),
    cst.With: ("body",),
    cst.FunctionDef: ("body",),
    cst.ClassDef: ("body",),
    cst.Try: ("body", "handlers", "orelse", "finalbody"),
    cst.TryStar: ("body", "handlers", "orelse", "finalbody"),
    cst.ExceptHandler: ("body",),
    cst.ExceptStarHandler: ("body",),
    cst.Finally: ("body",),
    cst.Match: ("cases",),
    cst.MatchCase: ("body",),
}


class _Restore:
    """Puts back what the placeholders stand for. Where the outline's first block is not the
    module's, blocks libcst gave the outline's default indent get it spelled out, so that the
    module keeps its own."""

    def __init__(self, cuts: dict[str, Cut | Headers | Piece], spell_indent: str | None) -> None:
        self.cuts = cuts
        self.spell_indent = spell_indent
        self.pieces = _PutPiecesBack(cuts) if any(type(c) is Piece for c in cuts.values()) else None

    def statements(self, body: Sequence[cst.CSTNode]) -> Sequence[cst.CSTNode]:
        new = [self.node(stmt) for stmt in body]
        return body if all(a is b for a, b in zip(new, body, strict=True)) else new

    def node(self, node: Any) -> Any:
        if isinstance(node, cst.SimpleStatementLine):
            opaque = self.opaque(node)
            if opaque is not None or self.pieces is None:
                return opaque or node
            return node.visit(self.pieces)
        if isinstance(node, cst.IndentedBlock):
            body = self.statements(node.body)
            if self.spell_indent is not None and node.indent is None:
                return node.with_changes(body=body, indent=self.spell_indent)
            return node if body is node.body else node.with_changes(body=body)
        headers = self.cuts.get(_placeholder_of(node) or "")
        if isinstance(headers, Headers):
            return self.compound(node, headers)
        fields = _BLOCK_FIELDS.get(type(node))
        if fields is None:
            return node
        changes = {}
        for name in fields:
            value = getattr(node, name)
            new = self.statements(value) if isinstance(value, Sequence) else self.node(value)
            if new is not value:
                changes[name] = new
        if self.spell_indent is not None and isinstance(node, cst.Match) and node.indent is None:
            changes["indent"] = self.spell_indent
        return node.with_changes(**changes) if changes else node

    def opaque(self, line: cst.SimpleStatementLine) -> OpaqueStatement | None:
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
            return None
        value = line.body[0].value
        if not isinstance(value, cst.Name):
            return None
        cut = self.cuts.get(value.value)
        return OpaqueStatement(cut, line.leading_lines) if isinstance(cut, Cut) else None

    def compound(self, node: cst.BaseCompoundStatement, headers: Headers) -> OpaqueCompound:
        bodies = [node.body]
        clause_lines = []
        rest = getattr(node, "orelse", None)
        while rest is not None:  # `elif` and `else` clauses
            clause_lines.append(rest.leading_lines)
            bodies.append(rest.body)
            rest = getattr(rest, "orelse", None)
        if len(bodies) != len(headers.texts) or not all(
            isinstance(body, cst.IndentedBlock) for body in bodies
        ):
            raise OutlineError("a placeholder header without its blocks")
        restored = [self.node(body) for body in bodies]
        return OpaqueCompound(headers, restored, clause_lines, node.leading_lines)


def _placeholder_of(node: cst.CSTNode) -> str | None:
    """The name a placeholder header (`if NAME:`, `def NAME():`, ...) stands on."""
    if isinstance(node, cst.If | cst.While):
        test = node.test
    elif isinstance(node, cst.For):
        test = node.target
    elif isinstance(node, cst.With):
        test = node.items[0].item
    elif isinstance(node, cst.FunctionDef | cst.ClassDef):
        test = node.name
    else:
        return None
    return test.value if isinstance(test, cst.Name) else None


def parse_printed(
    source: str, tree: ast.Module, site_lines: Iterable[int], xla_lines: Iterable[int]
) -> tuple[cst.Module, Printed]:
    """`source` as a libcst module in which the statements holding no site and not mentioning
    torch_xla are opaque, and where its nodes are. Raises libcst's ParserSyntaxError when
    libcst cannot parse the module."""
    module = _outlined(source, tree, site_lines, xla_lines)
    if module is not None:
        found = printed(module)
        if found.code != source:  # a printing `recorded_printing` does not follow
            found = printed(module, by_libcst=True)
        if found.code == source:
            return module, found
        # A layout the outline misread: never guess, parse the module whole.
    module = cst.parse_module(source)
    return module, printed(module, by_libcst=True)


def _outlined(
    source: str, tree: ast.Module, site_lines: Iterable[int], xla_lines: Iterable[int]
) -> cst.Module | None:
    try:
        skeleton = outline(source, tree, site_lines, xla_lines)
        module = cst.parse_module(skeleton.text)
        if not skeleton.cuts:
            return module
        own_indent = skeleton.default_indent
        spell = None if module.default_indent == own_indent else module.default_indent
        body = _Restore(skeleton.cuts, spell).statements(module.body)
    except (OutlineError, cst.ParserSyntaxError):
        return None
    return module.with_changes(body=body, default_indent=own_indent)
