"""What libcst's `_codegen` does for the most common kinds of node, without its machinery.

Printing a tree to note where its nodes are (`positions.py`) calls, for every node, libcst's
`_codegen`, the printer's two hooks around it and the node's `_codegen_impl`, and for an
expression a generator-based context manager for its parentheses. Here the kinds that make
most of an outline -- whitespace, names, strings, calls, arguments, simple statements, blocks,
`if`, `try` and `with` (and the opaque statements, which `skeleton.py` registers) -- each have
a function that writes the same tokens and notes the same spans and extents straight onto the
recording printer. Any other node is printed by libcst (`node._codegen(state)`), its children
with it. Each function follows the `_codegen_impl` of its class in libcst 1.x; `parse_printed`
checks the code against the source (and prints by libcst when it differs), and tests compare
code, spans and extents with libcst's printing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from neuron_migrate.rewrite.codemod.recording import Recording, note_extent

_DEFAULT = cst.MaybeSentinel.DEFAULT
_SIMPLE_WHITESPACE = cst.SimpleWhitespace

Handler = Callable[..., None]


def emit(state: Recording, node: cst.CSTNode, **kwargs: Any) -> None:
    """Print `node` onto the recording printer `state`, as `node._codegen(state)` does."""
    handler = HANDLERS.get(type(node))
    if handler is None:
        node._codegen(state, **kwargs)
    else:
        handler(state, node, **kwargs)


def _whitespace(state: Recording, node: cst.BaseParenthesizableWhitespace) -> None:
    if type(node) is _SIMPLE_WHITESPACE:
        _simple_whitespace(state, node)
    else:
        emit(state, node)


def _plain(state: Recording, token: str) -> None:
    """A token without line breaks."""
    state.tokens.append(token)
    state.column += len(token)


def _indent(state: Recording) -> None:
    """`add_indent_tokens`: the block's indentation, spaces and tabs."""
    for token in state.indent_tokens:
        state.tokens.append(token)
        state.column += len(token)


def _open(state: Recording, node: Any) -> None:
    for lpar in node.lpar:
        _plain(state, "(")
        _whitespace(state, lpar.whitespace_after)


def _close(state: Recording, node: Any) -> None:
    for rpar in node.rpar:  # a right parenthesis is recorded: where an import's span ends
        line, column = state.line, state.column
        _whitespace(state, rpar.whitespace_before)
        _plain(state, ")")
        note_extent(state, rpar, line, column)


# -- whitespace (never recorded) ----------------------------------------------------------------


def _simple_whitespace(state: Recording, node: cst.SimpleWhitespace) -> None:
    value = node.value
    if "\\" in value:  # a line continuation: the only line break it may hold
        state.add_token(value)
    else:
        state.tokens.append(value)
        state.column += len(value)


def _newline(state: Recording, node: cst.Newline) -> None:
    value = node.value  # one line break: "\n", "\r\n" or "\r"
    state.tokens.append(state.default_newline if value is None else value)
    state.line += 1
    state.column = 0


def _comment(state: Recording, node: cst.Comment) -> None:
    _plain(state, node.value)


def _trailing_whitespace(state: Recording, node: cst.TrailingWhitespace) -> None:
    _whitespace(state, node.whitespace)
    if node.comment is not None:
        _comment(state, node.comment)
    _newline(state, node.newline)


def _empty_line(state: Recording, node: cst.EmptyLine) -> None:
    if node.indent:
        _indent(state)
    _whitespace(state, node.whitespace)
    if node.comment is not None:
        _comment(state, node.comment)
    _newline(state, node.newline)


def _one_token(token: str) -> Handler:
    """`_BaseOneTokenOp`: not recorded, but its token's span is (syntactic position)."""

    def handler(state: Recording, node: Any) -> None:
        _whitespace(state, node.whitespace_before)
        line, column = state.line, state.column
        _plain(state, token)
        state.spans[node] = (line, column, line, state.column)
        _whitespace(state, node.whitespace_after)

    return handler


