"""Run an accepted compiled graph without a Python call per op.

AOTAutograd hands the backend plain CPU aten graphs; run as the Python code fx generates, each
op costs an interpreter frame and an `OpOverload` call, which on a transformer step is a tenth
of the step. TorchScript's interpreter runs the same graph from C++. Its optimizing executor
is kept off (`torch.jit.optimized_execution(False)`, thread-local): it rewrites the graph, and
the losses it gives differ from eager in the 4th digit, where unoptimized they are bitwise the
ones the fx code gives. A graph TorchScript cannot take runs as the fx code, as before.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import torch


def runnable(
    graph: torch.fx.GraphModule, on_host: bool = False, script: bool = True
) -> Callable[..., Any]:
    """A callable that takes what `graph.forward` takes and returns what it returns.

    `on_host`: the graph is traced on the device and run on CPU tensors over the device
    tensors' memory (the native engine), so the devices it names become the CPU. `script`:
    through TorchScript where it can (False: the fx code, for comparisons).
    """
    if on_host:
        graph = _devices_on_host(graph)
    if not script:
        return graph.forward
    try:
        scripted = _script(graph)
    except Exception:  # an op or argument TorchScript cannot type: the fx code runs it
        return graph.forward
    return _FirstCallChecked(scripted.forward, graph.forward)


class _FirstCallChecked:
    """The scripted graph, unless its first call fails where the fx code does not (an argument
    of another type than the traced one, say): then the fx code, from then on. An error the fx
    code raises too is the graph's own, and is raised."""

    def __init__(self, scripted: Callable[..., Any], fx_code: Callable[..., Any]) -> None:
        self._run: Callable[..., Any] = self._first
        self._scripted, self._fx_code = scripted, fx_code

    def __call__(self, *args: Any) -> Any:
        return self._run(*args)

    def _interpreted(self, *args: Any) -> Any:
        with torch.jit.optimized_execution(False):
            return self._scripted(*args)

    def _first(self, *args: Any) -> Any:
        try:
            result = self._interpreted(*args)
        except Exception:
            self._run = self._fx_code
            return self._fx_code(*args)
        self._run = self._interpreted
        return result


def _devices_on_host(graph: torch.fx.GraphModule) -> torch.fx.GraphModule:
    host = torch.fx.GraphModule(graph, copy.deepcopy(graph.graph))
    cpu = torch.device("cpu")
    for node in host.graph.nodes:
        node.args = tuple(cpu if _names_device(value) else value for value in node.args)
        node.kwargs = {
            key: cpu if _names_device(value) else value for key, value in node.kwargs.items()
        }
    host.recompile()
    return host


def _names_device(value: Any) -> bool:
    return isinstance(value, torch.device) and value.type != "cpu"


def _script(graph: torch.fx.GraphModule) -> torch.jit.ScriptModule:
    # A copy: the graph AOTAutograd holds keeps its overloads (and its lazy recompilation,
    # which TorchScript cannot compile through).
    # functorch brings sympy: imported when a graph runs, not by every process on the device.
    from torch._functorch.compile_utils import strip_overloads

    plain = torch.fx.GraphModule(graph, copy.deepcopy(graph.graph))
    strip_overloads(plain)  # TorchScript resolves `aten.mm`, not `aten.mm.default`
    for node in plain.graph.find_nodes(op="placeholder"):
        node.type = _argument_type(node)
    for node in plain.graph.nodes:
        # Graphs run on the CPU payloads; TorchScript takes a device as its name.
        node.kwargs = {
            key: value.type if isinstance(value, torch.device) else value
            for key, value in node.kwargs.items()
        }
    plain.recompile()
    with warnings.catch_warnings():
        # TorchScript warns about the GraphModule's own attributes it does not compile.
        warnings.simplefilter("ignore")
        return torch.jit.script(plain)


# TorchScript takes an unannotated argument for a Tensor; the scalars a graph can take are
# annotated from the value AOTAutograd traced it with (a SymInt passes a plain int).
_SCALAR_TYPES: dict[type, type] = {
    int: int,
    float: float,
    bool: bool,
    torch.SymInt: int,
    torch.SymFloat: float,
    torch.SymBool: bool,
}


def _argument_type(placeholder: torch.fx.Node) -> type:
    value = placeholder.meta.get("val")
    if isinstance(value, torch.Tensor):
        return torch.Tensor
    if type(value) in _SCALAR_TYPES:
        return _SCALAR_TYPES[type(value)]
    raise TypeError(f"graph input {placeholder.name} is a {type(value).__name__}")
