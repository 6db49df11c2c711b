"""Launch and data loading: spawn becomes a direct call under torchrun; device loaders become a
small re-iterable wrapper added to the file."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.skeleton import OpaqueCompound
from neuron_migrate.rewrite.codemod.targets import (
    CallTarget,
    NewStatement,
    StatementTarget,
    expression,
    statement,
)
from neuron_migrate.rewrite.codemod.templates import (
    bound_arguments,
    parenthesize,
    render,
    render_statements,
)
from neuron_migrate.rewrite.codemod.transforms._build import is_true, number, unpacked, with_commas
from neuron_migrate.scan.analyzer import declines

DEVICE_LOADER = "NeuronDeviceLoader"
# The helper's name in a file whose own class is named DEVICE_LOADER.
DEVICE_LOADER_SPARE = "NeuronMigrateDeviceLoader"
DEVICE_LOADER_SOURCE = '''
class NeuronDeviceLoader:
    """Iterates a DataLoader, moving every tensor of each batch to `device`."""

    def __init__(self, loader, device):
        self.loader = loader
        self.device = device

    def __iter__(self):
        for batch in self.loader:
            yield torch.utils._pytree.tree_map(
                lambda t: t.to(self.device) if isinstance(t, torch.Tensor) else t, batch
            )

    def __len__(self):
        return len(self.loader)
'''


def device_loader_source(name: str) -> str:
    """The helper's source, its class named `name`."""
    return DEVICE_LOADER_SOURCE.replace(f"class {DEVICE_LOADER}:", f"class {name}:", 1)


@statement("spawn")
def spawn(t: StatementTarget) -> list[NewStatement] | None:
    """xmp.spawn(fn, args=(...)) / torch_xla.launch(fn, args=(...)) -> fn(local_rank, ...)."""
    # Declined (`declines.spawn`): another statement, join= other than True, a torch_xla
    # function launched (whose call the next run would rewrite), args with unpacked items.
    values = bound_arguments(t.call, declines.spawn_signature(t.site))
    single = number(values.get("nprocs")) == 1 or is_true(values.get("debug_single_process"))
    index = cst.Integer("0") if single else render('int(os.environ.get("LOCAL_RANK", 0))', t.ctx)
    rest = unpacked(values.get("args"))
    assert rest is not None
    call = cst.Call(func=parenthesize(values["fn"]), args=with_commas([cst.Arg(index), *rest]))
    note = t.rule.rewrite.option("note") if t.rule.rewrite else None
    if note:
        t.notes.append(note)
    if not _uses_process_group(t.ctx.call_qualnames.values()):
        return [cst.Expr(call)]
    t.ctx.makes_process_group = True
    branch_note = t.rule.rewrite.option("branch_note") if t.rule.rewrite else None
    if branch_note and _in_a_branch(t.parents):
        t.notes.append(branch_note)
    # The spawned workers had the process group XLA's collectives and ordinals use whatever
    # path the script's own init_process_group took (under a flag, in a helper, none at all),
    # and the torch.distributed calls those become need one: torchrun's, or a group of one
    # process when the script runs by itself (as XLA ran it with one device, or nprocs=1). The
    # script's own calls then join it (`own_inits.py`).
    return [*render_statements(_INIT_PROCESS_GROUP, t.ctx, {}), cst.Expr(call)]


def _in_a_branch(parents: Sequence[cst.CSTNode]) -> bool:
    """Whether the statement is in one branch of an `if` that has others (in its function):
    `if dist.is_torchelastic_launched(): fn(...) else: xmp.spawn(fn, ...)` runs the workers on
    the other branch too, where the process group made before the spawn's call is not."""
    for node in reversed(parents):
        if isinstance(node, OpaqueCompound):  # an outlined statement: its headers' source
            first = node.headers.texts[0]
            if _SCOPE_HEADER.match(first):
                return False
            if len(node.bodies) > 1 and _IF_HEADER.match(first):
                return True
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        elif isinstance(node, cst.If) and node.orelse is not None:
            return True
    return False


_SCOPE_HEADER = re.compile(r"(@|def\b|async\s+def\b|class\b)")
_IF_HEADER = re.compile(r"if\b")


