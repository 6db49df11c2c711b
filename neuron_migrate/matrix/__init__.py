"""The versioned TorchNeuron compatibility matrix: load, validate, query, diff. No torch import.

from neuron_migrate.matrix import load_matrix
m = load_matrix("2.14.3.0")
m.op_status("aten::sort").status       # "cpu_fallback"
"""

from neuron_migrate.matrix.diff import MatrixDiff, OpChange, RuleChange, diff_matrices
from neuron_migrate.matrix.loader import (
    available_versions,
    clear_cache,
    load_matrix,
    newest_version,
    resolve_version,
)
from neuron_migrate.matrix.model import (
    OP_STATUSES,
    CompileRules,
    DtypeRule,
    Evidence,
    Matrix,
    MemoryFormatRule,
    NamespaceRule,
    NamespaceVerdict,
    OpEntry,
    OpVerdict,
)
from neuron_migrate.matrix.names import normalize_op

__all__ = [
    "OP_STATUSES",
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
    "available_versions",
    "clear_cache",
    "diff_matrices",
    "load_matrix",
    "newest_version",
    "normalize_op",
    "resolve_version",
]
