"""Why a transform leaves a call for a person, from the call's arguments and its statement.

One function per transform, read by `fixability.fix_blocker`, which the scan and the codemod
both ask: a transform is run only where its function here answers "", so the transform itself
holds no condition of its own. Each reads the call as the analyzer recorded it (`Site.call_args`,
`Site.statement`), and the signatures here are the ones the transforms bind.
"""

from __future__ import annotations

from collections.abc import Callable

from neuron_migrate.ruleset import Rule
from neuron_migrate.scan.analyzer.arguments import Arg, bind_site, is_bool, is_none
from neuron_migrate.scan.analyzer.sites import Site

# The signatures the transforms bind a call's arguments to (torch_xla's, by parameter name).
ALL_REDUCE = ("reduce_type", "inputs", "scale", "groups", "pin_layout")
ALL_GATHER = ("value", "dim", "groups", "output", "pin_layout")
REDUCE_SCATTER = (
    "reduce_type",
    "input",
    "scale",
    "scatter_dim",
    "shard_count",
    "groups",
    "output",
    "pin_layout",
)
MESH_REDUCE = ("tag", "data", "reduce_fn")
OPTIMIZER_STEP = ("optimizer", "barrier", "optimizer_args", "groups", "pin_layout")
RENDEZVOUS = ("tag", "payload", "replicas")
# xm.save(data, file_or_path, ...); torch_xla.utils.serialization.save(data, path, ...)
SAVES = (
    ("data", "file_or_path", "master_only", "global_master"),
    ("data", "path", "master_only", "global_master"),
)

# xm.REDUCE_* names (and their string values) -> dist.ReduceOp members.
REDUCE_OPS = {
    "SUM": "SUM",
    "MUL": "PRODUCT",
    "AND": "BAND",
    "OR": "BOR",
    "MIN": "MIN",
    "MAX": "MAX",
}
# Reductions `dist.reduce_scatter_tensor` takes on every backend that implements it.
REDUCE_SCATTER_OPS = frozenset({"SUM", "PRODUCT", "MIN", "MAX"})
_REDUCE_CONSTANT = "torch_xla.core.xla_model.REDUCE_"

_UNBOUND = "arguments the rewrite cannot match to the signature (unpacked or unknown)"
_RESULT = "the result is used inside an expression or dropped: rewritten only as `y = ...`"


def reduce_op_name(op: Arg) -> str | None:
    """The xm.REDUCE_* name an argument stands for ("SUM"), by constant or string value; None
    when it is known only at run time or is no reduction."""
    if op.form == "literal" and op.text[:1] in ("'", '"'):
        name = op.text[1:-1].upper()
    elif op.qualname is not None and op.qualname.startswith(_REDUCE_CONSTANT):
        name = op.qualname[len(_REDUCE_CONSTANT) :]
    else:
        return None
    return name if name in REDUCE_OPS else None


def _result(site: Site, value: Arg | None = None) -> str:
    """The statement transforms that write `y = ...; dist.op(y, value)`: a result that goes to
    a name (a temporary for a `return`), and not the name `value` is read from."""
    if site.statement not in ("assignment", "return"):
        return _RESULT
    if value is not None and site.target == value.text:
        return "the result replaces its own input: a person decides"
    return ""


def _groups(values: dict[str, Arg], *params: str) -> str:
    if all(is_none(values.get(p)) for p in params):
        return ""
    return "replica groups or an output buffer: a person decides"


def all_reduce(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, ALL_REDUCE)
    if values is None or "reduce_type" not in values or "inputs" not in values:
        return _UNBOUND
    if reason := _groups(values, "groups"):
        return reason
    if reduce_op_name(values["reduce_type"]) is None:
        return "a reduce op known only at run time: a person decides"
    inputs = values["inputs"]
    if inputs.form in ("list", "tuple"):  # reduced in place, tensor by tensor
        if site.statement != "expression" or not site.own_line:
            return "a list reduced in place: rewritten only as a call statement of its own line"
        return ""
    return _result(site)


def all_gather(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, ALL_GATHER)
    if values is None or "value" not in values:
        return _UNBOUND
    if reason := _groups(values, "groups", "output"):
        return reason
    value = values["value"]
    if value.form != "name":
        return "the value gathered is an expression the rewrite would evaluate twice"
    return _result(site, value)


def reduce_scatter(rule: Rule, site: Site) -> str:
    """xm.reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, ...): only
    dimension 0 has a native twin without a transpose around the call."""
    values = bind_site(site.call_args, REDUCE_SCATTER)
    needed = ("reduce_type", "input", "scale", "scatter_dim", "shard_count")
    if values is None or any(p not in values for p in needed):
        return _UNBOUND
    if reason := _groups(values, "groups", "output"):
        return reason
    if not values["scatter_dim"].is_literal("0"):
        return "scatter_dim other than 0 needs a transpose: a person decides"
    value = values["input"]
    if value.form != "name":
        return "the input is an expression the rewrite would evaluate three times"
    name = reduce_op_name(values["reduce_type"])
    if name is None or REDUCE_OPS[name] not in REDUCE_SCATTER_OPS:
        return "a reduce op dist.reduce_scatter_tensor does not take, or one known at run time"
    return _result(site, value)


def mesh_reduce(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, MESH_REDUCE)
    if values is None or "data" not in values or "reduce_fn" not in values:
        return _UNBOUND
    if reason := _result(site):
        return reason
    if not site.own_line:
        return "rewritten only as a statement on a line of its own"
    return ""


def optimizer_step(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, OPTIMIZER_STEP)
    if values is None or "optimizer" not in values:
        return _UNBOUND
    return _groups(values, "groups")


def save_on_master(rule: Rule, site: Site) -> str:
    values = save_arguments(site)
    if values is None:
        return _UNBOUND
    if not (is_bool(values.get("master_only")) and is_bool(values.get("global_master"))):
        return "which process saves is known only at run time: a person decides"
    return ""


def save_arguments(site: Site) -> dict[str, Arg] | None:
    """The arguments of a save, bound by either signature; None without data and a path."""
    for params in SAVES:
        values = bind_site(site.call_args, params)
        if values is not None:
            return values if "data" in values and params[1] in values else None
    return None


def rendezvous(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, RENDEZVOUS)
    if values is None:
        return _UNBOUND
    payload, replicas = values.get("payload"), values.get("replicas")
    if payload is not None and not payload.is_literal("''", "b''"):
        return "a payload to exchange: a person decides"
    if replicas is not None and not (is_none(replicas) or replicas.text == "[]"):
        return "a subset of replicas: a person decides"
    return ""


DECLINES: dict[str, Callable[[Rule, Site], str]] = {
    "all-reduce": all_reduce,
    "all-gather": all_gather,
    "reduce-scatter": reduce_scatter,
    "mesh-reduce": mesh_reduce,
    "optimizer-step": optimizer_step,
    "save-on-master": save_on_master,
    "rendezvous": rendezvous,
}
