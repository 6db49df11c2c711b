"""Collectives: XLA's functional forms become torch.distributed's in-place calls."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.rewrite.codemod.targets import (
    CallTarget,
    NewStatement,
    StatementTarget,
    expression,
    statement,
)
from neuron_migrate.rewrite.codemod.templates import bind_arguments, render, render_statements
from neuron_migrate.rewrite.codemod.transforms._build import is_none, number, string_value

# xm.REDUCE_* constants (and their string values) -> dist.ReduceOp members.
REDUCE_OPS = {
    "SUM": "SUM",
    "MUL": "PRODUCT",
    "AND": "BAND",
    "OR": "BOR",
    "MIN": "MIN",
    "MAX": "MAX",
}


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


def _result_name(t: StatementTarget, temporary: str) -> tuple[str, list[NewStatement]] | None:
    """Where the result goes: the assignment's target, or a temporary returned afterwards."""
    target = t.assign_target
    if target is not None:
        return cst.Module([]).code_for_node(target), []
    if t.is_return:
        return temporary, [cst.Return(cst.Name(temporary))]
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


@statement("all-reduce")
def all_reduce(t: StatementTarget) -> list[NewStatement] | None:
    """xm.all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True)."""
    values = bind_arguments(t.call, ("reduce_type", "inputs", "scale", "groups", "pin_layout"))
    if values is None or "reduce_type" not in values or "inputs" not in values:
        return None
    if not is_none(values.get("groups")):
        return None
    original = bind_arguments(
        t.original_call, ("reduce_type", "inputs", "scale", "groups", "pin_layout")
    )
    assert original is not None
    op = reduce_op(t.ctx, values["reduce_type"], original["reduce_type"])
    if op is None:
        return None
    scale = values.get("scale")
    scaled = scale is not None and number(scale) != 1.0
    inputs = values["inputs"]
    holes = {"op": op, "inputs": inputs, **({"scale": scale} if scale is not None else {})}
    if isinstance(inputs, (cst.List, cst.Tuple)):  # in place on every tensor of the list
        if not t.is_expression_statement or not t.alone:
            return None
        body = "    dist.all_reduce(_tensor, op={op})\n" + (
            "    _tensor.mul_({scale})\n" if scaled else ""
        )
        return render_statements("for _tensor in {inputs}:\n" + body, t.ctx, holes)
    result = _result_name(t, "_reduced")
    if result is None:
        return None  # a discarded result of the tensor form, or an expression: a person decides
    name, tail = result
    text = f"{name} = {{inputs}}.clone()\ndist.all_reduce({name}, op={{op}})\n"
    if scaled:
        text += f"{name}.mul_({{scale}})\n"
    return [*_small(render_statements(text, t.ctx, holes)), *tail]


@statement("all-gather")
def all_gather(t: StatementTarget) -> list[NewStatement] | None:
    """y = xm.all_gather(value, dim=0) -> gather into a list of per-rank tensors, then cat."""
    values = bind_arguments(t.call, ("value", "dim", "groups", "output", "pin_layout"))
    if values is None or "value" not in values:
        return None
    if not (is_none(values.get("groups")) and is_none(values.get("output"))):
        return None
    value = values["value"]
    if not isinstance(value, (cst.Name, cst.Attribute)):
        return None  # evaluated twice below: only plain names are safe
    result = _result_name(t, "_gathered")
    if result is None or result[0] == _code(value):
        return None
    name, tail = result
    dim = values.get("dim") or cst.Integer("0")
    text = (
        f"{name} = [torch.empty_like({{value}}) for _ in range(dist.get_world_size())]\n"
        f"dist.all_gather({name}, {{value}})\n"
        f"{name} = torch.cat({name}, dim={{dim}})\n"
    )
    return [*_small(render_statements(text, t.ctx, {"value": value, "dim": dim})), *tail]


# Reductions `dist.reduce_scatter_tensor` takes on every backend that implements it.
_REDUCE_SCATTER_OPS = frozenset({"SUM", "PRODUCT", "MIN", "MAX"})
_REDUCE_SCATTER_PARAMS = (
    "reduce_type",
    "input",
    "scale",
    "scatter_dim",
    "shard_count",
    "groups",
    "output",
    "pin_layout",
)


@statement("reduce-scatter")
def reduce_scatter(t: StatementTarget) -> list[NewStatement] | None:
    """y = xm.reduce_scatter(op, x, scale, scatter_dim=0, shard_count=ws) -> allocate this rank's
    shard, dist.reduce_scatter_tensor into it, then scale."""
    values = bind_arguments(t.call, _REDUCE_SCATTER_PARAMS)
    if values is None or any(
        p not in values for p in ("reduce_type", "input", "scale", "scatter_dim", "shard_count")
    ):
        return None
    if not (is_none(values.get("groups")) and is_none(values.get("output"))):
        return None
    # another scatter_dim needs a transpose around the call: `fix_blocker` leaves it
    value = values["input"]
    if not isinstance(value, (cst.Name, cst.Attribute)):
        return None  # evaluated three times below (and a list literal is the coalesced form)
    original = bind_arguments(t.original_call, _REDUCE_SCATTER_PARAMS)
    assert original is not None
    op = reduce_op(t.ctx, values["reduce_type"], original["reduce_type"])
    if op is None or not (isinstance(op, cst.Attribute) and op.attr.value in _REDUCE_SCATTER_OPS):
        return None
    result = _result_name(t, "_scattered")
    if result is None or result[0] == _code(value):
        return None
    name, tail = result
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
    values = bind_arguments(t.call, ("tag", "data", "reduce_fn"))
    if values is None or "data" not in values or "reduce_fn" not in values:
        return None
    if (t.assign_target is None and not t.is_return) or not t.alone:
        return None
    # Without a process group (a single process), XLA reduced the one value it had. `data` is
    # written once, so it is evaluated once and a marker on it has one place to go.
    text = (
        "_gathered = [{data}]\n"
        "if dist.is_initialized():\n"
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
