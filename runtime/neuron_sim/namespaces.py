"""Python namespaces the matrix marks unsupported, and the APIs an imported official table
marks N, refused where they meet neuron tensors.

Most of a namespace's ops are ordinary aten ops, so the op check alone would let
`torch.distributions.Normal(loc_on_neuron, ...)` run. The matrix rules on the namespace as a
whole; this module enforces them at its entry points, and only for neuron inputs (the same code
on CPU tensors is the user's business). A table's Y row for one API of such a namespace
(`torch.vmap`, `torch.distributions.Normal`) lifts the rule for that API, as the scan does; its
N rows (`torch.cumsum`, `torch.distributed.send`) refuse the API even where its ops would run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import torch

from neuron_sim.errors import NeuronUnsupportedOpError
from neuron_sim.recorder import ProcessTrace
from neuron_sim.source import user_location

# The transforms of torch.func: they take a function and return one; the inputs arrive at call.
_FUNC_TRANSFORMS = ("vmap", "grad", "grad_and_value", "jacrev", "jacfwd", "hessian", "vjp", "jvp")


def _has_neuron_tensor(values: Iterable[Any]) -> bool:
    for value in values:
        if isinstance(value, torch.Tensor) and value.device.type == "neuron":
            return True
        if isinstance(value, (list, tuple)) and _has_neuron_tensor(value):
            return True
        if isinstance(value, dict) and _has_neuron_tensor(value.values()):
            return True
    return False


class _Refuser:
    def __init__(self, matrix: Any, trace: ProcessTrace) -> None:
        self.matrix = matrix
        self.trace = trace

    def unsupported(self, qualname: str) -> bool:
        verdict = self.matrix.namespace_status(qualname)
        return verdict is not None and verdict.status == "unsupported"

    def refuse(
        self, qualname: str, namespace: str | None = None, note: str | None = None
    ) -> NeuronUnsupportedOpError:
        location = user_location()
        namespace = namespace or qualname.rsplit(".", 1)[0]
        note = note or f"{namespace} is unsupported in torch-neuronx {self.matrix.version}"
        error = NeuronUnsupportedOpError(qualname, location, note)
        self.trace.refusals.append({"op": qualname, "location": location, "message": str(error)})
        return error


def _guard_distributions(refuser: _Refuser) -> None:
    from torch.distributions import Distribution

    if not refuser.unsupported("torch.distributions.Distribution"):
        return

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        qualname = f"torch.distributions.{cls.__name__}"
        on_device = _has_neuron_tensor(args) or _has_neuron_tensor(kwargs.values())
        if on_device and refuser.unsupported(qualname):  # a Y row may lift it for this class
            raise refuser.refuse(qualname)
        return object.__new__(cls)

    Distribution.__new__ = __new__  # type: ignore[method-assign]


def _guard_func(refuser: _Refuser) -> None:
    import torch.func

    for name in _FUNC_TRANSFORMS:
        qualname = f"torch.func.{name}"
        original = getattr(torch.func, name, None)
        if original is None or not refuser.unsupported(qualname):
            continue
        setattr(torch.func, name, _guarded_transform(original, qualname, refuser))
    # `torch.vmap` is `torch.func.vmap` under another name; the matrix lists it as an alias.
    if refuser.unsupported("torch.vmap"):
        alias = "torch.func (torch.vmap is torch.func.vmap)"
        torch.vmap = _guarded_transform(torch.vmap, "torch.vmap", refuser, namespace=alias)


def _guarded_transform(
    transform: Callable[..., Any], qualname: str, refuser: _Refuser, namespace: str | None = None
) -> Callable[..., Any]:
    @functools.wraps(transform)
    def guarded(*t_args: Any, **t_kwargs: Any) -> Any:
        if _has_neuron_tensor(t_args) or _has_neuron_tensor(t_kwargs.values()):
            raise refuser.refuse(qualname, namespace)  # vjp/jvp take the inputs directly
        transformed = transform(*t_args, **t_kwargs)
        if not callable(transformed):
            return transformed

        @functools.wraps(transformed)
        def call(*args: Any, **kwargs: Any) -> Any:
            if _has_neuron_tensor(args) or _has_neuron_tensor(kwargs.values()):
                raise refuser.refuse(qualname, namespace)
            return transformed(*args, **kwargs)

        return call

    return guarded


def _guard_table_rows(refuser: _Refuser) -> None:
    """Refuse the APIs an imported official table marks N (`torch.cumsum`, `Tensor.cumsum`,
    `torch.distributed.send`) when they meet neuron tensors."""
    for qualname, row in refuser.matrix.apis.items():
        if row.status != "unsupported":
            continue
        owner, name = _owner_of(qualname)
        original = getattr(owner, name, None) if owner is not None else None
        if not callable(original):
            continue  # not a function of this torch (or a flag, as torch.backends.*.benchmark)
        matrix = refuser.matrix
        if matrix.evidence_kind(row.source) == "official-table":
            note = f"N in the official table of torch-neuronx {matrix.version}"
        else:  # the matrix's own row: an API a later release names as newly working
            note = f"not supported in torch-neuronx {matrix.version}: {row.note}"
        # The device's own functions (torch.accelerator's memory ones) take no tensor: any
        # call is the device's.
        always = qualname.startswith(_DEVICE_APIS)
        refusing = _refusing(original, qualname, note, refuser, always)
        setattr(owner, name, refusing)
        if owner is torch.accelerator and getattr(torch.accelerator.memory, name, None):
            setattr(torch.accelerator.memory, name, refusing)  # the same function, twice named


def _owner_of(qualname: str) -> tuple[Any, str]:
    """The module or class that holds the API `qualname`, and its attribute name."""
    import importlib

    path, _, name = qualname.rpartition(".")
    if path == "Tensor":
        return torch.Tensor, name
    try:
        return importlib.import_module(path), name
    except ImportError:
        parent, _, cls = path.rpartition(".")
        try:
            return getattr(importlib.import_module(parent), cls, None), name
        except ImportError:
            return None, name


_DEVICE_APIS = ("torch.accelerator.",)


def _refusing(
    api: Callable[..., Any], qualname: str, note: str, refuser: _Refuser, always: bool = False
) -> Callable[..., Any]:
    @functools.wraps(api)
    def refusing(*args: Any, **kwargs: Any) -> Any:
        if always or _has_neuron_tensor(args) or _has_neuron_tensor(kwargs.values()):
            raise refuser.refuse(qualname, note=note)
        return api(*args, **kwargs)

    return refusing


def install(matrix: Any, trace: ProcessTrace) -> None:
    refuser = _Refuser(matrix, trace)
    _guard_distributions(refuser)
    _guard_func(refuser)
    _guard_table_rows(refuser)
