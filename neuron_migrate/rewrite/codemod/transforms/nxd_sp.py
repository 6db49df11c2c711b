"""NxD's sequence parallelism on native PyTorch (`sp_helpers.py`): the parallel linear layers'
`sequence_parallel_enabled` (a literal or a value known at run time, which the helper reads)
and NxD's LayerNorm, whose `sequence_parallel_enabled` becomes SequenceParallel. What a call
must look like to be rewritten is in `declines`."""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.targets import CallTarget, expression
from neuron_migrate.rewrite.codemod.templates import bound_arguments, render
from neuron_migrate.rewrite.codemod.transforms._build import keyword, with_commas
from neuron_migrate.scan.analyzer.declines import NXD_LAYER_NORM

_SEQUENCE_PARALLEL = ("sequence_parallel_enabled", "sequence_dimension")
# What torch.nn.LayerNorm takes of NxD's LayerNorm (its own signature, less the flag).
_NORM_KEYWORDS = ("eps", "elementwise_affine", "device", "dtype")


def sequence_parallel_keywords(values: Mapping[str, cst.BaseExpression]) -> tuple[str, ...]:
    """The sequence-parallel arguments a parallel linear layer's helper takes: none where the
    flag is absent or a literal False (NxD reads no sequence_dimension then)."""
    flag = values.get("sequence_parallel_enabled")
    if flag is None or (isinstance(flag, cst.Name) and flag.value == "False"):
        return ()
    return tuple(k for k in _SEQUENCE_PARALLEL if k in values)


@expression("nxd-layer-norm")
def nxd_layer_norm(t: CallTarget) -> cst.BaseExpression | None:
    """LayerNorm(shape, eps=e, sequence_parallel_enabled=s) ->
    neuron_sequence_parallel_norm(torch.nn.LayerNorm(shape, eps=e), sequence_parallel_enabled=s);
    without the flag (or with a literal False) the plain torch.nn.LayerNorm, which is NxD's."""
    values = bound_arguments(t.call, NXD_LAYER_NORM)
    args = [cst.Arg(values["normalized_shape"])]
    args += [keyword(k, values[k]) for k in _NORM_KEYWORDS if k in values]
    norm = cst.Call(func=render("torch.nn.LayerNorm", t.ctx), args=with_commas(args))
    flags = sequence_parallel_keywords(values)
    if not flags:
        return norm
    if not use_helper(t.ctx, "neuron_sequence_parallel_norm"):
        return None
    helper_args = [cst.Arg(norm), keyword(flags[0], values[flags[0]])]
    return cst.Call(func=cst.Name("neuron_sequence_parallel_norm"), args=with_commas(helper_args))
