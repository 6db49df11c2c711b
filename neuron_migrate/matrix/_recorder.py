"""Record the ops a call reaches at the level a PrivateUse1 backend sees them. Needs torch.

Imported only by the maintainer tools (`api_map_builder`), never by the package.

Two things make the recording match what TorchNeuron (and the simulated runtime) see:

- Inputs are `StandIn` wrapper tensors that report a non-CPU device (``meta``) and hold a CPU
  tensor. Without this, torch's composite code takes CPU-only paths (``nn.LSTM`` would record
  ``aten::mkldnn_rnn_layer``), which a device backend never reaches.
- The recorder is a dispatch mode, so it sees ops below CompositeImplicitAutograd decompositions
  and below autograd. When an op's only kernel for a new backend is torch's generic
  CompositeExplicitAutograd(NonFunctional) one (``aten::sort`` -> ``aten::sort.stable``,
  ``aten::lift_fresh_copy`` -> ``aten::clone``), it runs that generic kernel with itself still
  active and stores what it calls under ``composite_calls`` (for the matrix importer), not as
  ops of the API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

# Autograd and tensor-construction bookkeeping, native on every backend: noise in an API's list.
DROPPED_OPS: frozenset[str] = frozenset(
    {
        "aten::detach",
        "aten::alias",
        "aten::lift_fresh",
        "aten::lift_fresh_copy",
        "aten::is_same_size",
    }
)
DROPPED_NAMESPACES: frozenset[str] = frozenset({"profiler"})

_STAND_IN_DEVICE = torch.device("meta")
_CEA = "CompositeExplicitAutograd"
_CEANF = "CompositeExplicitAutogradNonFunctional"
_MAX_DEPTH = 4
_CIA = "CompositeImplicitAutograd"
_generic_cache: dict[str, Any] = {}


class StandIn(torch.Tensor):
    """A tensor on a pretend device: reports ``meta``, computes on the CPU tensor it holds."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor, requires_grad: bool = False) -> StandIn:
        out = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            device=_STAND_IN_DEVICE,
            requires_grad=requires_grad,
        )
        out.elem = elem
        return out

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:
        return _run(func, args, kwargs or {})

    def __repr__(self) -> str:  # type: ignore[override]
        return f"StandIn({self.elem!r})"


def to_stand_in(obj: Any) -> Any:
    """Copy every CPU tensor in ``obj`` onto the pretend device (keeping requires_grad)."""

    def convert(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or isinstance(x, StandIn) or x.layout != torch.strided:
            return x
        moved: torch.Tensor = StandIn(x.detach().clone(), requires_grad=x.requires_grad)
        if isinstance(x, torch.nn.Parameter):
            moved = torch.nn.Parameter(moved, requires_grad=x.requires_grad)
            if x.grad is not None:
                moved.grad = StandIn(x.grad.detach().clone())
        return moved

    return tree_map(convert, obj)


def _unwrap(x: Any) -> Any:
    if isinstance(x, StandIn):
        return x.elem
    if isinstance(x, torch.device) and x.type == _STAND_IN_DEVICE.type:
        return torch.device("cpu")
    if isinstance(x, torch.Tensor) and x.device.type == _STAND_IN_DEVICE.type:
        raise RuntimeError("a real meta tensor reached the stand-in device")
    return x


def _on_device(args: Any, kwargs: dict[str, Any]) -> bool:
    for x in tree_leaves((args, kwargs)):
        if isinstance(x, StandIn):
            return True
        if isinstance(x, torch.device) and x.type == _STAND_IN_DEVICE.type:
            return True
    return str(kwargs.get("device")) == _STAND_IN_DEVICE.type


def _run(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """Run ``func`` on the CPU tensors; wrap the results when the call was on the device."""
    on_device = _on_device(args, kwargs)
    out = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
    if not on_device:
        return out
    # In-place and out= ops return their (already wrapped) inputs.
    schema = func._schema
    if schema.is_mutable and len(schema.returns) == 1:
        for arg, value in zip(schema.arguments, args, strict=False):
            if arg.alias_info is not None and arg.alias_info.is_write:
                return value
        for key, value in kwargs.items():
            if isinstance(value, StandIn) and key == "out":
                return value
    return tree_map(
        lambda t: StandIn(t) if isinstance(t, torch.Tensor) and not isinstance(t, StandIn) else t,
        out,
    )


def _is_bare_meta(x: Any) -> bool:
    return (
        isinstance(x, torch.Tensor)
        and not isinstance(x, StandIn)
        and x.device.type == _STAND_IN_DEVICE.type
    )


def generic_kernel(name: str) -> Any:
    """The dispatch key of torch's generic kernel a new backend would run for the op, or None.

    CompositeExplicitAutograd(NonFunctional) kernels reach the backend as themselves;
    CompositeImplicitAutograd ones are decomposed before it, but are seen here when a generic
    kernel calls them. Ops that also have a CPU kernel are not descended into: the structured
    functional variants among them (``aten::any.dim``) call their ``.out`` overload, which the
    matrix importer reads from torch's ``native_functions.yaml`` instead.
    """
    if name not in _generic_cache:
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        key = None
        if not has(name, "CPU"):
            if has(name, _CEA):
                key = torch._C.DispatchKey.CompositeExplicitAutograd
            elif has(name, _CEANF):
                key = torch._C.DispatchKey.CompositeExplicitAutogradNonFunctional
            elif has(name, _CIA):
                key = torch._C.DispatchKey.CompositeImplicitAutograd
        _generic_cache[name] = key
    return _generic_cache[name]


class Recorder(TorchDispatchMode):
    """Records top-level ops in order (deduplicated) and the calls of generic kernels."""

    def __init__(self, composite_calls: dict[str, list[str]]) -> None:
        super().__init__()
        self.ops: list[str] = []
        self._seen: set[str] = set()
        self._parents: list[str] = []
        self.composite_calls = composite_calls

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        name = func.name()
        if self._parents:
            calls = self.composite_calls.setdefault(self._parents[-1], [])
            if name not in calls:
                calls.append(name)
        elif self._keep(name):
            self._seen.add(name)
            self.ops.append(name)
        # Descend into a generic kernel, but never into a cycle or deeper than a few levels.
        key = generic_kernel(name) if isinstance(func, torch._ops.OpOverload) else None
        if key is not None and name not in self._parents and len(self._parents) < _MAX_DEPTH:
            self.composite_calls.setdefault(name, [])
            self._parents.append(name)
            try:
                with self:
                    out = func._op_dk(key, *args, **kwargs)
                # Kernels that build views in C++ return plain meta tensors: run the op instead.
                if not any(_is_bare_meta(t) for t in tree_leaves(out)):
                    return out
            except Exception:
                pass
            finally:
                self._parents.pop()
        return _run(func, args, kwargs)

    def _keep(self, name: str) -> bool:
        if name in self._seen or name in DROPPED_OPS:
            return False
        return name.split("::", 1)[0] not in DROPPED_NAMESPACES


def record(fn: Callable[[], Any], composite_calls: dict[str, list[str]]) -> tuple[list[str], Any]:
    """Run ``fn`` under a recorder: (ops reached, fn's result)."""
    rec = Recorder(composite_calls)
    with rec:
        result = fn()
    return rec.ops, result
