"""PrivateUse1 registrations: where neuron tensors are born without a neuron input.

Factories (`torch.zeros(..., device="neuron")`) carry no neuron tensor, so they skip
`__torch_dispatch__` and land on the PrivateUse1 key: one boxed fallback routes them to
`dispatch`. A boxed Python fallback must not see an argument that carries the Python key (an
internal assert in torch), which happens for the few ops torch runs with the Python key
excluded (inside `torch.tensor(..., device=...)`, say); those get explicit kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload

from neuron_sim.tensor import dispatch

# Ops that torch may call below the Python key on neuron tensors.
_BOUNDARY_OPS = (
    "_to_copy",
    "copy_",
    "lift_fresh",
    "lift_fresh_copy",
    "detach",
    "alias",
    "_copy_from",
    "_copy_from_and_resize",
    "empty_like",
    "clone",
    "view",
    "as_strided",
    "_local_scalar_dense",
    "set_.source_Tensor",
    "record_stream",
)

_libraries: list[torch.library.Library] = []  # registrations live as long as these objects


def _factory_fallback(func: OpOverload, *args: Any, **kwargs: Any) -> Any:
    return dispatch(func, args, kwargs)


def _boundary_kernel(func: OpOverload) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        return dispatch(func, args, kwargs)

    return kernel


def register() -> None:
    fallback_lib = torch.library.Library("_", "IMPL")
    fallback_lib.fallback(_factory_fallback, "PrivateUse1")
    aten_lib = torch.library.Library("aten", "IMPL")
    for name in _BOUNDARY_OPS:
        packet_name, _, overload = name.partition(".")
        func = getattr(getattr(torch.ops.aten, packet_name), overload or "default")
        aten_lib.impl(func, _boundary_kernel(func), "PrivateUse1")
    _libraries.extend([fallback_lib, aten_lib])
