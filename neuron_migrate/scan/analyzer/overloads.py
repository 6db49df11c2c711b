"""Overloads: which traced call pattern of an API a call is, chosen by the call's arguments.

The API->aten map keeps the traced call shapes of an API apart where they reach different ops:
`x.max()` reaches `aten::max`, `x.max(1, keepdim=True)` `aten::max.dim`, `x.max(y)`
`aten::maximum`. A call's literal arguments and its argument count choose among them:

- one choice (or several that reach the same ops): the call's ops;
- choices that differ only in the rank of their tensors (`F.cross_entropy` with a class target,
  or with a 2-D target that reaches `aten::nll_loss2d_forward`): the plainest one (the lowest
  ranks), the others named as what higher-rank inputs reach;
- choices that differ in what kind of argument the call passes (`torch.max(a, b)` with `b` an
  int or a tensor) and the call does not show it: the call *depends on the input*, and every
  choice is named.
"""

from collections.abc import Sequence
from typing import NamedTuple

from neuron_migrate.matrix.api_map import CallPattern

ANY = "?"
# How a finding's message says the call cannot tell its pattern (verify reads it back).
DEPENDS = "depends on the input"


class Choice(NamedTuple):
    ops: tuple[str, ...]  # the ops the call reaches (all candidates' when it depends on the input)
    depends: bool  # the call's arguments cannot tell which pattern it is
    # (argument kinds shown to a person, ops) of the patterns it may also be
    others: tuple[tuple[str, tuple[str, ...]], ...] = ()


def literal_kind(literal: str | None) -> str:
    """The kind of a call argument from its literal's repr (None: not a literal)."""
    if literal is None:
        return ANY
    if literal in ("True", "False"):
        return "bool"
    if literal == "None":
        return "none"
    if literal[:1] in ("'", '"') or literal[:2] in ("b'", 'b"'):
        return "str"
    for kind, parse in (("int", int), ("float", float)):
        try:
            parse(literal)
        except ValueError:
            continue
        return kind
    return ANY


def _fits(call: str, pattern: str) -> bool:
    if call == ANY:
        return True
    if call == "int" and pattern == "float":
        return False
    return call == pattern


def _plain(kind: str) -> str:
    return "tensor" if kind.startswith("tensor:") else kind


def _rank(pattern: CallPattern) -> int:
    kinds = [*pattern.args, *(kind for _, kind in pattern.kwargs)]
    return sum(int(k.partition(":")[2] or 0) for k in kinds if k.startswith("tensor:"))


def shown(pattern: CallPattern, method: bool) -> str:
    args = pattern.args[1:] if method else pattern.args
    parts = [*args, *(f"{k}={kind}" for k, kind in pattern.kwargs)]
    return "(" + ", ".join(parts) + ")"


def choose(
    patterns: Sequence[CallPattern],
    args: Sequence[str | None],
    kwargs: Sequence[tuple[str, str | None]],
    *,
    method: bool,
) -> Choice | None:
    """The pattern(s) a call is; None when no traced pattern fits it (use the API's union)."""
    if not patterns or any(name == "**" for name, _ in kwargs):
        return None
    call_args = [literal_kind(a) for a in args]
    call_kwargs = {name: literal_kind(value) for name, value in kwargs}
    fitting = []
    for pattern in patterns:
        pattern_args = pattern.args[1:] if method else pattern.args
        if len(pattern_args) + len(pattern.kwargs) != len(call_args) + len(call_kwargs):
            continue
        positional = zip(call_args, pattern_args, strict=False)
        if not all(_fits(c, p) for c, p in positional):
            continue
        named = dict(pattern.kwargs)
        if all(_fits(kind, named[name]) for name, kind in call_kwargs.items() if name in named):
            fitting.append(pattern)
    if not fitting:
        return None
    by_ops: dict[frozenset[str], list[CallPattern]] = {}
    for pattern in fitting:
        by_ops.setdefault(frozenset(pattern.ops), []).append(pattern)
    if len(by_ops) == 1:
        return Choice(fitting[0].ops, False)
    kinds = {
        (tuple(_plain(k) for k in p.args), tuple((n, _plain(k)) for n, k in p.kwargs))
        for p in fitting
    }
    ordered = sorted(fitting, key=lambda p: (_rank(p), p.args, p.kwargs))
    if len(kinds) == 1:  # the same call with tensors of other ranks
        chosen = ordered[0]
        others = _others(ordered, {frozenset(chosen.ops)}, method)
        return Choice(chosen.ops, False, others)
    union: list[str] = []
    for pattern in ordered:
        union.extend(op for op in pattern.ops if op not in union)
    return Choice(tuple(union), True, _others(ordered, set(), method))


def _others(
    ordered: list[CallPattern], skip: set[frozenset[str]], method: bool
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    out = []
    for pattern in ordered:
        key = frozenset(pattern.ops)
        if key in skip:
            continue
        skip.add(key)
        out.append((shown(pattern, method), pattern.ops))
    return tuple(out)
