"""Collectives: XLA's functional forms become torch.distributed's in-place calls.

Which calls each transform takes (their arguments, the statement they stand in) is decided in
`scan.analyzer.declines`, which the scan reads too: a transform runs only on a call it takes.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.targets import (
    CallTarget,
    NewStatement,
    StatementTarget,
    expression,
    statement,
)
from neuron_migrate.rewrite.codemod.templates import bound_arguments, render, render_statements
from neuron_migrate.rewrite.codemod.transforms._build import number, string_value
from neuron_migrate.scan.analyzer.declines import (
    ALL_GATHER,
    ALL_REDUCE,
    MESH_REDUCE,
    REDUCE_OPS,
    REDUCE_SCATTER,
    gathers_in_place,
)


def reduce_op(
    ctx: FileContext, op: cst.BaseExpression, original: cst.BaseExpression
) -> cst.BaseExpression | None:
    """dist.ReduceOp.X for an xm.REDUCE_X constant or its string value ("sum"); None otherwise."""
    name = None
    text = string_value(op)
    if text is not None:
        name = text.upper()
    else:
        qualname = ctx.qualname_of_reference(original)
        if qualname and qualname.startswith("torch_xla.core.xla_model.REDUCE_"):
            name = qualname.rpartition("REDUCE_")[2]
    if name not in REDUCE_OPS:
        return None
    return render(f"dist.ReduceOp.{REDUCE_OPS[name]}", ctx)


@expression("reduce-op")
def reduce_op_constant(t: CallTarget) -> cst.BaseExpression | None:
    # A constant handed to a torch_xla call is converted by that call's own transform (or left,
    # with the call, for a person): converting it here would break the call that stays.
    if len(t.parents) >= 2 and isinstance(t.parents[-1], cst.Arg):
        enclosing = t.parents[-2]
        qualname = t.ctx.qualname_of_call(enclosing) if isinstance(enclosing, cst.Call) else None
        if qualname and qualname.startswith("torch_xla"):
            assert isinstance(enclosing, cst.Call)
            t.follows = enclosing
            return t.node
    return reduce_op(t.ctx, t.node, t.original)


def _result_name(t: StatementTarget, temporary: str) -> tuple[str, list[NewStatement]]:
    """Where the result goes: the assignment's target, or a temporary returned afterwards (a
    call in another statement is declined)."""
    target = t.assign_target
    if target is not None:
        return cst.Module([]).code_for_node(target), []
    assert t.is_return
    return temporary, [cst.Return(cst.Name(temporary))]


@statement("all-reduce")
def all_reduce(t: StatementTarget) -> list[NewStatement] | None:
    """xm.all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True)."""
    values = bound_arguments(t.call, ALL_REDUCE)
    original = bound_arguments(t.original_call, ALL_REDUCE)
    op = reduce_op(t.ctx, values["reduce_type"], original["reduce_type"])
    assert op is not None  # a reduce op known only at run time is declined
    scale = values.get("scale")
    scaled = scale is not None and number(scale) != 1.0
    inputs = values["inputs"]
    holes = {"op": op, "inputs": inputs, **({"scale": scale} if scale is not None else {})}
    groups = values.get("groups")
    group = ""
    if groups is not None and not (isinstance(groups, cst.Name) and groups.value == "None"):
        if not use_helper(t.ctx, "neuron_replica_group"):
            return None
        group, holes["groups"] = ", group=neuron_replica_group({groups})", groups
    if isinstance(inputs, (cst.List, cst.Tuple)):  # in place on every tensor of the list
        head = "_group = neuron_replica_group({groups})\n" if group else ""
        body = f"    dist.all_reduce(_tensor, op={{op}}{', group=_group' if group else ''})\n"
        body += "    _tensor.mul_({scale})\n" if scaled else ""
        text = head + "for _tensor in {inputs}:\n" + body
        return _small(render_statements(text, t.ctx, holes))
    name, tail = _result_name(t, "_reduced")
    text = f"{name} = {{inputs}}.clone()\ndist.all_reduce({name}, op={{op}}{group})\n"
    if scaled:
        text += f"{name}.mul_({{scale}})\n"
    return [*_small(render_statements(text, t.ctx, holes)), *tail]


@expression("all-gather")
def all_gather_call(t: CallTarget) -> cst.BaseExpression | None:
    """xm.all_gather(...) anywhere else -> neuron_all_gather(...), a helper of the same
    signature added to the file (the value is evaluated once)."""
    if not use_helper(t.ctx, "neuron_all_gather"):
        return None
    return t.call.with_changes(func=cst.Name("neuron_all_gather"))


@statement("all-gather")
def all_gather(t: StatementTarget) -> list[NewStatement] | None:
    """y = xm.all_gather(value, dim=0) -> gather into a list of per-rank tensors, then cat; any
    other statement (an expression gathered, the result used in place) calls the helper."""
    if not gathers_in_place(t.site):
        assert t.small is not None
        new = all_gather_call(t)
        return None if new is None else [t.small.with_changes(value=new)]
    values = bound_arguments(t.call, ALL_GATHER)
    value = values["value"]  # a plain name: it is evaluated twice below
    name, tail = _result_name(t, "_gathered")
    dim = values.get("dim") or cst.Integer("0")
    text = (
        f"{name} = [torch.empty_like({{value}}) for _ in range(dist.get_world_size())]\n"
        f"dist.all_gather({name}, {{value}})\n"
        f"{name} = torch.cat({name}, dim={{dim}})\n"
    )
    return [*_small(render_statements(text, t.ctx, {"value": value, "dim": dim})), *tail]


@statement("reduce-scatter")
def reduce_scatter(t: StatementTarget) -> list[NewStatement] | None:
    """y = xm.reduce_scatter(op, x, scale, scatter_dim=0, shard_count=ws) -> allocate this rank's
    shard, dist.reduce_scatter_tensor into it, then scale."""
    values = bound_arguments(t.call, REDUCE_SCATTER)
    value = values["input"]  # a plain name: it is evaluated three times below
    original = bound_arguments(t.original_call, REDUCE_SCATTER)
    op = reduce_op(t.ctx, values["reduce_type"], original["reduce_type"])
    assert op is not None  # one dist.reduce_scatter_tensor does not take is declined
    name, tail = _result_name(t, "_scattered")
    scale = values["scale"]
    text = (
        f"{name} = {{value}}.new_empty(({{value}}.shape[0] // dist.get_world_size(),)"
        " + {value}.shape[1:])\n"
        f"dist.reduce_scatter_tensor({name}, {{value}}, op={{op}})\n"
    )
    if number(scale) != 1.0:
        text += f"{name}.mul_({{scale}})\n"
    holes = {"value": value, "op": op, "scale": scale}
    return [*_small(render_statements(text, t.ctx, holes)), *tail]


@statement("mesh-reduce")
def mesh_reduce(t: StatementTarget) -> list[NewStatement] | None:
    """y = xm.mesh_reduce(tag, data, reduce_fn) -> all_gather_object, then reduce_fn(list)."""
    values = bound_arguments(t.call, MESH_REDUCE)
    # Without a process group (a single process), XLA reduced the one value it had. Several
    # processes launched without one (WORLD_SIZE) reach dist.get_world_size(), which raises:
    # XLA reduced over all of them. `data` is written once, so it is evaluated once and a
    # marker on it has one place to go.
    text = (
        "_gathered = [{data}]\n"
        'if dist.is_initialized() or int(os.environ.get("WORLD_SIZE", 1)) > 1:\n'
        "    _gathered = _gathered * dist.get_world_size()\n"
        "    dist.all_gather_object(_gathered, _gathered[0])\n"
    )
    head = _small(render_statements(text, t.ctx, {"data": values["data"]}))
    reduced = render("{reduce_fn}(_gathered)", t.ctx, {"reduce_fn": values["reduce_fn"]})
    small = t.small
    assert small is not None
    last = small.with_changes(value=reduced)
    return [*head, last]


def _small(statements: list[cst.BaseStatement]) -> list[NewStatement]:
    """Simple statement lines unwrapped to their small statements, so they can share the line
    machinery of the driver (comments, markers); compound statements stay whole."""
    out: list[NewStatement] = []
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out
