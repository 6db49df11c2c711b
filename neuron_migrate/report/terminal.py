"""The terminal report: a summary by status, then findings grouped by file. Fits 80 columns."""

from __future__ import annotations

import textwrap
from itertools import groupby
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from neuron_migrate.api import ScanReport
from neuron_migrate.report.evidence_words import evidence_titles, in_words
from neuron_migrate.report.summary import (
    STATUS_LABEL,
    STATUS_ORDER,
    failed_gate_text,
    failing_text,
    partly_scanned,
    summarize,
)

STATUS_STYLE = {
    "unsupported": "bold red",
    "cpu_fallback": "yellow",
    "float64": "magenta",
    "xla": "cyan",
    "advice": "blue",
    "native": "green",
}


def render_terminal(report: ScanReport, console: Console, *, show_native: bool = False) -> None:
    summary = summarize(report)
    files = summary["files"]
    console.print(
        f"[bold]neuron-migrate scan[/] {escape(report.root)}  "
        f"target torch-neuronx {report.target} (torch {report.torch_version})"
    )
    console.print(
        f"{files['analyzed']} files analyzed, {files['skipped_by_prefilter']} skipped by "
        f"prefilter, {files['from_cache']} from cache, {files['errors']} errors"
    )
    mapped, considered = report.api_map_coverage
    unmapped = sum(report.unmapped_apis.values())
    if considered:
        console.print(
            f"[dim]API→aten map: {mapped} of {considered} public torch APIs mapped"
            + (f"; {unmapped} calls to unmapped torch APIs not classified" if unmapped else "")
            + "[/]"
        )
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("status")
    table.add_column("findings", justify="right")
    for status in STATUS_ORDER:
        count = summary["by_status"][status]
        table.add_row(f"[{STATUS_STYLE[status]}]{STATUS_LABEL[status]}[/]", str(count))
    console.print(table)

    shown = [f for f in report.findings if show_native or f.status != "native"]
    titles = evidence_titles(report.target) if shown else {}
    shown.sort(key=lambda f: (f.path, f.cell or 0, f.line, f.col))
    for path, group in groupby(shown, key=lambda f: f.path):
        console.print(f"\n[bold underline]{escape(path)}[/]")
        for f in group:
            style = STATUS_STYLE[f.status]
            low = " [dim](?)[/]" if f.confidence == "low" else ""
            fix = " [green]fix[/]" if f.fixable else ""
            new = " [bold]new[/]" if report.baseline is not None and report.is_new(f) else ""
            where = f"cell {f.cell}:" if f.cell is not None else ""
            marks = f"{low}{fix}{new}"
            console.print(
                f"  {where}{f.line:>4}:{f.col + 1:<3} [{style}]{f.code}[/] {escape(f.api)}{marks}",
                overflow="fold",
            )
            # Wrapped lines keep the indent, so a long message stays readable in 80 columns.
            message = in_words(f.message, titles)
            console.print(_indented(message, console.width), style="dim", soft_wrap=True)
            if f.replacement:
                console.print(_indented(f"→ {f.replacement}", console.width), soft_wrap=True)
    if not show_native and summary["by_status"]["native"]:
        console.print(
            f"\n[dim]{summary['by_status']['native']} native op uses not listed "
            "(--show-native lists them)[/]"
        )

    for partial in (False, True):  # a notebook with a cell that does not parse: partly
        errors = sorted((e for e in report.errors if e.partial is partial), key=lambda e: e.path)
        if errors:
            console.print(f"\n[bold red]Files {errors[0].what}[/]")
        for error in errors:
            console.print(f"  {escape(error.path)}: {escape(error.reason)}", overflow="fold")

    _suppressions(report, console, summary)
    gate = summary["gate"]
    if gate["passed"]:
        console.print(f"\n[green]gate passed[/] (--fail-on {','.join(gate['fail_on']) or 'none'})")
    else:
        console.print(
            f"\n[bold red]gate failed[/]: {escape(_counted(report, gate))} with status "
            f"{', '.join(gate['fail_on'])}{escape(_named(report, gate))}",
            overflow="fold",
        )


def _counted(report: ScanReport, gate: dict[str, Any]) -> str:
    return failing_text(gate, partly_scanned(report.failing_errors))


def _named(report: ScanReport, gate: dict[str, Any]) -> str:
    """The failures `failed_gate_text` names, after the count the line already gives."""
    counted = _counted(report, gate)
    named = failed_gate_text(report, gate)
    return named[len(counted) :] if named != counted else ""


def _suppressions(report: ScanReport, console: Console, summary: dict[str, object]) -> None:
    suppressed = report.suppressed
    if suppressed or report.unused_suppressions:
        kinds = summary["suppressed"]
        assert isinstance(kinds, dict)
        console.print(
            f"\nsuppressed: {kinds['ignore']} ignored, {kinds['fixme']} fixme; "
            f"{len(report.unused_suppressions)} unused suppressions"
        )
    for u in sorted(report.unused_suppressions, key=lambda u: (u.path, u.cell or 0, u.line)):
        cell = f"cell {u.cell}:" if u.cell is not None else ""
        console.print(
            f"  [yellow]unused[/] {escape(u.path)}:{cell}{u.line} {u.kind}[{', '.join(u.codes)}]",
            overflow="fold",
        )
    baseline = summary["baseline"]
    if isinstance(baseline, dict):
        console.print(
            f"\nbaseline {escape(str(baseline['path']))}: {baseline['unchanged']} findings "
            f"recorded, {baseline['new']} new"
        )


def _indented(text: str, width: int, indent: int = 11) -> Text:
    lines = textwrap.wrap(
        text,
        width=max(width, indent + 20),
        initial_indent=" " * indent,
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
    )
    return Text("\n".join(lines))