# -- expressions ----------------------------------------------------------------------------


def _parenthesized(inner: Handler) -> Handler:
    """An expression's function: `inner` prints what is inside its parentheses, which is its
    syntactic span."""

    def handler(state: Recording, node: Any) -> None:
        line, column = state.line, state.column
        if node.lpar:
            _open(state, node)
        start_line, start_column = state.line, state.column
        inner(state, node)
        state.spans[node] = (start_line, start_column, state.line, state.column)
        if node.rpar:
            _close(state, node)
        note_extent(state, node, line, column)

    return handler


def _token(state: Recording, node: Any) -> None:
    """A name or a number: one token."""
    _plain(state, node.value)


def _string(state: Recording, node: cst.SimpleString) -> None:
    state.add_token(node.value)  # a triple-quoted string may span lines


def _attribute(state: Recording, node: cst.Attribute) -> None:
    emit(state, node.value)
    emit(state, node.dot)
    emit(state, node.attr)


def _call(state: Recording, node: cst.Call) -> None:
    emit(state, node.func)
    _whitespace(state, node.whitespace_after_func)
    _plain(state, "(")
    _whitespace(state, node.whitespace_before_args)
    last = len(node.args) - 1
    for index, arg in enumerate(node.args):
        emit(state, arg, default_comma=index != last)
    _plain(state, ")")


def _comma(state: Recording, node: Any, default_comma: bool) -> None:
    """An item's comma: its own, or the one its list gives all but the last item."""
    comma = node.comma
    if comma is _DEFAULT and default_comma:
        _plain(state, ", ")
    elif isinstance(comma, cst.Comma):
        emit(state, comma)


def _arg(state: Recording, node: cst.Arg, default_comma: bool = False) -> None:
    line, column = state.line, state.column
    _plain(state, node.star)
    _whitespace(state, node.whitespace_after_star)
    keyword = node.keyword
    if keyword is not None:
        emit(state, keyword)
    equal = node.equal
    if equal is _DEFAULT and keyword is not None:
        _plain(state, " = ")
    elif isinstance(equal, cst.AssignEqual):
        emit(state, equal)
    emit(state, node.value)
    state.spans[node] = (line, column, state.line, state.column)
    _comma(state, node, default_comma)
    _whitespace(state, node.whitespace_after_arg)
    note_extent(state, node, line, column)


# -- statements -----------------------------------------------------------------------------


def _semicolon(state: Recording, node: Any, default_semicolon: bool) -> None:
    semicolon = node.semicolon
    if isinstance(semicolon, cst.MaybeSentinel):
        if default_semicolon:
            _plain(state, "; ")
    elif isinstance(semicolon, cst.Semicolon):
        emit(state, semicolon)


def _small_statement(inner: Handler) -> Handler:
    """A small statement's function: `inner` prints its syntactic span; then its semicolon."""

    def handler(state: Recording, node: Any, default_semicolon: bool = False) -> None:
        line, column = state.line, state.column
        inner(state, node)
        state.spans[node] = (line, column, state.line, state.column)
        _semicolon(state, node, default_semicolon)
        note_extent(state, node, line, column)

    return handler


def _expr(state: Recording, node: cst.Expr) -> None:
    emit(state, node.value)


def _assign(state: Recording, node: cst.Assign) -> None:
    for target in node.targets:
        emit(state, target)
    emit(state, node.value)


def _return(state: Recording, node: cst.Return) -> None:
    _plain(state, "return")
    whitespace = node.whitespace_after_return
    value = node.value
    if isinstance(whitespace, cst.MaybeSentinel):
        if value is not None:
            _plain(state, " ")
    else:
        _whitespace(state, whitespace)
    if value is not None:
        emit(state, value)


def _assign_target(state: Recording, node: cst.AssignTarget) -> None:
    line, column = state.line, state.column
    emit(state, node.target)
    state.spans[node] = (line, column, state.line, state.column)
    _whitespace(state, node.whitespace_before_equal)
    _plain(state, "=")
    _whitespace(state, node.whitespace_after_equal)
    note_extent(state, node, line, column)


