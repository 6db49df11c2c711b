"""The arguments of a torch_xla call, as the rewrite's transforms read them.

The scan reads them from `ast`, the codemod from libcst; `bind` maps either to a signature's
parameters the same way, so both sides agree on which argument a transform receives.
"""

import ast
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

T = TypeVar("T")

# Keywords that stand for unpacked arguments: `f(*args)`, `f(**kwargs)`.
STAR = "*"
DOUBLE_STAR = "**"


class Arg(NamedTuple):
    """One argument of a call."""

    keyword: str | None  # None: positional; STAR / DOUBLE_STAR: unpacked
    # "literal" (a constant: `text` is its repr), "name" (a name or an attribute: `text` is its
    # source), "list" / "tuple" (a display), or "other" (any other expression)
    form: str
    text: str = ""
    qualname: str | None = None  # a name that resolves to an imported API
    unpacking: bool = False  # a list or tuple display that holds `*x`

    def is_literal(self, *values: str) -> bool:
        """A constant whose repr is one of `values` (`'None'`, `'True'`, `"''"`)."""
        return self.form == "literal" and self.text in values


def bind(arguments: Sequence[tuple[str | None, T]], params: Sequence[str]) -> dict[str, T] | None:
    """Map each (keyword, value) argument to its parameter name, or None when one does not fit
    the signature (`*args`, `**kwargs`, an unknown or repeated keyword, too many positionals)."""
    bound: dict[str, T] = {}
    for position, (keyword, value) in enumerate(arguments):
        if keyword in (STAR, DOUBLE_STAR):
            return None
        if keyword is None:
            if position >= len(params):
                return None
            bound[params[position]] = value
        else:
            if keyword not in params or keyword in bound:
                return None
            bound[keyword] = value
    return bound


def bind_site(args: Sequence[Arg], params: Sequence[str]) -> dict[str, Arg] | None:
    """`bind` for the arguments a site recorded."""
    return bind([(a.keyword, a) for a in args], params)


def is_none(arg: Arg | None) -> bool:
    """Absent, or `None` written out."""
    return arg is None or arg.is_literal("None")


def is_bool(arg: Arg | None) -> bool:
    """Absent, `True` or `False`: a value known before the program runs."""
    return arg is None or arg.is_literal("True", "False")


QualnameOf = Callable[[ast.expr], str | None]


def arguments_of(call: ast.Call, qualname_of: QualnameOf) -> tuple[Arg, ...]:
    """The call's arguments in source order (positionals, then keywords, as libcst lists them
    when keywords follow positionals). `qualname_of(node)` resolves a name chain, or None."""
    out = [_arg(STAR if isinstance(a, ast.Starred) else None, a, qualname_of) for a in call.args]
    out += [_arg(k.arg or DOUBLE_STAR, k.value, qualname_of) for k in call.keywords]
    return tuple(out)


def _arg(keyword: str | None, node: ast.expr, qualname_of: QualnameOf) -> Arg:
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Constant):
        return Arg(keyword, "literal", repr(node.value))
    if isinstance(node, (ast.Name, ast.Attribute)):
        return Arg(keyword, "name", ast.unparse(node), qualname_of(node))
    if isinstance(node, (ast.List, ast.Tuple)):
        form = "list" if isinstance(node, ast.List) else "tuple"
        unpacking = any(isinstance(e, ast.Starred) for e in node.elts)
        empty = ("[]" if form == "list" else "()") if not node.elts else ""
        return Arg(keyword, form, empty, unpacking=unpacking)
    return Arg(keyword, "other")
