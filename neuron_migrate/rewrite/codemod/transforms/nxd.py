"""NeuronX Distributed's tensor parallelism on native PyTorch: parallel_state becomes a
DeviceMesh and the parallel linear layers full-size nn.Linear modules sharded by a tensor-parallel
plan (`tp_helpers.py`). What each call must look like to be rewritten is in `declines`."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.targets import CallTarget, expression
from neuron_migrate.rewrite.codemod.templates import bound_arguments, last_component, render
from neuron_migrate.rewrite.codemod.transforms._build import keyword, with_commas
from neuron_migrate.rewrite.codemod.transforms.nxd_sp import sequence_parallel_keywords
from neuron_migrate.scan.analyzer.declines import (
    INITIALIZE_MODEL_PARALLEL,
    PARALLEL_EMBEDDING,
    PARALLEL_LINEARS,
)

# The nn.Linear arguments a parallel layer passes on (NxD's `bias` default is nn.Linear's).
_LINEAR_KEYWORDS = ("bias", "dtype", "device")
# What the embedding helper takes of ParallelEmbedding's arguments.
_EMBEDDING_KEYWORDS = ("shard_across_embedding", "init_method")


@expression("nxd-device-mesh")
def nxd_device_mesh(t: CallTarget) -> cst.BaseExpression | None:
    """initialize_model_parallel(tensor_model_parallel_size=N) ->
    neuron_init_device_mesh(tensor_model_parallel_size=N), a ("dp", "tp") DeviceMesh; a
    pipeline size of 1 says nothing and goes."""
    values = bound_arguments(t.call, INITIALIZE_MODEL_PARALLEL)
    if not use_helper(t.ctx, "neuron_init_device_mesh"):
        return None
    args = []
    if "tensor_model_parallel_size" in values:
        args.append(keyword("tensor_model_parallel_size", values["tensor_model_parallel_size"]))
    return cst.Call(func=cst.Name("neuron_init_device_mesh"), args=with_commas(args))


@expression("nxd-mesh-query")
def nxd_mesh_query(t: CallTarget) -> cst.BaseExpression | None:
    """get_tensor_model_parallel_rank() -> neuron_device_mesh()["tp"].get_local_rank(), and so
    on: the rule's option for the function names the mesh dimension and the method. A group
    asked for as_list=True is every replica group of that kind, the mesh's rows or columns: the
    `NAME.as_list` option is the expression on the mesh, and a function with that option alone
    (get_data_parallel_replica_groups()) always returns the list."""
    assert t.rule.rewrite is not None
    name = last_component(t.site.qualname or "")
    as_list = bound_arguments(t.call, ("as_list",)).get("as_list")
    if t.rule.rewrite.option(name) is None or (as_list is not None and not _is_false(as_list)):
        replica_groups = t.rule.rewrite.option(f"{name}.as_list")
        if replica_groups is None or not use_helper(t.ctx, "neuron_device_mesh"):
            return None
        return render(f"neuron_device_mesh().{replica_groups}", t.ctx)
    option = t.rule.rewrite.option(name)
    if option is None or not use_helper(t.ctx, "neuron_device_mesh"):
        return None
    dim, method = option.split()
    return render(f'neuron_device_mesh()["{dim}"].{method}()', t.ctx)


def _is_false(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "False"


@expression("nxd-parallel-linear")
def nxd_parallel_linear(t: CallTarget) -> cst.BaseExpression | None:
    """ColumnParallelLinear(i, o, bias=b, gather_output=g) ->
    neuron_column_parallel(torch.nn.Linear(i, o, bias=b), gather_output=g) (RowParallelLinear:
    neuron_row_parallel, input_is_parallel): the full-size layer and its tensor-parallel style.
    With an init_method the layer is made by skip_init and the helper initialises it as NxD
    did, the full weight first. A stride (fused weights) gives NeuronStridedColumnParallel."""
    assert t.rule.rewrite is not None
    name = last_component(t.site.qualname or "")
    params = PARALLEL_LINEARS[name]
    values = bound_arguments(t.call, params)
    sequence_parallel = sequence_parallel_keywords(values)
    stride = values.get("stride")
    strided = stride is not None and not (isinstance(stride, cst.Integer) and stride.value == "1")
    option = "strided" if strided else "sequence_parallel" if sequence_parallel else None
    helper = t.rule.rewrite.option(f"{name}.{option}" if option else name)
    if helper is None or not use_helper(t.ctx, helper):
        return None
    linear_args = [cst.Arg(values["input_size"]), cst.Arg(values["output_size"])]
    linear_args += [keyword(k, values[k]) for k in _LINEAR_KEYWORDS if k in values]
    linear = _built("torch.nn.Linear", linear_args, "init_method" in values, t)
    args = [cst.Arg(linear)] + ([keyword("stride", stride)] if strided and stride else [])
    args += [keyword(k, values[k]) for k in (params[3], "init_method") if k in values]
    args += [keyword(k, values[k]) for k in sequence_parallel]
    return cst.Call(func=cst.Name(helper), args=with_commas(args))


@expression("nxd-parallel-embedding")
def nxd_parallel_embedding(t: CallTarget) -> cst.BaseExpression | None:
    """ParallelEmbedding(n, d, shard_across_embedding=s) ->
    neuron_parallel_embedding(torch.nn.Embedding(n, d), shard_across_embedding=s): the
    full-size table and its tensor-parallel style (norm_type, which only max_norm reads, goes)."""
    if not use_helper(t.ctx, "neuron_parallel_embedding"):
        return None
    values = bound_arguments(t.call, PARALLEL_EMBEDDING)
    table_args = [cst.Arg(values["num_embeddings"]), cst.Arg(values["embedding_dim"])]
    table_args += [keyword(k, values[k]) for k in ("device", "dtype") if k in values]
    table = _built("torch.nn.Embedding", table_args, "init_method" in values, t)
    args = [cst.Arg(table)]
    args += [keyword(k, values[k]) for k in _EMBEDDING_KEYWORDS if k in values]
    return cst.Call(func=cst.Name("neuron_parallel_embedding"), args=with_commas(args))


def _built(cls: str, args: list[cst.Arg], own_init: bool, t: CallTarget) -> cst.Call:
    """`cls(*args)`; with an init_method (`own_init`), `torch.nn.utils.skip_init(cls, *args)`:
    the helper then initialises it in NxD's order, drawing NxD's random numbers."""
    if not own_init:
        return cst.Call(func=render(cls, t.ctx), args=with_commas(args))
    skip = render("torch.nn.utils.skip_init", t.ctx)
    return cst.Call(func=skip, args=with_commas([cst.Arg(render(cls, t.ctx)), *args]))
