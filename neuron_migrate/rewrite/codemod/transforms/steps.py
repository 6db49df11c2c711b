"""Statement transforms: step markers, printing and saving on the master, barriers."""

from __future__ import annotations

import itertools

import libcst as cst

from neuron_migrate.rewrite.codemod.helpers import use_helper
from neuron_migrate.rewrite.codemod.targets import NewStatement, StatementTarget, statement
from neuron_migrate.rewrite.codemod.templates import bind_arguments, bound_arguments, render
from neuron_migrate.rewrite.codemod.transforms._build import (
    call_statement,
    if_block,
    is_false,
    is_true,
    keyword,
    with_commas,
)
from neuron_migrate.rewrite.codemod.transforms.device import master_test
from neuron_migrate.scan.analyzer.declines import SAVES, STEP_MARKER

_SAVE_CPU = (
    "torch.save(torch.utils._pytree.tree_map("
    "lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, {data}), {path})"
)


@statement("step-marker")
def step_marker(t: StatementTarget) -> list[NewStatement] | None:
    """mark_step() / sync() are deleted; with wait=True they become a device synchronize."""
    wait = bound_arguments(t.call, STEP_MARKER).get("wait")  # True or False, when given
    if wait is None or is_false(wait):
        return []
    return [cst.Expr(render("torch.neuron.synchronize()", t.ctx))]


@statement("delete-call-statement")
def delete_call_statement(t: StatementTarget) -> list[NewStatement] | None:
    return []  # a call statement: in another one it is declined


@statement("master-print")
def master_print(t: StatementTarget) -> list[NewStatement] | None:
    """xm.master_print(*args, fd=sys.stdout, local=False, flush=False) -> a guarded print (a
    call statement on a line of its own: `fix_blocker`). torch_xla evaluates the arguments on
    every rank: where one may run code (`evaluate(model)`, which may hold a collective that
    every rank must join) the call becomes `neuron_master_print`, of the same signature, so
    that they still are; only names, attributes and literals move under the rank test."""
    local = False
    print_args: list[cst.Arg] = []
    for arg in t.call.args:
        name = arg.keyword.value if arg.keyword else None
        if name is None:
            print_args.append(arg)
        elif name == "local":  # True or False: others, and other keywords, are declined
            local = is_true(arg.value)
        else:
            print_args.append(keyword("file" if name == "fd" else name, arg.value))
    printed = call_statement(cst.Call(func=cst.Name("print"), args=with_commas(print_args)))
    if _guarded_by_master(t, local) or all(_inert(arg.value) for arg in t.call.args):
        return _on_master(t, local, [printed])
    if not use_helper(t.ctx, "neuron_master_print"):
        return None
    return [call_statement(t.call.with_changes(func=cst.Name("neuron_master_print")))]


# What an argument may be made of to be evaluated on the master only: reading it runs no code
# of the program's (a property aside), so no rank can wait for it.
_INERT = (
    cst.Name,
    cst.Attribute,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.FormattedStringText,
    cst.FormattedStringExpression,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.Arg,
)


def _inert(node: cst.CSTNode) -> bool:
    if _reads_item(node):
        return True
    if not isinstance(node, _INERT):
        return False
    return all(_inert(child) for child in _children(node))


def _reads_item(node: cst.CSTNode) -> bool:
    """`loss.item()`: a tensor's value read on the host, which waits for no other rank."""
    return (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "item"
        and _inert(node.func.value)
    )


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The expressions inside `node` (an attribute's name and an f-string's format spec text
    are no expression: only what is evaluated is walked)."""
    if isinstance(node, cst.Attribute):
        return [node.value]
    if isinstance(node, cst.FormattedStringExpression):
        spec = node.format_spec or ()
        return [node.expression, *spec]
    if isinstance(node, cst.FormattedString):
        return list(node.parts)
    if isinstance(node, cst.ConcatenatedString):
        return [node.left, node.right]
    if isinstance(node, cst.Arg):
        return [node.value]
    return []


_IS_MASTER = "torch_xla.core.xla_model.is_master_ordinal"


def _guarded_by_master(t: StatementTarget, local: bool) -> bool:
    """Whether the statement already sits in the body of an `if xm.is_master_ordinal(...)` that
    tests the same master (its arguments are evaluated on the master only already)."""
    for node, inner in itertools.pairwise(t.parents):
        if not (isinstance(node, cst.If) and inner is node.body):
            continue
        test = node.test
        if not isinstance(test, cst.Call) or t.ctx.qualname_of_call(test) != _IS_MASTER:
            continue
        values = bind_arguments(test, ("local",))
        if values is None:
            continue
        tested = values.get("local")
        if tested is None or is_true(tested):
            same = local
        elif is_false(tested):
            same = not local
        else:
            continue  # which master is chosen at run time
        if same:
            return True
    return False


def _on_master(
    t: StatementTarget, local: bool, body: list[cst.BaseStatement]
) -> list[NewStatement]:
    """`body` guarded by the master test, unless the statement already sits in the body of an
    `if xm.is_master_ordinal(...)` that tests the same master: the guard would repeat it."""
    if _guarded_by_master(t, local):
        return list(body)
    return [if_block(master_test(t.ctx, local), body)]


@statement("save-on-master")
def save_on_master(t: StatementTarget) -> list[NewStatement] | None:
    """xm.save(data, file_or_path, master_only=True, global_master=False) -> torch.save of the
    data moved to the CPU, on the master only (a call statement on a line of its own:
    `fix_blocker`)."""
    values = next(v for p in SAVES if (v := bind_arguments(t.call, p)) is not None)
    path = values.get("file_or_path", values.get("path"))
    assert path is not None  # a save without data and a path is declined (`declines`), as is
    # one whose master_only or global_master is known only at run time
    master_only, global_master = values.get("master_only"), values.get("global_master")
    save = call_statement(render(_SAVE_CPU, t.ctx, {"data": values["data"], "path": path}))
    if is_false(master_only):
        return [save]
    return _on_master(t, not is_true(global_master), [save])


@statement("rendezvous")
def rendezvous(t: StatementTarget) -> list[NewStatement] | None:
    """xm.rendezvous(tag, payload=b'', replicas=[]) without a payload -> a barrier, when a
    process group exists (a single process had nothing to wait for). A call statement on a
    line of its own, without a payload or replicas (`fix_blocker`, `declines.rendezvous`)."""
    barrier = call_statement(render("dist.barrier()", t.ctx))
    return [if_block(render("dist.is_initialized()", t.ctx), [barrier])]
