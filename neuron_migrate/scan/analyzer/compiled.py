"""Compiled regions: code a module compiles with `torch.compile` for the neuron backend.

The released backend lowers a whole FX graph at a time, and with the default
`TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=True` a graph holding an op it cannot lower fails to
compile (no per-op CPU fallback inside a graph). So an op that is a CPU fallback in eager mode is
a compile-time refusal in a compiled region. The regions the scan can see:

- a function decorated with `@torch.compile` / `@torch.compile(...)`;
- a function of this module passed to `torch.compile(fn, ...)`;
- a model built from a class of this module and passed to `torch.compile(model, ...)`: the
  class's methods but `__init__` (its `forward` and what that calls).

A backend other than "neuron" (and other than the default, which TorchNeuron resolves to
"neuron" on its device) is not this device's compile.
"""

import ast
from collections.abc import Callable

from neuron_migrate.scan.analyzer.scopes import NameModel

Region = tuple[int, int, int]  # (first line, last line, line of the torch.compile)
_COMPILE = "torch.compile"
_MODEL_CHAINS = frozenset({"to", "cuda", "neuron", "train", "eval", "float", "half", "bfloat16"})


def compiled_regions(
    model: NameModel, qualname_of: Callable[[ast.expr], str | None]
) -> list[Region]:
    """The compiled regions of a module (call only when it names `torch.compile`)."""
    regions: list[Region] = []
    for call, _ in model.calls:
        if qualname_of(call.func) != _COMPILE or not _neuron_backend(call):
            continue
        parent = model.parents.get(id(call))
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and call in (
            parent.decorator_list
        ):
            regions.append(_body(parent, call.lineno))
            continue
        target = call.args[0] if call.args else None
        if isinstance(target, ast.Name):
            regions.extend(_named_target(model, target, call.lineno))
    # `@torch.compile` without a call: a name chain whose parent is the function it decorates
    # (found from the loaded names, as walking the whole tree again costs a tenth of the scan).
    for name, _, _ in model.loads:
        node: ast.expr = name
        parent = model.parents.get(id(node))
        while isinstance(parent, ast.Attribute):
            node, parent = parent, model.parents.get(id(parent))
        if (
            isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(node is decorator for decorator in parent.decorator_list)
            and qualname_of(node) == _COMPILE
        ):
            regions.append(_body(parent, node.lineno))
    return regions


def _neuron_backend(call: ast.Call) -> bool:
    backend = next((k.value for k in call.keywords if k.arg == "backend"), None)
    if backend is None:
        return True  # the default backend: TorchNeuron picks "neuron" on its device
    return isinstance(backend, ast.Constant) and backend.value == "neuron"


def _body(definition: ast.AST, compile_line: int) -> Region:
    body = getattr(definition, "body", [])
    first = body[0].lineno if body else definition.lineno  # type: ignore[attr-defined]
    return (first, definition.end_lineno or first, compile_line)  # type: ignore[attr-defined]


def _named_target(model: NameModel, name: ast.Name, compile_line: int) -> list[Region]:
    """`torch.compile(step)` with `def step` in this module; `torch.compile(net)` with
    `net = Net(...)` and `class Net` in this module."""
    found = model.binding_of(name)
    if found is None:
        return []
    regions: list[Region] = []
    for binding in found[1]:
        node = binding.node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            regions.append(_body(node, compile_line))
            continue
        statement = model.parents.get(id(node))
        value = statement.value if isinstance(statement, ast.Assign) else None
        while (  # `Net(...).to(device).train()`: the model is what `Net(...)` built
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _MODEL_CHAINS
        ):
            value = value.func.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            owner = model.binding_of(value.func)
            for class_binding in owner[1] if owner else []:
                if isinstance(class_binding.node, ast.ClassDef):
                    regions.extend(_methods(class_binding.node, compile_line))
    return regions


def _methods(cls: ast.ClassDef, compile_line: int) -> list[Region]:
    return [
        _body(item, compile_line)
        for item in cls.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name != "__init__"
    ]
