"""The versioned TorchNeuron compatibility matrix: load, validate, query, diff. No torch import.

from neuron_migrate.matrix import load_matrix
m = load_matrix("2.14.3.0")
m.op_status("aten::sort").status       # "cpu_fallback"

The names below load with the submodule that defines them, on first use: a scan that the
result cache answers reads no matrix and so never imports the YAML loader.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neuron_migrate.matrix.diff import MatrixDiff, OpChange, RuleChange, diff_matrices
    from neuron_migrate.matrix.loader import clear_cache, load_matrix
    from neuron_migrate.matrix.model import (
        CONFIDENCES,
        EVIDENCE_KINDS,
        OP_STATUSES,
        ApiEntry,
        CompileRules,
        DtypeRule,
        Evidence,
        Matrix,
        MemoryFormatRule,
        NamespaceRule,
        NamespaceVerdict,
        OpEntry,
        OpVerdict,
        Unknown,
    )
    from neuron_migrate.matrix.names import normalize_op
    from neuron_migrate.matrix.versions import available_versions, newest_version, resolve_version

_SUBMODULE = {
    **dict.fromkeys(("MatrixDiff", "OpChange", "RuleChange", "diff_matrices"), "diff"),
    **dict.fromkeys(("clear_cache", "load_matrix"), "loader"),
    **dict.fromkeys(
        (
            "CONFIDENCES",
            "EVIDENCE_KINDS",
            "OP_STATUSES",
            "ApiEntry",
            "CompileRules",
            "DtypeRule",
            "Evidence",
            "Matrix",
            "MemoryFormatRule",
            "NamespaceRule",
            "NamespaceVerdict",
            "OpEntry",
            "OpVerdict",
            "Unknown",
        ),
        "model",
    ),
    "normalize_op": "names",
    **dict.fromkeys(("available_versions", "newest_version", "resolve_version"), "versions"),
}

__all__ = [
    "CONFIDENCES",
    "EVIDENCE_KINDS",
    "OP_STATUSES",
    "ApiEntry",
    "CompileRules",
    "DtypeRule",
    "Evidence",
    "Matrix",
    "MatrixDiff",
    "MemoryFormatRule",
    "NamespaceRule",
    "NamespaceVerdict",
    "OpChange",
    "OpEntry",
    "OpVerdict",
    "RuleChange",
    "Unknown",
    "available_versions",
    "clear_cache",
    "diff_matrices",
    "load_matrix",
    "newest_version",
    "normalize_op",
    "resolve_version",
]


def __getattr__(name: str) -> Any:
    submodule = _SUBMODULE.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value  # later lookups skip this function
    return value
