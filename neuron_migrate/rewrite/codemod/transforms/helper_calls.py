"""Calls that become a call of a helper added to the file, with the same arguments: the helper
does what the torch_xla function did, with torch.distributed (helpers.py)."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.helpers import HELPERS, use_helper
from neuron_migrate.rewrite.codemod.targets import CallTarget, expression
from neuron_migrate.rewrite.codemod.templates import bound_arguments, last_component
from neuron_migrate.scan.analyzer.declines import ONLY_LITERALS


@expression("helper-call")
def helper_call(t: CallTarget) -> cst.BaseExpression | None:
    """`xm.RateTracker(...)` -> `NeuronRateTracker(...)`. The rule's options name the helper,
    by the called function's last name or as `helper`; `params`, when given, is the signature
    the arguments must fit (anything else is marked). Per function, `NAME.params` is its own
    signature (space-separated) and `NAME.false_only` (`NAME.none_only`, `NAME.bool_only`) a
    parameter whose feature the device lacks: the call is rewritten only where that argument is
    absent or `False` (`None`, a literal bool), and it is dropped. A reference not called
    becomes the helper's name where the rule says the helper has the function's signature
    (`references: helper`)."""
    rewrite = t.rule.rewrite
    assert rewrite is not None
    called = last_component(t.site.qualname or "")
    name = rewrite.option(called) or rewrite.option("helper")
    if name is None or name not in HELPERS:
        return None
    if not isinstance(t.node, cst.Call):  # a reference passed around (`takes_reference`)
        return cst.Name(name) if use_helper(t.ctx, name) else None
    own = rewrite.option(f"{called}.params")
    params = tuple(own.split()) if own else rewrite.params
    call = t.call
    if params:
        bound = bound_arguments(call, params)
        for option in ONLY_LITERALS:
            unwanted = rewrite.option(f"{called}.{option}")
            if unwanted in bound:  # its literal: another value is declined (`declines`)
                call = _without_argument(call, bound[unwanted])
    if not use_helper(t.ctx, name):
        return None
    return call.with_changes(func=cst.Name(name))


def _without_argument(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    """`call` without the argument whose value is `value` (its last comma goes with it; the
    line break before `)` stays when the last argument goes)."""
    args = [arg for arg in call.args if arg.value is not value]
    if args:
        changes: dict[str, object] = {"comma": cst.MaybeSentinel.DEFAULT}
        if call.args[-1].value is value:
            changes["whitespace_after_arg"] = call.args[-1].whitespace_after_arg
        args[-1] = args[-1].with_changes(**changes)
    return call.with_changes(args=args)