def _simple_statement_line(state: Recording, node: cst.SimpleStatementLine) -> None:
    line, column, start_line, start_column = _leading(state, node)
    body = node.body
    if body:
        last = len(body) - 1
        for index, stmt in enumerate(body):
            emit(state, stmt, default_semicolon=index != last)
        _syntactic_to(state, node, start_line, start_column, body[last])
    else:
        _plain(state, "pass")
        state.spans[node] = (start_line, start_column, state.line, state.column)
    emit(state, node.trailing_whitespace)
    note_extent(state, node, line, column)


def _indented_block(state: Recording, node: cst.IndentedBlock) -> None:
    line, column = state.line, state.column
    emit(state, node.header)
    indent = node.indent
    state.increase_indent(state.default_indent if indent is None else indent)
    body = node.body
    if body:
        for stmt in body:
            emit(state, stmt)
        state.spans[node] = (*state.spans[body[0]][:2], *state.spans[body[-1]][2:])
    else:
        _indent(state)
        start_line, start_column = state.line, state.column
        _plain(state, "pass")
        state.spans[node] = (start_line, start_column, state.line, state.column)
        state.add_token(state.default_newline)
    for footer in node.footer:
        emit(state, footer)
    state.decrease_indent()
    note_extent(state, node, line, column)


def _leading(state: Recording, node: Any) -> tuple[int, int, int, int]:
    """Print a compound statement's or a clause's leading lines and indentation; returns where
    it starts and where its syntactic span starts (its keyword)."""
    line, column = state.line, state.column
    for leading in node.leading_lines:
        emit(state, leading)
    _indent(state)
    return line, column, state.line, state.column


def _syntactic_to(
    state: Recording, node: Any, start_line: int, start_column: int, end: Any
) -> None:
    """`record_syntactic_position(node, end_node=end)`."""
    state.spans[node] = (start_line, start_column, *state.spans[end][2:])


def _colon_body(state: Recording, node: Any) -> None:
    _whitespace(state, node.whitespace_before_colon)
    _plain(state, ":")
    emit(state, node.body)


def _if(state: Recording, node: cst.If, is_elif: bool = False) -> None:
    line, column, start_line, start_column = _leading(state, node)
    _plain(state, "elif" if is_elif else "if")
    _whitespace(state, node.whitespace_before_test)
    emit(state, node.test)
    _whitespace(state, node.whitespace_after_test)
    _plain(state, ":")
    emit(state, node.body)
    orelse = node.orelse
    if orelse is not None:
        if isinstance(orelse, cst.If):
            emit(state, orelse, is_elif=True)
        else:
            emit(state, orelse)
    _syntactic_to(state, node, start_line, start_column, node.body if orelse is None else orelse)
    note_extent(state, node, line, column)


def _keyword_clause(keyword: str) -> Handler:
    """`else:`, `finally:`, `try:` without its handlers."""

    def handler(state: Recording, node: Any) -> None:
        line, column, start_line, start_column = _leading(state, node)
        _plain(state, keyword)
        _colon_body(state, node)
        _syntactic_to(state, node, start_line, start_column, node.body)
        note_extent(state, node, line, column)

    return handler


def _try(state: Recording, node: cst.Try) -> None:
    line, column, start_line, start_column = _leading(state, node)
    end_node: cst.CSTNode = node.body
    if node.handlers:
        end_node = node.handlers[-1]
    if node.orelse is not None:
        end_node = node.orelse
    if node.finalbody is not None:
        end_node = node.finalbody
    _plain(state, "try")
    _colon_body(state, node)
    for handler in node.handlers:
        emit(state, handler)
    if node.orelse is not None:
        emit(state, node.orelse)
    if node.finalbody is not None:
        emit(state, node.finalbody)
    _syntactic_to(state, node, start_line, start_column, end_node)
    note_extent(state, node, line, column)


