"""Idioms pointed at by a string literal: device strings, backend names, environment variables."""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.targets import LiteralTarget, literal
from neuron_migrate.rewrite.codemod.templates import (
    add_keyword,
    keyword_value,
    remove_keyword,
    render,
)
from neuron_migrate.rewrite.codemod.transforms._build import string_value

_XLA_DEVICE = re.compile(r"^xla(?P<index>:\d+)?$")
_AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})


def replace_value(node: cst.SimpleString, value: str) -> cst.SimpleString:
    """The same literal (prefix and quotes kept) holding `value`."""
    prefix = node.prefix
    quote = node.quote
    return node.with_changes(value=f"{prefix}{quote}{value}{quote}")


@literal("device-string")
def device_string(t: LiteralTarget) -> cst.SimpleString | None:
    match = _XLA_DEVICE.match(string_value(t.literal) or "")
    if match is None:
        return None
    call = t.enclosing_call()
    # Unpacked arguments, which may pass a dtype, and a branch of a conditional given to an
    # autocast without one leave the site (`Site.blocked`).
    if (
        call is not None
        and t.ctx.qualname_of_call(call) in _AUTOCAST
        and _dtype_given(call) is False
    ):
        # torch_xla's autocast used bfloat16 on Neuron; PyTorch's default for the device
        # is float16, so the dtype is written out.
        bf16 = render("torch.bfloat16", t.ctx)
        t.deferred.append((call, lambda c: add_keyword(c, "dtype", bf16)))
    return replace_value(t.literal, "neuron" + (match.group("index") or ""))


def _dtype_given(call: cst.Call) -> bool | None:
    """Whether an autocast call passes its dtype, by keyword or second (`autocast(device_type,
    dtype, ...)`); None when unpacked arguments may."""
    if any(arg.star for arg in call.args):
        return None
    positional = [arg for arg in call.args if arg.keyword is None]
    return len(positional) > 1 or keyword_value(call, "dtype") is not None


@literal("replace-literal")
def replace_literal(t: LiteralTarget) -> cst.SimpleString | None:
    new = t.rule.rewrite.option("to") if t.rule.rewrite else None
    return replace_value(t.literal, new) if new else None


@literal("xla-init-method")
def xla_init_method(t: LiteralTarget) -> cst.SimpleString | None:
    """init_method='xla://' -> torchrun's env://, or a group of this process alone where the
    script runs by itself, as XLA's rendezvous made one (`neuron_init_method`). A call that
    names its rank or world size, or a URL kept elsewhere than the keyword, gets env://."""
    env = replace_value(t.literal, "env://")
    call = t.enclosing_call()
    if (
        call is None
        or _keyword_of(t.parents[-1]) != "init_method"
        or any(keyword_value(call, name) is not None for name in ("rank", "world_size"))
        or any(arg.star for arg in call.args)
        or not use_helper(t.ctx, "neuron_init_method")
    ):
        return env
    helper_call = render("neuron_init_method()", t.ctx)
    t.deferred.append((call, lambda c: _with_keyword(c, "init_method", helper_call)))
    return env


def _keyword_of(arg: cst.CSTNode) -> str | None:
    return arg.keyword.value if isinstance(arg, cst.Arg) and arg.keyword is not None else None


def _with_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with the value of its `keyword=` argument replaced."""
    args = [
        a.with_changes(value=value) if a.keyword is not None and a.keyword.value == keyword else a
        for a in call.args
    ]
    return call.with_changes(args=args)


@literal("compile-backend")
def compile_backend(t: LiteralTarget) -> cst.SimpleString | None:
    """backend='openxla' -> 'neuron', pinning dynamic=False and dropping an ignored mode=."""
    call = t.enclosing_call()
    if call is not None and t.ctx.qualname_of_call(call) == "torch.compile":
        # dynamic= True, or known only at run time, is declined (the site's `blocked`): the
        # neuron backend rejects dynamic shapes
        mode = keyword_value(call, "mode")
        drop_mode = mode is not None and string_value(mode) != "default"
        dynamic_false = cst.Name("False")

        def edit(c: cst.Call) -> cst.Call:
            if drop_mode:
                c = remove_keyword(c, "mode")
            # dynamic=None is torch's automatic dynamic shapes, as when it is not passed
            args = [
                a.with_changes(value=dynamic_false)
                if a.keyword is not None and a.keyword.value == "dynamic"
                else a
                for a in c.args
            ]
            return add_keyword(c.with_changes(args=args), "dynamic", dynamic_false)

        t.deferred.append((call, edit))
    return replace_value(t.literal, "neuron")


@literal("env-var")
def env_var(t: LiteralTarget) -> cst.SimpleString | None:
    """Rename the variable, or ask the driver to delete the statement that sets it."""
    rename = t.rule.rewrite.option("rename_to") if t.rule.rewrite else None
    if rename:
        return replace_value(t.literal, rename)
    t.delete_statement = True
    return t.literal


@literal("spawn-rendezvous-env")
def spawn_rendezvous_env(t: LiteralTarget) -> cst.SimpleString | None:
    """MASTER_ADDR / MASTER_PORT set by a script whose spawn becomes a torchrun launch: the
    setting becomes a default (`os.environ.setdefault`), so torchrun's address wins and the
    script run by itself keeps its own; unless the spawn is left for a person (a setting under
    a condition is left by `fix_blocker`, from the site)."""
    if t.ctx.spawn_kept:
        return None
    t.delete_statement = True
    t.keep_as_default = True
    return t.literal


@literal("keep")
def keep(t: LiteralTarget) -> cst.SimpleString | None:
    """A variable that means the same natively: nothing to change (counted as kept)."""
    return t.literal
