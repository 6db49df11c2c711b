"""Answer "what happens to NAME on the device?" for an aten op or a Python API. No torch import.

A Python API goes through the API->aten map and the namespace rules; its status is the worst of
what it reaches (native < cpu_fallback < unsupported).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from neuron_migrate.matrix.api_map import ApiMap
from neuron_migrate.matrix.model import Matrix, OpVerdict
from neuron_migrate.matrix.stats import describe_evidence

_RANK = {"native": 0, "partial": 1, "cpu_fallback": 1, "unsupported": 2}
_OP_PREFIXES = ("aten.", "c10d.", "torch.ops.", "_c10d_functional.", "prims.")


@dataclass(frozen=True)
class NameReport:
    name: str
    version: str
    torch_version: str
    kind: str  # op | api | unknown
    status: str  # native | cpu_fallback | unsupported | partial | unknown
    kind_note: str = ""
    api_map: str = ""
    namespace: dict[str, Any] | None = None
    ops: list[dict[str, Any]] = field(default_factory=list)
    # The imported official table's row for this API, when the matrix has one.
    table_row: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_op_name(name: str) -> bool:
    return "::" in name or name.startswith(_OP_PREFIXES)


def api_candidates(name: str) -> list[str]:
    """Spellings to try for a Python API: ``F.gelu``, ``nn.Linear``, ``sort`` -> qualified names."""
    if name.startswith("F."):
        return [f"torch.nn.functional.{name[2:]}"]
    if name.startswith("nn."):
        return [f"torch.nn.{name[3:]}"]
    if name.startswith("torch.Tensor."):
        return [f"Tensor.{name[len('torch.Tensor.') :]}"]
    if "." not in name:
        return [f"torch.{name}", f"Tensor.{name}"]
    return [name]


def _op(matrix: Matrix, v: OpVerdict) -> dict[str, Any]:
    evidence = describe_evidence(matrix.evidence.get(v.source), v.source)
    return {
        "op": v.op,
        "status": v.status,
        "source": v.source,
        "note": v.note,
        "evidence": evidence,
    }


def describe_name(name: str, matrix: Matrix, api_map: ApiMap | None) -> NameReport:
    base: dict[str, Any] = {
        "name": name,
        "version": matrix.version,
        "torch_version": matrix.torch_version,
    }
    if is_op_name(name):
        verdict = matrix.op_status(name)
        if matrix.is_listed(verdict.op):
            note = "listed in the matrix"
        elif verdict == matrix.default._replace(op=verdict.op):
            note = (
                f"{verdict.op} is unknown to the matrix (no entry names it or its base op): "
                f"the default for unlisted ops gives it {verdict.status}"
            )
        else:
            note = f"not listed exactly: {verdict.note}"
        return NameReport(
            **base, kind="op", status=verdict.status, kind_note=note, ops=[_op(matrix, verdict)]
        )
    for qualname in api_candidates(name):
        ns = matrix.namespace_status(qualname)
        aten = api_map.aten_for(qualname) if api_map is not None else None
        row = matrix.api_status(qualname)
        if ns is None and aten is None and row is None:
            continue
        ops = [_op(matrix, matrix.op_status(op_name)) for op_name in aten or ()]
        statuses = [o["status"] for o in ops] + ([ns.status] if ns is not None else [])
        table_row = None
        if row is not None:
            # The table's row speaks about this API itself: it decides, whatever its ops.
            statuses = [row.status]
            table_row = {
                **row._asdict(),
                "evidence": describe_evidence(matrix.evidence.get(row.source), row.source),
            }
        namespace = None
        if ns is not None:
            namespace = {
                **ns._asdict(),
                "evidence": describe_evidence(matrix.evidence.get(ns.source), ns.source),
            }
        status = max(statuses, key=lambda s: _RANK.get(s, 0)) if statuses else "native"
        if aten is None:
            note = f"{qualname}: not in the API map; " + (
                "its API row" if ns is None else "namespace rule only"
            )
        elif not aten:
            note = f"{qualname} reaches no device op"
        else:
            note = f"{qualname} reaches {len(aten)} op(s)"
        return NameReport(
            **base,
            kind="api",
            status=status,
            kind_note=note,
            api_map=api_map.path if api_map is not None else "",
            namespace=namespace,
            ops=ops,
            table_row=table_row,
        )
    return NameReport(**base, kind="unknown", status="unknown", kind_note="not found")
