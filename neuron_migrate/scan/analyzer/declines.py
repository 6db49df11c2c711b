"""Why a transform leaves a call for a person, from the call's arguments and its statement.

One function per transform, read by `fixability.fix_blocker`, which the scan and the codemod
both ask: a transform is run only where its function here answers "", so the transform itself
holds no condition of its own. Each reads the call as the analyzer recorded it (`Site.call_args`,
`Site.statement`), and the signatures here are the ones the transforms bind.
"""

from __future__ import annotations

from collections.abc import Callable

from neuron_migrate.ruleset import Rule
from neuron_migrate.ruleset.model import TEMPLATE_HOLE, TEMPLATE_RENAME
from neuron_migrate.scan.analyzer.arguments import (
    DOUBLE_STAR,
    STAR,
    Arg,
    bind_site,
    is_bool,
    is_none,
)
from neuron_migrate.scan.analyzer.sites import API_ROOTS, Site
from neuron_migrate.scan.analyzer.trainer_declines import nxd_trainer

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

STEP_MARKER = ("wait", "reset_scope")
IS_MASTER = ("local",)
# xm.xla_device(n, devkind); torch_xla.device(index)
XLA_DEVICE = (("n", "devkind"), ("index",))
SUPPORTED_DEVICES = ("devkind", "max_devices")
STEP_CLOSURE = ("closure", "args", "run_async")
AUTOCAST = ("device", "enabled", "dtype", "cache_enabled")
GRAD_SCALER = (
    "init_scale",
    "growth_factor",
    "backoff_factor",
    "growth_interval",
    "enabled",
    "use_zero_grad",
)
LOADER_OPTIONS = (
    "loader_prefetch_size",
    "device_prefetch_size",
    "host_to_device_transfer_threads",
    "batches_per_execution",
    "loader_prefetch_time",
    "fixed_batch_size",
    "batchdim",
)
DEVICE_LOADER = ("loader", "device", *LOADER_OPTIONS)
PARALLEL_LOADER = ("loader", "devices", *LOADER_OPTIONS)
PER_DEVICE_LOADER = ("device",)
SPAWN = ("fn", "args", "nprocs", "join", "daemon", "start_method")
LAUNCH = ("fn", "args", "start_method", "debug_single_process")
# torch_neuronx.trace(func, example_inputs, *_, input_output_aliases={}, compiler_workdir=None,
# compiler_args=None, partitioner_config=None, inline_weights_to_neff=True, cpu_backend=False)
TRACE = (
    "func",
    "example_inputs",
    "input_output_aliases",
    "compiler_workdir",
    "compiler_args",
    "partitioner_config",
    "inline_weights_to_neff",
    "cpu_backend",
)

