"""Rule templates: an expression with `{param}` holes, bound to a call's arguments.

`torch.manual_seed({seed})` with `params: [seed, device]` takes `xm.set_rng_state(42)` and
`xm.set_rng_state(seed=42, device=d)` alike. Argument nodes are moved into the template as they
are, so their comments and formatting survive. A template that is a plain dotted name
(`torch.nn.SyncBatchNorm`) renames the callee and keeps the arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext, root_names
from neuron_migrate.rewrite.codemod.passes import Transformer
from neuron_migrate.ruleset import Rewrite
from neuron_migrate.ruleset.model import TEMPLATE_HOLE, TEMPLATE_RENAME
from neuron_migrate.scan.analyzer.arguments import bind

_HOLE = TEMPLATE_HOLE
_HOLE_PREFIX = "__neuron_migrate_hole_"


def bind_arguments(call: cst.Call, params: Sequence[str]) -> dict[str, cst.BaseExpression] | None:
    """Map each argument of `call` to its parameter name, or None when an argument does not
    fit the signature (`arguments.bind`, which the scan's reading of the call shares)."""
    return bind([(_keyword_of(arg), arg.value) for arg in call.args], params)


def bound_arguments(call: cst.Call, params: Sequence[str]) -> dict[str, cst.BaseExpression]:
    """`bind_arguments` for a transform, run only on a call whose arguments bind: one that does
    not is declined first (`scan.analyzer.declines`)."""
    values = bind_arguments(call, params)
    assert values is not None, "a call whose arguments do not bind is declined"
    return values


def _keyword_of(arg: cst.Arg) -> str | None:
    if arg.star:
        return arg.star  # "*" or "**"
    return arg.keyword.value if arg.keyword is not None else None


# Where an argument sits next to an operator, `.`, `[` or a call, it needs parentheses unless
# it is an atom; as a call argument, a list element or a keyword value it never does.
_TIGHT_FIELDS: dict[type, tuple[str, ...]] = {
    cst.Attribute: ("value",),
    cst.Subscript: ("value",),
    cst.Call: ("func",),
    cst.BinaryOperation: ("left", "right"),
    cst.UnaryOperation: ("expression",),
    cst.BooleanOperation: ("left", "right"),
    cst.Comparison: ("left",),
    cst.ComparisonTarget: ("comparator",),
    cst.Await: ("expression",),
}


class _FillHoles(Transformer):
    def __init__(self, values: Mapping[str, cst.BaseExpression], aliases: Mapping[str, str]):
        self.values = values
        self.aliases = aliases
        self.filled: set[int] = set()

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        result = super().on_leave(original, updated)
        if not isinstance(result, cst.CSTNode):
            return result
        for field_name in _TIGHT_FIELDS.get(type(result), ()):
            child = getattr(result, field_name)
            if id(child) in self.filled:
                result = result.with_changes(**{field_name: parenthesize(child)})
        return result

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)  # `.dist` after a dot is no module

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if updated.value.startswith(_HOLE_PREFIX):
            value = self.values[updated.value[len(_HOLE_PREFIX) :]]
            self.filled.add(id(value))
            return value
        if updated.value in self.aliases:
            return updated.with_changes(value=self.aliases[updated.value])
        return updated


# A template is parsed once, with the names its expressions start with: filling its holes
# builds a new tree from it (libcst nodes are immutable, so the few leaves the new tree shares
# with it are safe to share).
@functools.lru_cache(maxsize=256)
def _parsed_expression(source: str) -> tuple[cst.BaseExpression, frozenset[str]]:
    expr = cst.parse_expression(source)
    return expr, root_names(expr)


@functools.lru_cache(maxsize=64)
def _parsed_module(source: str) -> tuple[cst.Module, frozenset[str]]:
    module = cst.parse_module(source)
    return module, root_names(module)


def render(
    text: str,
    ctx: FileContext,
    values: Mapping[str, cst.BaseExpression] | None = None,
) -> cst.BaseExpression:
    """Parse `text`, put `values` into its `{holes}`, and point `torch`/`dist`/`os` at the
    names this file binds them to (recording the imports the file will need)."""
    source = _HOLE.sub(lambda m: _HOLE_PREFIX + m.group(1), text)
    expr, roots = _parsed_expression(source)
    aliases = ctx.use_names(roots)
    if not values:
        return _without_holes(source, tuple(sorted(aliases.items())))
    filled = expr.visit(_FillHoles(values, aliases))
    assert isinstance(filled, cst.BaseExpression)
    return filled