def _except_handler(state: Recording, node: cst.ExceptHandler) -> None:
    line, column, start_line, start_column = _leading(state, node)
    _plain(state, "except")
    _whitespace(state, node.whitespace_after_except)
    if node.type is not None:
        emit(state, node.type)
    if node.name is not None:
        emit(state, node.name)
    _colon_body(state, node)
    _syntactic_to(state, node, start_line, start_column, node.body)
    note_extent(state, node, line, column)


def _as_name(state: Recording, node: cst.AsName) -> None:
    line, column = state.line, state.column
    _whitespace(state, node.whitespace_before_as)
    _plain(state, "as")
    _whitespace(state, node.whitespace_after_as)
    emit(state, node.name)
    note_extent(state, node, line, column)


def _with(state: Recording, node: cst.With) -> None:
    line, column, start_line, start_column = _leading(state, node)
    needs_paren = False
    for item in node.items:
        comma = item.comma
        if isinstance(comma, cst.Comma) and isinstance(
            comma.whitespace_after,
            cst.EmptyLine | cst.TrailingWhitespace | cst.ParenthesizedWhitespace,
        ):
            needs_paren = True
            break
    if node.asynchronous is not None:
        emit(state, node.asynchronous)
    _plain(state, "with")
    _whitespace(state, node.whitespace_after_with)
    if isinstance(node.lpar, cst.LeftParen):
        emit(state, node.lpar)
    elif needs_paren:
        _plain(state, "(")
    last = len(node.items) - 1
    for index, item in enumerate(node.items):
        emit(state, item, default_comma=index != last)
    if isinstance(node.rpar, cst.RightParen):
        emit(state, node.rpar)
    elif needs_paren:
        _plain(state, ")")
    _colon_body(state, node)
    _syntactic_to(state, node, start_line, start_column, node.body)
    note_extent(state, node, line, column)


def _with_item(state: Recording, node: cst.WithItem, default_comma: bool = False) -> None:
    line, column = state.line, state.column
    emit(state, node.item)
    if node.asname is not None:
        emit(state, node.asname)
    state.spans[node] = (line, column, state.line, state.column)
    _comma(state, node, default_comma)
    note_extent(state, node, line, column)


def _module(state: Recording, node: cst.Module) -> None:
    line, column = state.line, state.column
    for header in node.header:
        emit(state, header)
    for stmt in node.body:
        emit(state, stmt)
    for footer in node.footer:
        emit(state, footer)
    if node.has_trailing_newline:
        if not state.tokens:
            state.add_token(state.default_newline)
    else:
        state.pop_trailing_newline()
    note_extent(state, node, line, column)


HANDLERS: dict[type[cst.CSTNode], Handler] = {
    cst.SimpleWhitespace: _simple_whitespace,
    cst.Newline: _newline,
    cst.Comment: _comment,
    cst.TrailingWhitespace: _trailing_whitespace,
    cst.EmptyLine: _empty_line,
    cst.Dot: _one_token("."),
    cst.Comma: _one_token(","),
    cst.AssignEqual: _one_token("="),
    cst.Semicolon: _one_token(";"),
    cst.Name: _parenthesized(_token),
    cst.Integer: _parenthesized(_token),
    cst.Float: _parenthesized(_token),
    cst.SimpleString: _parenthesized(_string),
    cst.Attribute: _parenthesized(_attribute),
    cst.Call: _parenthesized(_call),
    cst.Arg: _arg,
    cst.Expr: _small_statement(_expr),
    cst.Assign: _small_statement(_assign),
    cst.AssignTarget: _assign_target,
    cst.Return: _small_statement(_return),
    cst.SimpleStatementLine: _simple_statement_line,
    cst.If: _if,
    cst.Else: _keyword_clause("else"),
    cst.Finally: _keyword_clause("finally"),
    cst.Try: _try,
    cst.ExceptHandler: _except_handler,
    cst.AsName: _as_name,
    cst.With: _with,
    cst.WithItem: _with_item,
    cst.IndentedBlock: _indented_block,
    cst.Module: _module,
}
