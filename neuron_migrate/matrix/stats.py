"""How much of a matrix rests on which kind of evidence: entries by status and by evidence kind.

`matrix stats` prints it; the HTML scan report shows the same table. No torch here.
"""

from __future__ import annotations

from typing import Any

from neuron_migrate.matrix.model import CONFIDENCES, EVIDENCE_KINDS, OP_STATUSES, Evidence, Matrix


def matrix_stats(m: Matrix) -> dict[str, Any]:
    """Counts of the listed op entries (and, apart, of the rules) by status and evidence kind.

    Every kind and status appears, zeros included, in a fixed order, so two versions compare
    column by column.
    """
    kinds = list(EVIDENCE_KINDS)
    by_status = dict.fromkeys(OP_STATUSES, 0)
    by_kind = dict.fromkeys(kinds, 0)
    table = {kind: dict.fromkeys(OP_STATUSES, 0) for kind in kinds}
    by_confidence = {c: dict.fromkeys(OP_STATUSES, 0) for c in CONFIDENCES}
    by_source: dict[str, dict[str, Any]] = {}
    for entry in m.ops.values():
        kind = m.evidence_kind(entry.source)
        by_status[entry.status] += 1
        by_kind[kind] += 1
        table[kind][entry.status] += 1
        confidence = m.confidence(entry.source)
        by_confidence[confidence][entry.status] += 1
        source = by_source.setdefault(
            entry.source,
            {
                "kind": kind,
                "confidence": confidence,
                "entries": 0,
                "by_status": dict.fromkeys(OP_STATUSES, 0),
            },
        )
        source["entries"] += 1
        source["by_status"][entry.status] += 1
    rules = list(_rules(m))
    rules_by_kind = dict.fromkeys(kinds, 0)
    for rule in rules:
        rules_by_kind[rule["kind"]] += 1
    return {
        "version": m.version,
        "torch": m.torch_version,
        "entries": len(m.ops),
        "by_status": by_status,
        "by_kind": by_kind,
        "by_kind_and_status": table,
        "by_confidence_and_status": by_confidence,
        "by_source": dict(sorted(by_source.items())),
        "default": {
            "status": m.default.status,
            "source": m.default.source,
            "kind": m.evidence_kind(m.default.source),
            "confidence": m.confidence(m.default.source),
        },
        "rules": {"count": len(rules), "by_kind": rules_by_kind, "items": rules},
        "apis": len(m.apis),
        "unknowns": [u.topic for u in m.unknowns],
        "kinds": dict(EVIDENCE_KINDS),
        "confidences": dict(CONFIDENCES),
    }


def _rules(m: Matrix) -> Any:
    def rule(section: str, name: str, status: str, source: str) -> dict[str, str]:
        return {
            "section": section,
            "name": name,
            "status": status,
            "source": source,
            "kind": m.evidence_kind(source),
            "confidence": m.confidence(source),
        }

    for d in m.dtypes:
        yield rule("dtypes", d.dtype, f"runs as {d.runs_as}" if d.runs_as else "native", d.source)
    for ns in m.namespaces:
        yield rule("namespaces", ns.namespace, ns.status, ns.source)
    for mf in m.memory_formats:
        yield rule("memory_formats", mf.name, mf.status, mf.source)
    yield rule(
        "compile",
        m.compile.backend,
        f"dynamic=True {m.compile.dynamic_true_status}",
        m.compile.source,
    )


def describe_evidence(evidence: Evidence | None, key: str) -> dict[str, str]:
    """An evidence key in plain words: what it is, how strong, where to read it."""
    if evidence is None:
        return {
            "key": key,
            "kind": "unclassified",
            "kind_means": EVIDENCE_KINDS["unclassified"],
            "confidence": "unknown",
        }
    return {
        "key": key,
        "kind": evidence.kind,
        "kind_means": EVIDENCE_KINDS.get(evidence.kind, ""),
        "confidence": evidence.confidence,
        "title": evidence.title,
        "reference": evidence.reference,
        "note": evidence.note,
    }
