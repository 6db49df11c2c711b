"""Spellings of op, dtype and memory-format names, reduced to the one form the matrix uses.

Ops are keyed like ``OpOverload.name()``: ``aten::add.Tensor``, ``aten::sort`` (the default
overload has no suffix), ``c10d::allreduce_``.
"""

from __future__ import annotations

from functools import lru_cache

# Operator namespaces that may be written with dots (``aten.sort.default``).
_OP_NAMESPACES = ("aten", "c10d", "_c10d_functional", "prims", "quantized")


@lru_cache(maxsize=8192)
def normalize_op(op: str) -> str:
    """``aten.sort.default`` / ``torch.ops.aten.sort.default`` / ``sort`` -> ``aten::sort``."""
    name = op.strip()
    if name.startswith("torch.ops."):
        name = name[len("torch.ops.") :]
    if "::" not in name:
        head, dot, rest = name.partition(".")
        if dot and head in _OP_NAMESPACES:
            name = f"{head}::{rest}"
        elif not dot:
            name = f"aten::{name}"
    base, dot, overload = name.partition(".")
    if dot and overload in ("default", ""):
        return base
    return name


def normalize_dtype(dtype: str) -> str:
    """``torch.float64`` -> ``float64``; aliases (``double``) are resolved by the matrix."""
    name = dtype.strip()
    return name[len("torch.") :] if name.startswith("torch.") else name


def normalize_memory_format(name: str) -> str:
    """``torch.channels_last`` -> ``channels_last``."""
    key = name.strip()
    return key[len("torch.") :] if key.startswith("torch.") else key
