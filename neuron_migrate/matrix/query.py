"""Answer "what happens to NAME on the device?" for an aten op or a Python API. No torch import.

A Python API goes through the API->aten map and the namespace rules; its status is the worst of
what it reaches (native < cpu_fallback < unsupported).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from neuron_migrate.matrix.api_map import ApiMap
from neuron_migrate.matrix.model import Matrix

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
    namespace: dict[str, str] | None = None
    ops: list[dict[str, str]] = field(default_factory=list)

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


def describe_name(name: str, matrix: Matrix, api_map: ApiMap | None) -> NameReport:
    base: dict[str, Any] = {
        "name": name,
        "version": matrix.version,
        "torch_version": matrix.torch_version,
    }
    if is_op_name(name):
        verdict = matrix.op_status(name)
        listed = matrix.is_listed(verdict.op)
        note = "listed in the matrix" if listed else "not listed exactly"
        op = {
            "op": verdict.op,
            "status": verdict.status,
            "source": verdict.source,
            "note": verdict.note,
        }
        return NameReport(**base, kind="op", status=verdict.status, kind_note=note, ops=[op])
    for qualname in api_candidates(name):
        ns = matrix.namespace_status(qualname)
        aten = api_map.aten_for(qualname) if api_map is not None else None
        if ns is None and aten is None:
            continue
        ops = []
        for op_name in aten or ():
            v = matrix.op_status(op_name)
            ops.append({"op": v.op, "status": v.status, "source": v.source, "note": v.note})
        statuses = [o["status"] for o in ops] + ([ns.status] if ns is not None else [])
        status = max(statuses, key=lambda s: _RANK.get(s, 0)) if statuses else "native"
        if aten is None:
            note = f"{qualname}: not in the API map; namespace rule only"
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
            namespace=ns._asdict() if ns is not None else None,
            ops=ops,
        )
    return NameReport(**base, kind="unknown", status="unknown", kind_note="not found")