@functools.lru_cache(maxsize=256)
def _without_holes(source: str, aliases: tuple[tuple[str, str], ...]) -> cst.BaseExpression:
    """A template without holes gives the same tree at every site: made once and shared, as
    libcst nodes are immutable and no pass tells two sites' copies apart."""
    filled = _parsed_expression(source)[0].visit(_FillHoles({}, dict(aliases)))
    assert isinstance(filled, cst.BaseExpression)
    return filled


def render_statements(text: str, ctx: FileContext, values: Mapping[str, cst.BaseExpression]):
    """Statements from a multi-line template, with holes filled as in `render`."""
    module, roots = _parsed_module(_HOLE.sub(lambda m: _HOLE_PREFIX + m.group(1), text))
    aliases = ctx.use_names(roots)
    filled = module.visit(_FillHoles(values, aliases))
    assert isinstance(filled, cst.Module)
    return list(filled.body)


def parenthesize(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Arguments go into templates next to `.`, `[` and operators: anything that is not an
    atom gets parentheses so it keeps its meaning."""
    atoms = (
        cst.Name,
        cst.Attribute,
        cst.Call,
        cst.Subscript,
        cst.SimpleString,
        cst.ConcatenatedString,
        cst.FormattedString,
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.List,
        cst.Tuple,
        cst.Dict,
        cst.Set,
        cst.ListComp,
        cst.SetComp,
        cst.DictComp,
        cst.GeneratorExp,
        cst.Ellipsis,
    )
    if isinstance(expr, atoms) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def last_component(qualname: str) -> str:
    return qualname.rpartition(".")[2]


def apply_template(
    rewrite: Rewrite, qualname: str, node: cst.BaseExpression, ctx: FileContext
) -> cst.BaseExpression | None:
    """The template applied to a call or a bare reference; None when it cannot apply."""
    assert rewrite.template is not None
    name = last_component(qualname)
    text = rewrite.template.replace("{name}", rewrite.option(name, name) or name)
    if TEMPLATE_RENAME.match(text):  # a rename: keep the call's arguments
        new_callee = render(text, ctx)
        if isinstance(node, cst.Call):
            return _ensure_keyword(node.with_changes(func=new_callee), rewrite, ctx)
        return new_callee
    if not isinstance(node, cst.Call):  # the function object, passed around or kept
        if not rewrite.template_replaces_reference():
            return None  # a template of the call's arguments
        return render(f"lambda: {text}", ctx)
    # arguments that do not bind, or a hole left empty, are declined (`declines.template`)
    values = bound_arguments(node, rewrite.params)
    for param, default in rewrite.defaults:
        values.setdefault(param, _parsed_expression(default)[0])
    return render(text, ctx, values)


def _ensure_keyword(call: cst.Call, rewrite: Rewrite, ctx: FileContext) -> cst.Call:
    wanted = rewrite.option("ensure_keyword")
    if not wanted:
        return call
    keyword, _, value = wanted.partition("=")
    return add_keyword(call, keyword, render(value, ctx))


def add_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `keyword=value` appended, unless it already passes that keyword."""
    if any(arg.keyword is not None and arg.keyword.value == keyword for arg in call.args):
        return call
    args = list(call.args)
    new_arg = cst.Arg(
        keyword=cst.Name(keyword),
        value=value,
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    if args:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT or isinstance(last.comma, cst.MaybeSentinel):
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
            args.append(new_arg)
        else:  # a trailing comma (often a multi-line call): keep the layout
            args.append(new_arg.with_changes(comma=last.comma))
            args[-2] = last.with_changes(comma=cst.Comma(whitespace_after=_after(last.comma)))
    else:
        args.append(new_arg)
    return call.with_changes(args=args)


def _after(comma: cst.Comma) -> cst.BaseParenthesizableWhitespace:
    return comma.whitespace_after


def remove_keyword(call: cst.Call, keyword: str) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == keyword)]
    if len(args) == len(call.args):
        return call
    if args and call.args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def keyword_value(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None