# What a worker reads of the process group xmp.spawn set up: collectives, world size, ranks.
_PROCESS_GROUP_USERS = frozenset(
    [
        *(
            f"torch_xla.core.xla_model.{name}"
            for name in (
                "all_reduce",
                "all_gather",
                "all_to_all",
                "reduce_scatter",
                "mesh_reduce",
                "rendezvous",
                "collective_broadcast",
                "broadcast_master_param",
                "reduce_gradients",
                "optimizer_step",
                "xrt_world_size",
                "get_ordinal",
                "is_master_ordinal",
            )
        ),
        *(
            f"torch_xla.runtime.{name}"
            for name in ("world_size", "global_ordinal", "process_index", "process_count")
        ),
    ]
)
_INIT_PROCESS_GROUP = """
if "RANK" in os.environ:
    dist.init_process_group("neuron")
else:
    dist.init_process_group("neuron", store=dist.HashStore(), rank=0, world_size=1)
"""


def _uses_process_group(qualnames: Iterable[str]) -> bool:
    """Whether the file's workers use the process group xmp.spawn gave them."""
    return not _PROCESS_GROUP_USERS.isdisjoint(qualnames)


def _device_loader_class(ctx: FileContext) -> cst.Name:
    """The device-loader helper class, added to the file."""
    name = DEVICE_LOADER
    if DEVICE_LOADER in ctx.taken and DEVICE_LOADER not in ctx.own_helpers:
        name = DEVICE_LOADER_SPARE  # the name is the project's own class
    ctx.helpers.add(name)
    ctx.use_modules(cst.Name("torch"))  # the helper class names torch
    return cst.Name(name)


def _device_loader(ctx: FileContext, loader: cst.BaseExpression, device: cst.BaseExpression):
    args = with_commas([cst.Arg(loader), cst.Arg(device)])
    return cst.Call(func=_device_loader_class(ctx), args=args)


def annotation_class(ctx: FileContext, helper: str) -> cst.Name | None:
    """The helper class (a rule's `annotation` option) that stands in for the torch_xla class an
    annotation names (`loader: pl.MpDeviceLoader`), added to the file as a call of it adds it;
    None when the file's own code takes its name."""
    if helper == DEVICE_LOADER:
        return _device_loader_class(ctx)
    return cst.Name(helper) if use_helper(ctx, helper) else None


@expression("device-loader")
def device_loader(t: CallTarget) -> cst.BaseExpression | None:
    """pl.MpDeviceLoader(loader, device, **options) -> NeuronDeviceLoader(loader, device)."""
    values = bound_arguments(t.call, declines.DEVICE_LOADER)  # input_sharding= (SPMD) is declined
    return _device_loader(t.ctx, values["loader"], values["device"])


@expression("parallel-loader")
def parallel_loader(t: CallTarget) -> cst.BaseExpression | None:
    """pl.ParallelLoader(loader, devices).per_device_loader(device) -> NeuronDeviceLoader(...);
    any other use (`para = pl.ParallelLoader(...)`, `para.per_device_loader(d)` later) ->
    NeuronParallelLoader(loader, devices), a helper whose per_device_loader gives the same.

    In the chained form the site is the inner call; the chained call around it is replaced
    when it is left."""
    values = bound_arguments(t.call, declines.PARALLEL_LOADER)
    if not _chained(t.parents):
        if not use_helper(t.ctx, "NeuronParallelLoader"):
            return None
        args = with_commas([cst.Arg(values["loader"]), cst.Arg(values["devices"])])
        return cst.Call(func=cst.Name("NeuronParallelLoader"), args=args)
    loader, ctx = values["loader"], t.ctx  # the edit keeps no reference to `t`: no cycle

    def edit(chained: cst.Call) -> cst.BaseExpression:
        device = bound_arguments(chained, declines.PER_DEVICE_LOADER)  # else declined
        return _device_loader(ctx, loader, device["device"])

    t.deferred.append((t.parents[-2], edit))
    return t.call


def _chained(parents: Sequence[cst.CSTNode]) -> bool:
    """Whether the call is the receiver of a `.per_device_loader(...)` call."""
    if len(parents) < 2:
        return False
    attribute, outer = parents[-1], parents[-2]
    return (
        isinstance(attribute, cst.Attribute)
        and attribute.attr.value == "per_device_loader"
        and isinstance(outer, cst.Call)
        and outer.func is attribute
    )
