"""Device, ranks and AMP: transforms that replace one call with one expression."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rewrite.codemod.context import FileContext
from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.targets import CallTarget, expression
from neuron_migrate.rewrite.codemod.templates import (
    add_keyword,
    bind_arguments,
    bound_arguments,
    keyword_value,
    parenthesize,
    render,
)
from neuron_migrate.rewrite.codemod.transforms._build import (
    is_false,
    is_none,
    keyword,
    unpacked,
    with_commas,
)
from neuron_migrate.scan.analyzer.declines import (
    AUTOCAST,
    IS_MASTER,
    OPTIMIZER_STEP,
    STEP_CLOSURE,
    XLA_DEVICE,
)

_LOCAL_MASTER = 'int(os.environ.get("LOCAL_RANK", 0)) == 0'
# Before a process group exists (a setup() that tests the rank first), torchrun's RANK says it.
_GLOBAL_MASTER = (
    '(dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", 0))) == 0'
)


def master_test(ctx: FileContext, local: bool) -> cst.BaseExpression:
    return render(_LOCAL_MASTER if local else _GLOBAL_MASTER, ctx)


@expression("xla-device")
def xla_device(t: CallTarget) -> cst.BaseExpression | None:
    """xm.xla_device(n=None, devkind=None) / torch_xla.device(index=None)."""
    values = next(v for p in XLA_DEVICE if (v := bind_arguments(t.call, p)) is not None)
    index = values.get("n", values.get("index"))
    if is_none(index):
        return render('torch.device("neuron")', t.ctx)
    assert index is not None
    return render('torch.device("neuron", {index})', t.ctx, {"index": index})


_DEVICE_LIST = 'torch.device("neuron", i) for i in range(torch.neuron.device_count())'
_NAME_LIST = 'f"neuron:{{i}}" for i in range(torch.neuron.device_count())'


@expression("devices-list")
def devices_list(t: CallTarget) -> cst.BaseExpression | None:
    """torch_xla.devices() -> a list of torch.device; xm.get_xla_supported_devices() -> a list of
    strings ("neuron:0", ...), as the XLA call returned ("xla:0", ...)."""
    qualname = t.site.qualname or ""
    if qualname.endswith(".get_xla_supported_devices"):
        # a device kind, a cap on the count, or an f-string around the call is declined
        # (`declines.devices_list`)
        return _comprehension(_NAME_LIST, t.ctx)
    return _comprehension(_DEVICE_LIST, t.ctx)


def _comprehension(text: str, ctx: FileContext) -> cst.BaseExpression:
    # Holes are `{name}`, so the f-string's `{i}` is written `{{i}}`: the hole inside the braces
    # is filled with the loop variable.
    return render(f"[{text}]", ctx, {"i": cst.Name("i")})


@expression("fork-rng")
def fork_rng(t: CallTarget) -> cst.BaseExpression | None:
    """with xm.fork_rng(): -> with torch.random.fork_rng(device_type="neuron"):. The other APIs
    of the rule (xm.get_rng_state, an int where torch has a ByteTensor) are marked."""
    return render('torch.random.fork_rng(device_type="neuron")', t.ctx)


@expression("is-master-ordinal")
def is_master_ordinal(t: CallTarget) -> cst.BaseExpression | None:
    local = bound_arguments(t.call, IS_MASTER).get("local")  # True or False, when given
    return master_test(t.ctx, local=not is_false(local))


@expression("inline-step-closure")
def inline_step_closure(t: CallTarget) -> cst.BaseExpression | None:
    """xm.add_step_closure(closure, args=(), run_async=False) -> closure(*args)."""
    values = bound_arguments(t.call, STEP_CLOSURE)
    args = unpacked(values.get("args"))
    assert args is not None  # a tuple with unpacked items is declined
    return cst.Call(func=parenthesize(values["closure"]), args=with_commas(args))


@expression("optimizer-step")
def optimizer_step(t: CallTarget) -> cst.BaseExpression | None:
    """xm.optimizer_step(optimizer, barrier=False, optimizer_args={}, groups=None, pin_layout=True)
    -> optimizer.step(**optimizer_args), where DDP/FSDP2 visibly reduces the gradients;
    elsewhere neuron_optimizer_step(optimizer, optimizer_args), a helper added to the file that
    averages the gradients over the process group first, as torch_xla did (`barrier` asked for
    a mark_step, which the native device does not need). With replica groups,
    neuron_optimizer_step_in_groups(optimizer, groups=...), which reduces over them as
    xm.reduce_gradients does, wrapped model or not."""
    values = bound_arguments(t.call, OPTIMIZER_STEP)
    extra = values.get("optimizer_args")
    groups = values.get("groups")
    if groups is not None and not is_none(groups):  # reduced over replica groups, as XLA did
        if not use_helper(t.ctx, "neuron_optimizer_step_in_groups"):
            return None
        args = [cst.Arg(values["optimizer"])]
        if extra is not None and not (isinstance(extra, cst.Dict) and not extra.elements):
            args.append(keyword("optimizer_args", extra))
        args.append(keyword("groups", groups))
        return cst.Call(func=cst.Name("neuron_optimizer_step_in_groups"), args=with_commas(args))
    if not t.ctx.wraps_model() or t.site.line in t.ctx.unwrapped_steps:
        if not use_helper(t.ctx, "neuron_optimizer_step"):
            return None
        args = [cst.Arg(values["optimizer"])]
        if extra is not None and not (isinstance(extra, cst.Dict) and not extra.elements):
            args.append(cst.Arg(extra))
        return cst.Call(func=cst.Name("neuron_optimizer_step"), args=with_commas(args))
    step_args: list[cst.Arg] = []
    if extra is not None and not (isinstance(extra, cst.Dict) and not extra.elements):
        step_args.append(cst.Arg(value=extra, star="**"))
    method = cst.Attribute(value=parenthesize(values["optimizer"]), attr=cst.Name("step"))
    return cst.Call(func=method, args=step_args)


@expression("autocast")
def autocast(t: CallTarget) -> cst.BaseExpression | None:
    """torch_xla.amp.autocast(device, enabled=True, dtype=None, cache_enabled=True) ->
    torch.autocast("neuron", ..., dtype=<given or torch.bfloat16>)."""
    params = AUTOCAST
    values = bound_arguments(t.call, params)
    func = render("torch.autocast", t.ctx)
    args = [cst.Arg(value=cst.SimpleString('"neuron"'))]
    for name in params[1:]:
        value = values.get(name)
        if value is None or (name == "dtype" and is_none(value)):
            continue
        args.append(keyword(name, value))
    if all(a.keyword is None or a.keyword.value != "dtype" for a in args):
        args.append(keyword("dtype", render("torch.bfloat16", t.ctx)))
    return cst.Call(func=func, args=with_commas(args))


@expression("autocast-dtype")
def autocast_dtype(t: CallTarget) -> cst.BaseExpression | None:
    """torch.autocast(device_type=dt) -> ..., dtype=torch.bfloat16), when the analyzer found `dt`
    holds one XLA device string (site detail "xla"; `fix_blocker` leaves the others): XLA's
    autocast dtype, not float16."""
    if keyword_value(t.call, "dtype") is not None:
        return None
    return add_keyword(t.call, "dtype", render("torch.bfloat16", t.ctx))


@expression("grad-scaler")
def grad_scaler(t: CallTarget) -> cst.BaseExpression | None:
    """torch_xla.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval,
    enabled, use_zero_grad=False) -> torch.amp.GradScaler("neuron", ...): torch's signature has
    the device first, then the same parameters in the same order."""
    # use_zero_grad other than False (XLA's zero-grad optimizer step) is declined
    args = [cst.Arg(value=cst.SimpleString('"neuron"'))]
    for arg in t.call.args:
        if arg.keyword is not None and arg.keyword.value == "use_zero_grad":
            continue
        if arg.keyword is None:
            args.append(cst.Arg(value=arg.value))
        else:
            args.append(keyword(arg.keyword.value, arg.value))
    return cst.Call(func=render("torch.amp.GradScaler", t.ctx), args=with_commas(args))
