"""Rich text for the `matrix` commands: an entry's evidence in plain words, the stats table.

Kept out of the CLI modules so that any front end prints the same words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neuron_migrate.matrix.model import OP_STATUSES

if TYPE_CHECKING:
    from rich.console import Console

STYLE = {"native": "green", "cpu_fallback": "yellow", "unsupported": "red", "partial": "yellow"}


def styled(status: str) -> str:
    return f"[{STYLE.get(status, 'white')}]{status}[/]"


def evidence_lines(evidence: dict[str, Any]) -> list[str]:
    """``evidence`` (`stats.describe_evidence`) as sentences: kind, what it is, where to read."""
    lines = [
        f"{evidence['key']}: {evidence['kind']}, {evidence['kind_means']}; "
        f"confidence {evidence.get('confidence', 'unknown')}."
    ]
    if evidence.get("title"):
        lines.append(f"  {evidence['title']}.")
    if evidence.get("reference"):
        lines.append(f"  Source: {evidence['reference']}")
    if evidence.get("note"):
        lines.append(f"  {evidence['note']}")
    return lines


def print_evidence(console: Console, evidence: dict[str, Any], indent: str) -> None:
    from rich.markup import escape

    for line in evidence_lines(evidence):
        console.print(f"{indent}{escape(line)}", style=None if line[0] != " " else "dim")


def print_stats(console: Console, stats: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(
        title=f"torch-neuronx {stats['version']} (torch {stats['torch']}): "
        f"{stats['entries']} listed ops by evidence kind",
        title_justify="left",
    )
    table.add_column("evidence kind")
    for status in OP_STATUSES:
        table.add_column(styled(status), justify="right")
    table.add_column("all", justify="right")
    table.add_column("rules", justify="right")
    for kind, row in stats["by_kind_and_status"].items():
        total, rules = stats["by_kind"][kind], stats["rules"]["by_kind"][kind]
        if total or rules:
            table.add_row(kind, *(str(row[s]) for s in OP_STATUSES), str(total), str(rules))
    table.add_row(
        "[bold]all[/]",
        *(f"[bold]{stats['by_status'][s]}[/]" for s in OP_STATUSES),
        f"[bold]{stats['entries']}[/]",
        f"[bold]{stats['rules']['count']}[/]",
    )
    console.print(table)
    sure = stats["by_confidence_and_status"]
    console.print(
        "By confidence: "
        + "; ".join(
            f"{c} {sum(row.values())} ({row['cpu_fallback']} cpu_fallback)"
            for c, row in sure.items()
            if sum(row.values())
        )
        + "."
    )
    default = stats["default"]
    console.print(
        f"Unlisted ops: {styled(default['status'])} ({default['source']}, {default['kind']}, "
        f"confidence {default['confidence']})."
    )
    if stats["apis"]:
        console.print(f"API rows (imported table or named by the release): {stats['apis']}.")
    for kind, means in stats["kinds"].items():
        if stats["by_kind"][kind] or stats["rules"]["by_kind"][kind]:
            console.print(f"  {kind}: {means}", style="dim")
    if stats["unknowns"]:
        console.print(f"Not settled by the release: {', '.join(stats['unknowns'])}.")
