"""Python namespaces the matrix marks unsupported, refused where they meet neuron tensors.

Most of a namespace's ops are ordinary aten ops, so the op check alone would let
`torch.distributions.Normal(loc_on_neuron, ...)` run. The matrix rules on the namespace as a
whole; this module enforces them at its entry points, and only for neuron inputs (the same code
on CPU tensors is the user's business).
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

    def refuse(self, qualname: str, namespace: str | None = None) -> NeuronUnsupportedOpError:
        location = user_location()
        namespace = namespace or qualname.rsplit(".", 1)[0]
        note = f"{namespace} is unsupported in torch-neuronx {self.matrix.version}"
        error = NeuronUnsupportedOpError(qualname, location, note)
        self.trace.refusals.append({"op": qualname, "location": location, "message": str(error)})
        return error


def _guard_distributions(refuser: _Refuser) -> None:
    from torch.distributions import Distribution

    if not refuser.unsupported("torch.distributions.Distribution"):
        return

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        if _has_neuron_tensor(args) or _has_neuron_tensor(kwargs.values()):
            raise refuser.refuse(f"torch.distributions.{cls.__name__}")
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


def install(matrix: Any, trace: ProcessTrace) -> None:
    refuser = _Refuser(matrix, trace)
    _guard_distributions(refuser)
    _guard_func(refuser)