# NxD's parallel_state.initialize_model_parallel and the tensor-parallel linear layers
# (neuronx_distributed.parallel_layers.layers), by parameter name.
INITIALIZE_MODEL_PARALLEL = ("tensor_model_parallel_size", "pipeline_model_parallel_size")
_PARALLEL_LINEAR_OPTIONS = (
    "dtype",
    "device",
    "stride",
    "init_method",
    "sequence_parallel_enabled",
    "sequence_dimension",
    "keep_master_weight",
    "skip_bias_add",
    "pad",
)
PARALLEL_LINEARS = {
    "ColumnParallelLinear": (
        "input_size",
        "output_size",
        "bias",
        "gather_output",
        *_PARALLEL_LINEAR_OPTIONS,
    ),
    "RowParallelLinear": (
        "input_size",
        "output_size",
        "bias",
        "input_is_parallel",
        *_PARALLEL_LINEAR_OPTIONS,
    ),
}
PARALLEL_EMBEDDING = (
    "num_embeddings",
    "embedding_dim",
    "padding_idx",
    "max_norm",
    "norm_type",
    "scale_grad_by_freq",
    "sparse",
    "init_method",
    "device",
    "dtype",
    "shard_across_embedding",
    "pad",
)
# NxD's LayerNorm (parallel_layers.layer_norm): torch.nn.LayerNorm's own, and the flag.
NXD_LAYER_NORM = (
    "normalized_shape",
    "eps",
    "elementwise_affine",
    "device",
    "dtype",
    "sequence_parallel_enabled",
)
# A layer option whose other values the plan has no equivalent for, and why.
_PARALLEL_LINEAR_DECLINED = {
    "skip_bias_add": "the bias returned beside the output: a person decides",
    "pad": "a padded partition: a person decides",
    "keep_master_weight": "the full master weight kept beside the shard: a person decides",
}

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
_WITH = "rewritten only as a with item whose value is not bound (no `as`)"
_UNPACKING = "a tuple of arguments with unpacked items: a person decides"
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
    """Either form may name replica groups (reduced over this rank's own group); the list is
    reduced in place, tensor by tensor."""
    values = bind_site(site.call_args, ALL_REDUCE)
    if values is None or "reduce_type" not in values or "inputs" not in values:
        return _UNBOUND
    if reduce_op_name(values["reduce_type"]) is None:
        return "a reduce op known only at run time: a person decides"
    inputs = values["inputs"]
    if inputs.form in ("list", "tuple"):  # reduced in place, tensor by tensor
        if site.statement != "expression" or not site.own_line:
            return "a list reduced in place: rewritten only as a call statement of its own line"
        return ""
    return _result(site)


def all_gather(rule: Rule, site: Site) -> str:
    """Any value, in any expression: `y = xm.all_gather(name)` is gathered in place; any other
    shape (`xm.all_gather(torch.cat(preds)).cpu()`) calls the helper `neuron_all_gather`."""
    values = bind_site(site.call_args, ALL_GATHER)
    if values is None or "value" not in values:
        return _UNBOUND
    return _groups(values, "groups", "output")


def gathers_in_place(site: Site) -> bool:
    """Whether an `xm.all_gather` is written out in place (`y = ...` of a plain name, not its
    own input), rather than through the helper: the value is read twice there."""
    values = bind_site(site.call_args, ALL_GATHER)
    value = values.get("value") if values is not None else None
    return value is not None and value.form == "name" and not _result(site, value)


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
    """Any optimizer; replica groups are reduced over (neuron_optimizer_step_in_groups)."""
    values = bind_site(site.call_args, OPTIMIZER_STEP)
    if values is None or "optimizer" not in values:
        return _UNBOUND
    return ""


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


def _call_statement(site: Site) -> str:
    """Transforms that replace a call statement (deleted, or run as another call)."""
    return "" if site.statement == "expression" else "rewritten only as a call statement"


_RUN_TIME = "{} known only at run time: a person decides"


def step_marker(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, STEP_MARKER)
    if reason := _call_statement(site):
        return reason
    if values is None:
        return _UNBOUND
    return "" if is_bool(values.get("wait")) else _RUN_TIME.format("whether to wait is")


def is_master_ordinal(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, IS_MASTER)
    if values is None:
        return _UNBOUND
    return "" if is_bool(values.get("local")) else _RUN_TIME.format("which master is")


def master_print(rule: Rule, site: Site) -> str:
    """xm.master_print(*args, fd=sys.stdout, local=False, flush=False): print's arguments."""
    for arg in site.call_args:
        if arg.keyword in (None, STAR, DOUBLE_STAR, "fd", "flush"):
            continue
        if arg.keyword != "local":
            return _UNBOUND
        if not is_bool(arg):
            return _RUN_TIME.format("which master prints is")
    return ""


def xla_device(rule: Rule, site: Site) -> str:
    if any(bind_site(site.call_args, params) is not None for params in XLA_DEVICE):
        return ""
    return _UNBOUND


