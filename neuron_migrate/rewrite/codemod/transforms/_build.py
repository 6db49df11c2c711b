"""Small builders and literal tests shared by the transforms."""

from __future__ import annotations

import libcst as cst


def is_name(expr: cst.BaseExpression | None, value: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == value


def is_true(expr: cst.BaseExpression | None) -> bool:
    return is_name(expr, "True")


def is_false(expr: cst.BaseExpression | None) -> bool:
    return is_name(expr, "False")


def is_none(expr: cst.BaseExpression | None) -> bool:
    return expr is None or is_name(expr, "None")


def number(expr: cst.BaseExpression | None) -> float | None:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value)
    return None


def string_value(expr: cst.BaseExpression | None) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[small])


def call_statement(call: cst.BaseExpression) -> cst.SimpleStatementLine:
    return line(cst.Expr(call))


def if_block(test: cst.BaseExpression, body: list[cst.BaseStatement]) -> cst.If:
    return cst.If(test=test, body=cst.IndentedBlock(body=body))


def positional(*values: cst.BaseExpression) -> list[cst.Arg]:
    return [cst.Arg(value=v) for v in values]


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )


def with_commas(args: list[cst.Arg]) -> list[cst.Arg]:
    """Arguments separated by ", " (the last one without a comma)."""
    out = []
    for i, arg in enumerate(args):
        comma = (
            cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            if i < len(args) - 1
            else cst.MaybeSentinel.DEFAULT
        )
        out.append(arg.with_changes(comma=comma))
    return out


def unpacked(args_value: cst.BaseExpression | None) -> list[cst.Arg] | None:
    """The arguments `fn(*args)` receives, spelled out when `args` is a tuple/list literal."""
    if args_value is None:
        return []
    if isinstance(args_value, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in args_value.elements):
            return None
        return [cst.Arg(value=e.value) for e in args_value.elements]
    return [cst.Arg(value=args_value, star="*")]
