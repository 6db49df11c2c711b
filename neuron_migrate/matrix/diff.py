"""What differs between two matrices: op statuses, listings, and rules."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from neuron_migrate.matrix.model import Matrix


@dataclass(frozen=True)
class OpChange:
    """An op whose effective status differs; ``a_status`` is a's answer even when unlisted."""

    op: str
    a_status: str
    b_status: str
    a_source: str
    b_source: str


@dataclass(frozen=True)
class RuleChange:
    section: str  # torch, default, dtypes, namespaces, memory_formats, compile, evidence
    key: str
    a: str
    b: str


@dataclass(frozen=True)
class MatrixDiff:
    a_version: str
    b_version: str
    changed: tuple[OpChange, ...]  # listed in both, status differs
    added: tuple[OpChange, ...]  # listed only in b
    removed: tuple[OpChange, ...]  # listed only in a
    rules: tuple[RuleChange, ...]
    # listed in both with the same status, resting on other evidence (what an import changes)
    evidence_changed: tuple[OpChange, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (
            self.changed or self.added or self.removed or self.rules or self.evidence_changed
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def diff_matrices(a: Matrix, b: Matrix) -> MatrixDiff:
    changed, added, removed, evidence = [], [], [], []
    for op in sorted(set(a.ops) | set(b.ops)):
        va, vb = a.op_status(op), b.op_status(op)
        change = OpChange(op, va.status, vb.status, va.source, vb.source)
        if op not in a.ops:
            added.append(change)
        elif op not in b.ops:
            removed.append(change)
        elif va.status != vb.status:
            changed.append(change)
        elif va.source != vb.source:
            evidence.append(change)
    return MatrixDiff(
        a_version=a.version,
        b_version=b.version,
        changed=tuple(changed),
        added=tuple(added),
        removed=tuple(removed),
        rules=tuple(_rule_changes(a, b)),
        evidence_changed=tuple(evidence),
    )


def _rule_changes(a: Matrix, b: Matrix) -> list[RuleChange]:
    out: list[RuleChange] = []

    def compare(section: str, left: dict[str, str], right: dict[str, str]) -> None:
        for key in sorted(set(left) | set(right)):
            la, rb = left.get(key, "(none)"), right.get(key, "(none)")
            if la != rb:
                out.append(RuleChange(section, key, la, rb))

    compare("torch", {"torch": a.torch_version}, {"torch": b.torch_version})
    compare("default", {"status": a.default.status}, {"status": b.default.status})
    compare("dtypes", _rules_of(a.dtypes, "dtype"), _rules_of(b.dtypes, "dtype"))
    compare(
        "namespaces", _rules_of(a.namespaces, "namespace"), _rules_of(b.namespaces, "namespace")
    )
    compare(
        "memory_formats", _rules_of(a.memory_formats, "name"), _rules_of(b.memory_formats, "name")
    )
    compare("compile", _fields(a.compile), _fields(b.compile))
    compare(
        "evidence", _rules_of(a.evidence.values(), "key"), _rules_of(b.evidence.values(), "key")
    )
    return out


def _rules_of(rules: Any, key_field: str) -> dict[str, str]:
    return {getattr(r, key_field): _render(r._asdict(), skip=key_field) for r in rules}


def _fields(rule: Any) -> dict[str, str]:
    return {k: _render(v) for k, v in rule._asdict().items()}


def _render(value: Any, skip: str = "") -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_render(v)}" for k, v in value.items() if k != skip)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