def devices_list(rule: Rule, site: Site) -> str:
    if not (site.qualname or "").endswith(".get_xla_supported_devices"):
        return _UNBOUND if site.call_args else ""
    values = bind_site(site.call_args, SUPPORTED_DEVICES)
    if values is None or not all(is_none(v) for v in values.values()):
        return "a device kind or a cap on the count: a person decides"
    if site.in_fstring:  # the replacement holds an f-string of its own
        return "an f-string inside an f-string needs Python 3.12"
    return ""


def fork_rng(rule: Rule, site: Site) -> str:
    if not (site.qualname or "").endswith(".fork_rng"):
        return "an RNG state of XLA's own (an int where torch has a ByteTensor): a person decides"
    return _UNBOUND if site.call_args else ""


def inline_step_closure(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, STEP_CLOSURE)
    if values is None or "closure" not in values:
        return _UNBOUND
    args = values.get("args")
    return _UNPACKING if args is not None and args.unpacking else ""


def autocast(rule: Rule, site: Site) -> str:
    return "" if bind_site(site.call_args, AUTOCAST) is not None else _UNBOUND


def grad_scaler(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, GRAD_SCALER)
    if values is None:
        return _UNBOUND
    zero_grad = values.get("use_zero_grad")
    if zero_grad is not None and not zero_grad.is_literal("False"):
        return "XLA's zero-grad optimizer step has no native twin: a person decides"
    return ""


def device_loader(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, DEVICE_LOADER)
    ok = values is not None and "loader" in values and "device" in values
    return "" if ok else "input_sharding= (SPMD) or an option the rewrite does not know"


def parallel_loader(rule: Rule, site: Site) -> str:
    values = bind_site(site.call_args, PARALLEL_LOADER)
    ok = values is not None and "loader" in values and "devices" in values
    if not ok:
        return _UNBOUND
    if site.method == "per_device_loader":  # the chained form becomes one device loader
        device = bind_site(site.method_args, PER_DEVICE_LOADER)
        return "" if device is not None and "device" in device else _UNBOUND
    return ""


def spawn(rule: Rule, site: Site) -> str:
    if reason := _call_statement(site):
        return reason
    values = bind_site(site.call_args, spawn_signature(site))
    if values is None or "fn" not in values:
        return _UNBOUND
    join = values.get("join")
    if join is not None and not join.is_literal("True"):
        return "the caller goes on while the workers run: not a plain call"
    fn = values["fn"]
    if fn.qualname is not None and fn.qualname.partition(".")[0] in API_ROOTS:
        return "a library function launched: a person decides"
    args = values.get("args")
    return _UNPACKING if args is not None and args.unpacking else ""


def spawn_signature(site: Site) -> tuple[str, ...]:
    return LAUNCH if (site.qualname or "").endswith(".launch") else SPAWN


def helper_call(rule: Rule, site: Site) -> str:
    """The signature a helper call must fit (its rule's `params`, or `NAME.params` for one
    function), and a `NAME.false_only` / `NAME.none_only` / `NAME.bool_only` parameter the device
    has no feature for (`groups=` replica subgroups, `write_xla_metrics=`). `NAME.in_place` says
    what the original did to its argument that the helper returns instead: a call whose value is
    dropped is kept for that effect alone, and left for a person."""
    rewrite = rule.rewrite
    assert rewrite is not None
    called = (site.qualname or "").rpartition(".")[2]
    if rewrite.option(called) is None and rewrite.option("helper") is None:
        return "no helper for this function of the rule: a person decides"
    if site.discarded and rewrite.option(f"{called}.in_place"):
        # the original changed its argument; the helper returns its result, here dropped
        return f"its value is dropped, and {rewrite.option(f'{called}.in_place')}"
    own = rewrite.option(f"{called}.params")
    params = tuple(own.split()) if own else rewrite.params
    if not params:
        return ""
    values = bind_site(site.call_args, params)
    if values is None:
        return _UNBOUND
    for option, literals in ONLY_LITERALS.items():
        unwanted = values.get(rewrite.option(f"{called}.{option}") or "")
        if unwanted is not None and not unwanted.is_literal(*literals):
            return "a feature the device lacks is asked for: a person decides"
    return ""


