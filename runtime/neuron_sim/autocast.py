"""`torch.autocast("neuron")`: TorchNeuron registers PyTorch's CUDA-style autocast lists.

Core torch registers nothing on the AutocastPrivateUse1 key, so every op falls through, and
the listed ops get a Python kernel that casts their floating inputs, then redispatches below
the autocast key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload

# PyTorch's CUDA autocast lists (aten/src/ATen/autocast_mode.cpp), which TorchNeuron mirrors.
LOWER_PRECISION = [
    "_convolution.deprecated",
    "_convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d.input",
    "conv_transpose3d.input",
    "convolution",
    "prelu",
    "addmm",
    "addmv",
    "addr",
    "matmul",
    "einsum",
    "mm",
    "mv",
    "linalg_vecdot",
    "linear",
    "addbmm",
    "baddbmm",
    "bmm",
    "chain_matmul",
    "linalg_multi_dot",
    "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "_scaled_dot_product_flash_attention",
    "scaled_dot_product_attention",
]
FLOAT32 = [
    "acos",
    "asin",
    "cosh",
    "erfinv",
    "exp",
    "expm1",
    "log",
    "log10",
    "log2",
    "log1p",
    "reciprocal",
    "rsqrt",
    "sinh",
    "tan",
    "pow.Tensor_Scalar",
    "pow.Tensor_Tensor",
    "pow.Scalar",
    "softplus",
    "layer_norm",
    "native_layer_norm",
    "group_norm",
    "frobenius_norm.dim",
    "nuclear_norm",
    "nuclear_norm.dim",
    "cosine_similarity",
    "poisson_nll_loss",
    "cosine_embedding_loss",
    "nll_loss",
    "nll_loss2d",
    "hinge_embedding_loss",
    "kl_div",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "mse_loss",
    "margin_ranking_loss",
    "multilabel_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "multi_margin_loss",
    "binary_cross_entropy_with_logits",
    "dist",
    "pdist",
    "cdist",
    "renorm",
    "logsumexp",
    "cross_entropy_loss",
    "prod",
    "prod.dim_int",
    "softmax.int",
    "log_softmax.int",
    "cumprod",
    "cumsum",
    "linalg_vector_norm",
    "sum",
    "sum.dim_IntList",
    "_softmax",
    "_log_softmax",
]
BANNED = ("binary_cross_entropy",)

_AUTOCAST_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)  # type: ignore[attr-defined]
_FLOATING_LOW = (torch.float16, torch.bfloat16)
_libraries: list[torch.library.Library] = []


def _cast(value: Any, predicate: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if predicate(value) else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, predicate, dtype) for v in value)
    return value


def _eligible(tensor: torch.Tensor) -> bool:
    return (
        tensor.is_floating_point()
        and tensor.dtype is not torch.float64
        and tensor.device.type == "neuron"
    )


def _lower_precision_kernel(func: OpOverload) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype("neuron")

        def wanted(t: torch.Tensor) -> bool:
            return _eligible(t) and t.dtype is not dtype

        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEY):
            return func(*_cast(args, wanted, dtype), **_cast(kwargs, wanted, dtype))

    return kernel


def _float32_kernel(func: OpOverload) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        def wanted(t: torch.Tensor) -> bool:
            return _eligible(t) and t.dtype in _FLOATING_LOW

        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEY):
            if kwargs.get("dtype") is not None:  # an explicit dtype wins
                return func(*args, **kwargs)
            return func(*_cast(args, wanted, torch.float32), **_cast(kwargs, wanted, torch.float32))

    return kernel


def _banned_kernel(func: OpOverload) -> Callable[..., Any]:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{func.name()} is unsafe to autocast: torch.nn.functional.binary_cross_entropy and "
            "torch.nn.BCELoss are unsafe to autocast. Use BCEWithLogitsLoss or "
            "binary_cross_entropy_with_logits instead, which are safe to autocast."
        )

    return kernel


def _overload(name: str) -> OpOverload | None:
    packet_name, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, packet_name, None)
    return getattr(packet, overload or "default", None) if packet is not None else None


def register() -> None:
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    kernels = torch.library.Library("aten", "IMPL")
    for names, make in (
        (LOWER_PRECISION, _lower_precision_kernel),
        (FLOAT32, _float32_kernel),
        (BANNED, _banned_kernel),
    ):
        for name in names:
            func = _overload(name)
            if func is not None:
                kernels.impl(func, make(func), "AutocastPrivateUse1")
    _libraries.extend([fallthrough, kernels])
