"""Calls that become a call of a helper added to the file, with the same arguments: the helper
does what the torch_xla function did, with torch.distributed (helpers.py)."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.helpers import HELPERS, use_helper
from neuron_migrate.rewrite.codemod.targets import CallTarget, expression
from neuron_migrate.rewrite.codemod.templates import bind_arguments, last_component


@expression("helper-call")
def helper_call(t: CallTarget) -> cst.BaseExpression | None:
    """`xm.RateTracker(...)` -> `NeuronRateTracker(...)`. The rule's options name the helper,
    by the called function's last name or as `helper`; `params`, when given, is the signature
    the arguments must fit (anything else is marked)."""
    rewrite = t.rule.rewrite
    assert rewrite is not None
    called = last_component(t.site.qualname or "")
    name = rewrite.option(called) or rewrite.option("helper")
    if name is None or name not in HELPERS:
        return None
    if rewrite.params and bind_arguments(t.call, rewrite.params) is None:
        return None
    if not use_helper(t.ctx, name):
        return None
    return t.call.with_changes(func=cst.Name(name))
