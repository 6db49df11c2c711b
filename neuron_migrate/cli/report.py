"""`neuron-migrate report merge`: one report from the JSON reports of several shards."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from neuron_migrate.cli.app import new_group
from neuron_migrate.cli.options import (
    OutputOption,
    ShowNativeOption,
    argument,
    checked_format,
    format_option,
    repeatable,
    split_values,
)
from neuron_migrate.report.formats import FORMATS

if TYPE_CHECKING:
    import typer

group = new_group("report")


def register(app: typer.Typer) -> None:
    app.add_typer(group)


@group.command("merge")
def merge(
    reports: Annotated[list[Path], argument("REPORTS", "JSON reports (`scan --format json`).")],
    output_format: Annotated[str, format_option(FORMATS)] = FORMATS[0],
    output: OutputOption = None,
    fail_on: Annotated[
        list[str] | None,
        repeatable(
            "--fail-on",
            "Gate the merged report on these statuses (default: what the reports recorded).",
        ),
    ] = None,
    show_native: ShowNativeOption = False,
) -> int:
    """Combine shard reports into one, in any format, with the gate applied to the whole."""
    from neuron_migrate.cli.scan import emit_report
    from neuron_migrate.report.load import load_report, merge_reports

    checked_format(output_format, FORMATS)
    merged = merge_reports([load_report(p) for p in reports], split_values(fail_on))
    emit_report(merged, output_format, output, show_native=show_native)
    return 0 if merged.passed else 1
