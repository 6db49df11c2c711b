"""int64 runs as int32 inside compiled graphs too: every int64 value a graph computes wraps.

Eager ops on the device wrap each int64 result as an int32 would (`tensor.py`'s `_wrap_int32`,
the engine's `wrap_int32`), which is computing in 32 bits. A compiled graph runs on the host as
one call, so without this pass its int64 intermediates kept 64 bits and only its results
wrapped: `(t * 4) // 4` gave back `t` where eager gives `0` for `t = 2**30`. The pass puts a
round trip through int32 after each node that computes an int64 tensor, as eager does after
each op, so a compiled function gives what it gives eagerly.

AOTAutograd's graphs are functional: the nodes that do not compute new values are views of
values already wrapped (skipped) and the `copy_` of a computed value back into a mutated input
(skipped: what it copies is wrapped where it was computed). A graph without int64 arithmetic
is left as it is, so float graphs cost nothing more.
"""

from __future__ import annotations

import operator

import torch

_aten = torch.ops.aten
_INT64 = torch.int64


def wrap_int64_values(graph: torch.fx.GraphModule) -> int:
    """Make every int64 value `graph` computes wrap as an int32; return how many wrap."""
    wrapped = 0
    nodes = graph.graph
    for node in list(nodes.nodes):
        if not _computes_int64(node):
            continue
        with nodes.inserting_after(node):
            narrow = nodes.call_function(_aten._to_copy.default, (node,), {"dtype": torch.int32})
        with nodes.inserting_after(narrow):
            back = nodes.call_function(_aten._to_copy.default, (narrow,), {"dtype": _INT64})
        node.replace_all_uses_with(back, delete_user_cb=lambda user, own=narrow: user is not own)
        back.meta["val"] = node.meta["val"]  # what later passes read (`narrow` is internal)
        for key in ("stack_trace", "nn_module_stack"):  # where the value came from
            if key in node.meta:
                narrow.meta[key] = back.meta[key] = node.meta[key]
        wrapped += 1
    if wrapped:
        graph.recompile()
    return wrapped


def _computes_int64(node: torch.fx.Node) -> bool:
    """A call that makes a new int64 tensor: not a view or in-place op, whose result is an
    argument's memory."""
    if node.op != "call_function" or not node.users:  # a result nothing reads needs no wrap
        return False
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor) or value.dtype is not _INT64:
        return False
    if value.dim() == 0 and not _from_wide_int64(node):
        return False  # a 0-dim value keeps its 64 bits, as eagerly
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        returns = target._schema.returns
        return not (returns and returns[0].alias_info is not None)
    return True  # `getitem` of a call with several results (`max.dim`'s indices, `sort`'s)


def _from_wide_int64(node: torch.fx.Node) -> bool:
    """Whether `node` computes from a non-scalar int64 tensor (in 32 bits on the device); for
    a `getitem`, whether the call it takes a result of does."""
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        node = node.args[0]
    for source in node.all_input_nodes:
        value = source.meta.get("val")
        if isinstance(value, torch.Tensor) and value.dtype is _INT64 and value.dim() > 0:
            return True
    return False