# A helper call's `NAME.false_only` / `NAME.none_only` parameter: rewritten only where the
# argument is absent or this literal (`groups=None`), and dropped. `NAME.bool_only`: a switch of
# a report the device does not have, dropped where it is a literal True or False
# (`write_xla_metrics=True`: the XLA metrics scalars, which name no result of the program).
# `NAME.zero_only`: a number whose feature the native call lacks (NxD's `label_smoothing=0.0`).
ONLY_LITERALS = {
    "false_only": ("False",),
    "none_only": ("None",),
    "bool_only": ("True", "False"),
    "zero_only": ("0", "0.0"),
}


def template(rule: Rule, site: Site) -> str:
    """A template of the call's arguments (not a rename): they must bind to its `params`, and
    each hole be given or have a default."""
    rewrite = rule.rewrite
    assert rewrite is not None and rewrite.template is not None
    name = (site.qualname or "").rpartition(".")[2]
    text = rewrite.template.replace("{name}", rewrite.option(name, name) or name)
    if TEMPLATE_RENAME.match(text):
        return ""
    values = bind_site(site.call_args, rewrite.params)
    if values is None:
        return _UNBOUND
    given = set(values) | {param for param, _ in rewrite.defaults}
    if any(hole not in given for hole in TEMPLATE_HOLE.findall(text)):
        return "an argument the replacement needs is not given"
    return ""


def neuron_trace(rule: Rule, site: Site) -> str:
    """torch_neuronx.trace: a model and its example inputs, positionally or by name (the
    signature takes nothing else positionally), and no option that changes what runs."""
    values = bind_site(site.call_args, TRACE)
    positional = [a for a in site.call_args if a.keyword is None]
    if values is None or len(positional) > 2 or "func" not in values:
        return _UNBOUND
    if "example_inputs" not in values:
        return _UNBOUND
    if not is_none(values.get("compiler_args")) or not is_none(values.get("partitioner_config")):
        return "neuronx-cc options or a partitioner: a person decides what the compile needs"
    if "input_output_aliases" in values:
        return "inputs aliased to outputs (device state): a person decides"
    backend = values.get("cpu_backend")
    if backend is not None and not backend.is_literal("False"):
        return "traced for the CPU backend: a person decides"
    return ""


def nxd_device_mesh(rule: Rule, site: Site) -> str:
    """initialize_model_parallel: a tensor-parallel size, and no pipeline parallelism."""
    values = bind_site(site.call_args, INITIALIZE_MODEL_PARALLEL)
    if values is None:
        return _UNBOUND
    pipeline = values.get("pipeline_model_parallel_size")
    if pipeline is not None and not pipeline.is_literal("1"):
        return "pipeline parallelism: torch.distributed.pipelining, a person decides"
    return ""


def nxd_mesh_query(rule: Rule, site: Site) -> str:
    """A parallel_state rank / size / group question: the group as itself (`as_list=False`), or
    as XLA's replica groups (`as_list=True`) where the rule says which ones; a replica-groups
    function (the `.as_list` option alone) takes no argument."""
    name = (site.qualname or "").rsplit(".", 1)[-1]
    rewrite = rule.rewrite
    if rewrite and rewrite.option(name) is None and rewrite.option(f"{name}.as_list"):
        return "" if bind_site(site.call_args, ()) is not None else _UNBOUND
    values = bind_site(site.call_args, ("as_list",))
    if values is None:
        return _UNBOUND
    as_list = values.get("as_list")
    if as_list is None or as_list.is_literal("False"):
        return ""
    if as_list.is_literal("True") and rule.rewrite and rule.rewrite.option(f"{name}.as_list"):
        return ""
    return "the group as a list of ranks, known only at run time: a person decides"


