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

Across files (`imported_compiles`): what such a compile reaches in another module of the project,
found through this module's imports -- a function or class imported and compiled
(`torch.compile(step)`, `torch.compile(Net())`, `torch.compile(m.Net())`), and the imported
functions a compiled region calls (one level). Each is named by its imported qualified name
(`pkg.model.Net`; `.model.Net` for a relative import), for the scan to find the file that
defines it (`scan.cross_file`).
"""

import ast
from collections.abc import Callable

from neuron_migrate.scan.analyzer.scopes import NameModel

Region = tuple[int, int, int]  # (first line, last line, line of the torch.compile)
# What a compile here reaches in another module: (imported qualified name, torch.compile line).
Imported = tuple[str, int]
# Roots of imported names that are libraries, never the project's own modules.
_LIBRARIES = frozenset({"torch", "torch_xla", "functorch", "numpy", "math", "os", "sys"})
_COMPILE = "torch.compile"
_MODEL_CHAINS = frozenset({"to", "cuda", "neuron", "train", "eval", "float", "half", "bfloat16"})


def compiled_regions(
    model: NameModel, qualname_of: Callable[[ast.expr], str | None]
) -> list[Region]:
    """The compiled regions of a module (call only when it names `torch.compile`)."""
    regions: list[Region] = []
    for call, _ in model.calls:
        if not _compiles_for_neuron(model, qualname_of, call):
            continue
        parent = model.parents.get(call)
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
    for name in model.loads:
        node: ast.expr = name
        parent = model.parents.get(node)
        while isinstance(parent, ast.Attribute):
            node, parent = parent, model.parents.get(parent)
        if (
            isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(node is decorator for decorator in parent.decorator_list)
            and qualname_of(node) == _COMPILE
        ):
            regions.append(_body(parent, node.lineno))
    return regions


def _compiles_for_neuron(
    model: NameModel, qualname_of: Callable[[ast.expr], str | None], call: ast.Call
) -> bool:
    """A `torch.compile` call for the neuron backend that runs whenever its code runs: one
    under a condition (`if args.compile:`) leaves the code eager unless the condition holds,
    and a run without it runs the code eagerly."""
    return (
        qualname_of(call.func) == _COMPILE
        and _neuron_backend(call)
        and not _conditional(model, call)
    )


_CONDITIONS = (ast.If, ast.IfExp, ast.While, ast.Match, ast.ExceptHandler)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def _conditional(model: NameModel, node: ast.AST) -> bool:
    """Whether `node` runs only under a condition of its function (or module); the
    `if __name__ == "__main__":` of a script is none."""
    parent = model.parents.get(node)
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, _CONDITIONS) and not _main_guard(parent):
            return True
        parent = model.parents.get(parent)
    return False


def _main_guard(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


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
        statement = model.parents.get(node)
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


def imported_compiles(
    model: NameModel, qualname_of: Callable[[ast.expr], str | None], regions: list[Region]
) -> tuple[Imported, ...]:
    """What compiles of this module reach in other modules (`Imported`), in source order."""
    found: dict[Imported, None] = {}
    for call, _ in model.calls:
        if not call.args or not _compiles_for_neuron(model, qualname_of, call):
            continue
        for target in _compiled_values(model, call.args[0]):
            name = _imported_name(model, qualname_of, target)
            if name is not None:
                found[(name, call.lineno)] = None
    for call, _ in model.calls:  # one level of calls out of a compiled region
        line = next((c for first, last, c in regions if first <= call.lineno <= last), 0)
        if line and isinstance(call.func, (ast.Name, ast.Attribute)):
            name = _imported_name(model, qualname_of, call.func)
            if name is not None:
                found[(name, line)] = None
    return tuple(found)


def _compiled_values(model: NameModel, compiled: ast.expr) -> list[ast.expr]:
    """The callables a compiled value names: `step`, `m.step`, the class of `Net(...)` (through
    `.to(device)` and the like), or those of the assignments of a name."""
    value = _built_by(compiled)
    if isinstance(value, ast.Call):
        return [value.func]
    if not isinstance(value, ast.Name):
        return [value] if isinstance(value, ast.Attribute) else []
    found = model.binding_of(value)
    if found is None:
        return []
    values: list[ast.expr] = []
    for binding in found[1]:
        if binding.kind != "local" or isinstance(binding.node, ast.alias):
            values.append(value)  # an import: the name itself
            continue
        statement = model.parents.get(binding.node)
        assigned = _built_by(statement.value) if isinstance(statement, ast.Assign) else None
        if isinstance(assigned, ast.Call):
            values.append(assigned.func)
    return values


def _built_by(value: ast.expr | None) -> ast.expr | None:
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _MODEL_CHAINS
    ):
        value = value.func.value
    return value


def _imported_name(
    model: NameModel, qualname_of: Callable[[ast.expr], str | None], chain: ast.expr
) -> str | None:
    """The imported qualified name of `chain` (`pkg.model.Net`, or `.model.Net` for a relative
    import), None when it is not imported or is a library's."""
    qualname = qualname_of(chain)
    if qualname is None:
        qualname = _relative_name(model, chain)
    if qualname is None or qualname.partition(".")[0] in _LIBRARIES:
        return None
    return qualname


def _relative_name(model: NameModel, chain: ast.expr) -> str | None:
    attrs: list[str] = []
    while isinstance(chain, ast.Attribute):
        attrs.append(chain.attr)
        chain = chain.value
    if not isinstance(chain, ast.Name):
        return None
    found = model.binding_of(chain)
    if found is None or len(found[1]) != 1:
        return None
    alias = found[1][0].node
    statement = model.parents.get(alias) if isinstance(alias, ast.alias) else None
    if not isinstance(statement, ast.ImportFrom) or not statement.level:
        return None
    assert isinstance(alias, ast.alias)
    module = "." * statement.level + (statement.module or "")
    joiner = "" if module.endswith(".") else "."
    return module + joiner + ".".join([alias.name, *reversed(attrs)])


def named_regions(tree: ast.Module, names: dict[str, str]) -> list[tuple[int, int, str]]:
    """The regions of this module's top-level functions and classes (methods but `__init__`)
    that another module compiles: `names` maps each name to where (`train.py:12`)."""
    regions: list[tuple[int, int, str]] = []
    for node in tree.body:
        where = names.get(getattr(node, "name", ""))
        if where is None:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first, last, _ = _body(node, 0)
            regions.append((first, last, where))
        elif isinstance(node, ast.ClassDef):
            regions.extend((first, last, where) for first, last, _ in _methods(node, 0))
    return regions
