"""The XLA-based torch-neuronx's inference API, on the native device."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.targets import CallTarget, expression
from neuron_migrate.rewrite.codemod.templates import bound_arguments
from neuron_migrate.rewrite.codemod.transforms._build import with_commas
from neuron_migrate.scan.analyzer.declines import TRACE


@expression("neuron-trace")
def neuron_trace(t: CallTarget) -> cst.BaseExpression | None:
    """The legacy trace(func, example_inputs, ...) -> neuron_trace(func, example_inputs), a
    helper added to the file: a copy of the model compiled with the neuron backend and warmed
    up on the example inputs, taking and giving CPU tensors as the traced module did. The
    options left (a compiler work directory, where the weights are kept) change nothing that
    runs; the others are declined (`declines.neuron_trace`)."""
    values = bound_arguments(t.call, TRACE)
    if not use_helper(t.ctx, "neuron_trace"):
        return None
    args = [cst.Arg(values["func"]), cst.Arg(values["example_inputs"])]
    return cst.Call(func=cst.Name("neuron_trace"), args=with_commas(args))