def nxd_parallel_embedding(rule: Rule, site: Site) -> str:
    """ParallelEmbedding: the sizes given, and none of the options that would make the native
    embedding differ from NxD's (a padding row NxD neither zeroes nor accepts at index 0, a
    renormalisation of split rows, sparse or frequency-scaled gradients, padded partitions)."""
    values = bind_site(site.call_args, PARALLEL_EMBEDDING)
    if values is None or "num_embeddings" not in values or "embedding_dim" not in values:
        return _UNBOUND
    if not is_none(values.get("padding_idx")):
        return "a padding index (NxD does not zero its row, and takes 0 for none): a person decides"
    if not is_none(values.get("max_norm")):
        return "rows renormalised to max_norm: a person decides"
    for option in ("scale_grad_by_freq", "sparse", "pad"):
        value = values.get(option)
        if value is not None and not value.is_literal("False"):
            return f"{option}: a person decides"
    return ""


def nxd_parallel_linear(rule: Rule, site: Site) -> str:
    """ColumnParallelLinear / RowParallelLinear: the sizes given, a partition stride of 1 (or,
    where the rule has a strided helper, any stride of a layer whose output is not gathered),
    and none of the options the tensor-parallel plan has no equivalent for."""
    name = (site.qualname or "").rpartition(".")[2]
    values = bind_site(site.call_args, PARALLEL_LINEARS.get(name, ()))
    if values is None or "input_size" not in values or "output_size" not in values:
        return _UNBOUND
    stride = values.get("stride")
    strided = rule.rewrite.option(f"{name}.strided") if rule.rewrite else None
    if stride is not None and not stride.is_literal("1"):
        gather = values.get(PARALLEL_LINEARS[name][3])
        if not strided or gather is None or not gather.is_literal("False"):
            return "a strided partition (fused weights), gathered or row-parallel: a person decides"
    sequence_parallel = values.get("sequence_parallel_enabled")
    helper = rule.rewrite.option(f"{name}.sequence_parallel") if rule.rewrite else None
    if sequence_parallel is not None and not sequence_parallel.is_literal("False") and not helper:
        return "sequence parallelism: a person decides"
    for option, why in _PARALLEL_LINEAR_DECLINED.items():
        value = values.get(option)
        if value is not None and not value.is_literal("False"):
            return why
    return ""


def nxd_layer_norm(rule: Rule, site: Site) -> str:
    """NxD's LayerNorm: its arguments bind to its signature, the shape given."""
    values = bind_site(site.call_args, NXD_LAYER_NORM)
    if values is None or "normalized_shape" not in values:
        return _UNBOUND
    return ""


DECLINES: dict[str, Callable[[Rule, Site], str]] = {
    "all-reduce": all_reduce,
    "all-gather": all_gather,
    "reduce-scatter": reduce_scatter,
    "mesh-reduce": mesh_reduce,
    "optimizer-step": optimizer_step,
    "save-on-master": save_on_master,
    "rendezvous": rendezvous,
    "step-marker": step_marker,
    "delete-call-statement": lambda rule, site: _call_statement(site),
    "is-master-ordinal": is_master_ordinal,
    "master-print": master_print,
    "xla-device": xla_device,
    "devices-list": devices_list,
    "fork-rng": fork_rng,
    "inline-step-closure": inline_step_closure,
    "autocast": autocast,
    "grad-scaler": grad_scaler,
    "device-loader": device_loader,
    "parallel-loader": parallel_loader,
    "spawn": spawn,
    "helper-call": helper_call,
    "neuron-trace": neuron_trace,
    "nxd-device-mesh": nxd_device_mesh,
    "nxd-mesh-query": nxd_mesh_query,
    "nxd-parallel-linear": nxd_parallel_linear,
    "nxd-parallel-embedding": nxd_parallel_embedding,
    "nxd-trainer": nxd_trainer,
    "nxd-layer-norm": nxd_layer_norm,
    "unwrap-step-context": lambda rule, site: "" if site.statement == "with" else _WITH,
}
