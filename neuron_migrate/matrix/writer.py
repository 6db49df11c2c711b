"""Write a matrix file the way the bundled ones are written: evidence first, then the op groups,
one op a line, so that a regenerated or imported matrix diffs line by line. No torch here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass
class Group:
    name: str
    status: str
    source: str
    note: str
    ops: dict[str, str] = field(default_factory=dict)  # op -> per-op note


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)


def render_ops(groups: list[Group]) -> str:
    lines = ["# Per-op status, grouped by the evidence behind it.", "ops:"]
    for group in groups:
        lines.append(f"  # --- {group.name}: {len(group.ops)} ops, {group.status}")
        body = {"group": group.name, "status": group.status, "source": group.source}
        if group.note:
            body["note"] = group.note
        chunk = dump_yaml([body]).rstrip().splitlines()
        lines += ["  " + line for line in chunk]
        lines.append("    ops:")
        for op, note in group.ops.items():
            if note:
                lines.append(f"      - {{op: {op}, note: {json.dumps(note)}}}")
            else:
                lines.append(f"      - {op}")
    return "\n".join(lines)
