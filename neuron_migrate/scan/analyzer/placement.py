"""Placement: does a call run on the device, on the host, or can the code not tell?

A torch factory without `device=` makes a CPU tensor (unless the module calls
`torch.set_default_device`), and an op on tensors that never reach the device runs on the CPU:
`torch.randperm(n)`, `torch.randn(20, 10).to(device)` (the `randn`), the data built in a
`data.py`. Such calls are not device ops, and reporting them as device CPU fallbacks is wrong.

The answer is a small dataflow over names, flow-insensitive like the name model it reads: a
name's placement joins the placements of every value assigned to it in its scope. Parameters,
attributes (`self.w`), loop targets and the results of calls into other code are `unknown`.

    host    every tensor the call reads or makes is on the CPU
    device  a tensor it reads or makes is on the device
    unknown the code cannot tell (a parameter, `model(x)`, an attribute)
    none    no tensor at all (a number, a string, a module object)
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from neuron_migrate.scan.analyzer.memo import Memo
from neuron_migrate.scan.analyzer.scopes import Binding, NameModel, Parents

HOST, DEVICE, UNKNOWN, NONE = "host", "device", "unknown", "none"

# torch functions that make a tensor from sizes or data: on the CPU without `device=`.
_FACTORIES = frozenset(
    f"torch.{name}"
    for name in [
        "arange",
        "empty",
        "eye",
        "full",
        "linspace",
        "logspace",
        "ones",
        "rand",
        "randint",
        "randn",
        "randperm",
        "range",
        "scalar_tensor",
        "tensor",
        "zeros",
        "as_tensor",
        "from_numpy",
        "empty_strided",
        "bartlett_window",
        "blackman_window",
        "hamming_window",
        "hann_window",
        "kaiser_window",
        "tril_indices",
        "triu_indices",
        "Tensor",
        "FloatTensor",
        "LongTensor",
        "IntTensor",
        "BoolTensor",
        "DoubleTensor",
        "HalfTensor",
        "BFloat16Tensor",
        "ByteTensor",
    ]
)
# Calls that touch only the host's state or random generators, never a device tensor.
_HOST_CALLS = frozenset(
    {
        "torch.manual_seed",
        "torch.seed",
        "torch.initial_seed",
        "torch.get_rng_state",
        "torch.set_rng_state",
        "torch.random.manual_seed",
        "torch.random.seed",
        "torch.Generator",
        "torch.set_printoptions",
        "torch.set_num_threads",
        "torch.get_num_threads",
    }
)
# Tensor methods that bring a tensor to the host, or turn it into a Python value.
_TO_HOST = frozenset({"cpu", "numpy"})
_TO_PYTHON = frozenset({"item", "tolist", "__len__", "size", "dim", "numel", "data_ptr"})
_TO_DEVICE = frozenset({"cuda", "neuron", "xpu"})
_DTYPE_ONLY = frozenset(
    {"float", "double", "half", "bfloat16", "long", "int", "bool", "short", "byte", "char"}
)
# Attributes that are metadata, not tensors.
_METADATA = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad"})
_PYTHON_BUILTINS = frozenset(
    {"len", "int", "float", "bool", "str", "range", "min", "max", "abs", "round", "print"}
)


def join(a: str, b: str) -> str:
    """The placement of a value made from two others."""
    if a == NONE:
        return b
    if b == NONE or a == b:
        return a
    if DEVICE in (a, b):
        return DEVICE
    return UNKNOWN  # host with unknown


class Placer:
    """Placements of expressions of one module (memoised: `memo.Memo`)."""

    def __init__(self, model: NameModel, qualname_of: Callable[[ast.expr], str | None]) -> None:
        self.model = model
        self.qualname_of = qualname_of  # a call's callee, as the site finder resolved it
        self.default_device = False  # torch.set_default_device: factories may make device tensors
        # Placements by expression, by name binding and by `self` attribute: each computed
        # once, so a chain of assignments costs its length, not its number of paths.
        self._memo: Memo[str] = Memo(cut=NONE)  # a cycle (`x = x + 1`): the other values decide
        self._devices: dict[tuple[object, int], str] = {}  # device_value of a name, by depth
        self._classes: dict[int, dict[str, list[ast.expr]]] | None = None  # self.NAME values
        self.gave_up = False  # a chain was too deep to follow (`runs_on`)

    def runs_on(self, call: ast.Call) -> str:
        """Where a call's own op runs: a factory where it makes its tensor, a method where
        its receiver and arguments are (`x.item()` of a host tensor is a host op)."""
        try:
            return self._runs_on(call)
        except RecursionError:  # a chain of values deeper than Python's stack can follow
            self.gave_up = True
            return UNKNOWN

    @property
    def order_free(self) -> bool:
        """Whether every answer so far is the one any order of the same questions, or any
        questions asked before them, would give: no cycle was cut (a cut placement depends
        on where its cycle was entered first) and no chain was too deep to follow (how deep
        depends on what earlier questions left known)."""
        return not self._memo.cuts and not self.gave_up

    def _runs_on(self, call: ast.Call) -> str:
        func = call.func
        if isinstance(func, ast.Attribute) and self.qualname_of(func) is None:
            receiver = self.of(func.value)
            if func.attr in ("to", *_TO_DEVICE, *_TO_HOST):
                return join(receiver, self.of(call))
            if receiver in (HOST, DEVICE):
                return receiver  # `inputs.topk(k, dim=1)`: the receiver's device runs it
            return join(receiver, self._all([*call.args, *(k.value for k in call.keywords)]))
        return self.of(call)

    def of(self, node: ast.expr | None) -> str:
        # The commonest kinds first, by their exact class (what `ast.parse` makes).
        kind = node.__class__
        if kind is ast.Name:
            return self._name(node)  # type: ignore[arg-type]
        if kind is ast.Call:
            return self._memo.get(id(node), self._call, node)  # type: ignore[arg-type]
        if kind is ast.Constant:
            return NONE
        if node is None or isinstance(node, (ast.Constant, ast.JoinedStr, ast.Lambda)):
            return NONE
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Call):  # memoised: each call of a chain `x.a().b()` is placed
            return self._memo.get(id(node), self._call, node)
        if isinstance(node, ast.Attribute):
            if node.attr in _METADATA:
                return NONE
            if self.qualname_of(node) is not None:
                return NONE  # torch.float32, a module: no tensor
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self._self_attribute(node)
            inner = self.of(node.value)
            return UNKNOWN if inner == NONE else inner  # `self.w`: an object's state
        if isinstance(node, ast.Subscript):
            return self.of(node.value)
        if isinstance(node, (ast.BinOp, ast.Compare)):  # operands of one op share a device
            return self._shared([n for n in ast.iter_child_nodes(node) if isinstance(n, ast.expr)])
        if isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.IfExp)):
            return self._all(ast.iter_child_nodes(node))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Starred)):
            return self._all(ast.iter_child_nodes(node))
        return UNKNOWN

    def _all(self, nodes: object) -> str:
        out = NONE
        for child in nodes:  # type: ignore[attr-defined]
            if isinstance(child, ast.expr):
                out = join(out, self.of(child))
        return out

    def _self_attribute(self, node: ast.Attribute) -> str:
        """`self.inputs` in a method: the join of what the class's methods assign to it
        (`self.inputs = torch.randn(n, 3)` in `__init__`); unknown if it has no assignment
        here (a base class, another file may set it)."""
        cls = self._enclosing_class(node)
        if cls is None:
            return UNKNOWN
        values = self._self_assignments(cls).get(node.attr)
        if not values:
            return UNKNOWN
        return self._memo.get(("self", id(cls), node.attr), self._joined, values)

    def _joined(self, values: list[ast.expr]) -> str:
        out = NONE
        for value in values:
            out = join(out, self.of(value))
        return UNKNOWN if out == NONE else out

    def _self_assignments(self, cls: ast.ClassDef) -> dict[str, list[ast.expr]]:
        """`self.NAME = value` in a class's methods, by NAME (all classes indexed at once, from
        the assignments the name model's walk collected)."""
        if self._classes is None:
            self._classes = {}
            for node, _ in self.model.idiom_nodes:
                if type(node) is not ast.Assign:
                    continue
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        owner = self._enclosing_class(node)
                        if owner is not None:
                            by_name = self._classes.setdefault(id(owner), {})
                            by_name.setdefault(target.attr, []).append(node.value)
        return self._classes.get(id(cls), {})

    def _enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        parents = self.model.parents
        current = parents.get(node)
        while current is not None and not isinstance(current, ast.ClassDef):
            current = parents.get(current)
        return current

    def _name(self, name: ast.Name) -> str:
        """The join of every value the name's scope assigns it: one answer per binding, shared
        by all its reads."""
        found = self.model.binding_of(name)
        if found is None:
            return NONE  # a builtin
        scope, bindings = found
        return self._memo.get(("name", id(scope), name.id), self._bound, bindings)

    def _bound(self, bindings: list[Binding]) -> str:
        out = NONE
        for binding in bindings:
            if binding.kind in ("import", "none"):
                continue
            value = _assigned(binding.node, self.model.parents)
            if value is None:
                return UNKNOWN  # a parameter, a loop target, `a, b = ...`
            out = join(out, self.of(value))
        return out

    def _call(self, call: ast.Call) -> str:
        qualname = self.qualname_of(call.func)
        args = [*call.args, *(k.value for k in call.keywords)]
        if qualname is not None:
            if qualname in _FACTORIES:
                device = next((k.value for k in call.keywords if k.arg == "device"), None)
                if device is not None:
                    return self.device_value(device)
                return UNKNOWN if self.default_device else HOST
            if qualname in _HOST_CALLS:
                return HOST
            if qualname.partition(".")[0] != "torch":
                return UNKNOWN
            if qualname.endswith("_like"):
                device = next((k.value for k in call.keywords if k.arg == "device"), None)
                return self.device_value(device) if device is not None else self._all(args)
            if qualname.rsplit(".", 1)[-1][:1].isupper():
                return UNKNOWN  # a module or an object: where its state lives is not known here
            return self._inputs(args)
        func = call.func
        if isinstance(func, ast.Attribute):
            method = func.attr
            if method in _TO_PYTHON:
                return NONE
            if method in _TO_HOST:
                return HOST
            if method in _TO_DEVICE:
                return DEVICE
            if method == "to":
                return self._to(call, func.value)
            receiver = self.of(func.value)
            if receiver in (HOST, DEVICE):
                return receiver
            if receiver == NONE and not isinstance(func.value, ast.Constant):
                return UNKNOWN
            return join(receiver, self._all(args))
        if isinstance(func, ast.Name) and func.id in _PYTHON_BUILTINS:
            return NONE
        return UNKNOWN  # the project's own code: `model(x)`, `make_batch()`

    def _inputs(self, args: list[ast.expr]) -> str:
        """Where a torch function of these arguments runs; with no tensor at all, it makes a
        new CPU tensor (`torch.normal(0, 1, (3,))`)."""
        shared = self._shared(args)
        return HOST if shared == NONE else shared

    def _shared(self, operands: list[ast.expr]) -> str:
        """The device the tensors of one op share (torch refuses a mix): a host tensor among
        operands the code cannot place (often ints: `torch.sort(x, dim)`) makes a host op."""
        places = {self.of(operand) for operand in operands}
        if DEVICE in places:
            return DEVICE
        if HOST in places:
            return HOST
        return NONE if places <= {NONE} else UNKNOWN

    def _to(self, call: ast.Call, receiver: ast.expr) -> str:
        """`.to(device)`, `.to("cpu")`, `.to(torch.float16)`, `.to(other_tensor)`."""
        targets = [*call.args, *(k.value for k in call.keywords if k.arg in ("device", "other"))]
        placed = NONE
        for target in targets:
            qualname = self.qualname_of(target)
            if (
                qualname is not None
                and qualname.startswith("torch.")
                and not qualname.endswith(("device", "device_type"))
            ):
                continue  # a dtype
            placed = join(placed, self.device_value(target))
        return self.of(receiver) if placed == NONE else placed

    def device_value(self, node: ast.expr | None, depth: int = 0) -> str:
        """Where a device argument puts a tensor: `"cpu"` and `torch.device("cpu")` the host,
        anything else (a variable named device, `xm.xla_device()`, `"neuron"`) the device."""
        if isinstance(node, ast.Constant):
            if node.value is None:
                return HOST
            return HOST if str(node.value).split(":")[0] == "cpu" else DEVICE
        if isinstance(node, ast.Call) and self.qualname_of(node.func) == "torch.device":
            return self.device_value(node.args[0] if node.args else None, depth + 1)
        if isinstance(node, ast.Name) and depth < 8:
            found = self.model.binding_of(node)
            if found is not None:
                key = (id(found[0]), node.id), depth  # the depth only grows: no cycle here
                cached = self._devices.get(key)
                if cached is None:
                    cached = self._devices[key] = self._device_of(found[1], depth)
                return cached
        return DEVICE

    def _device_of(self, bindings: list[Binding], depth: int) -> str:
        values = [_assigned(b.node, self.model.parents) for b in bindings]
        if values and all(v is not None for v in values):
            out = NONE
            for value in values:
                out = join(out, self.device_value(value, depth + 1))
            return out
        return DEVICE


def _assigned(target: ast.AST | None, parents: Parents) -> ast.expr | None:
    statement = parents.get(target)
    if isinstance(statement, ast.Assign) and any(t is target for t in statement.targets):
        return statement.value
    if isinstance(statement, (ast.AnnAssign, ast.NamedExpr)) and statement.target is target:
        return statement.value
    return None
