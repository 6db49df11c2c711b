"""`neuron-migrate report merge`: one report from the JSON reports of several shards."""

from __future__ import annotations

from pathlib import Path

import typer

from neuron_migrate.errors import UsageError
from neuron_migrate.report.formats import FORMATS

report_app = typer.Typer(help="Work with saved JSON reports.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")


@report_app.command(name="merge")
def merge(
    reports: list[Path] = typer.Argument(..., help="JSON reports (`scan --format json`)."),
    output_format: str = typer.Option(
        "terminal", "--format", "-f", help=f"Report format: {', '.join(FORMATS)}."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report here."),
    fail_on: list[str] = typer.Option(
        [],
        "--fail-on",
        help="Gate the merged report on these statuses (default: what the reports recorded).",
    ),
    show_native: bool = typer.Option(False, "--show-native", help="List native op uses too."),
) -> None:
    """Combine shard reports into one, in any format, with the gate applied to the whole."""
    from neuron_migrate.cli.scan import emit_report, exit_with, split_values
    from neuron_migrate.report.load import load_report, merge_reports

    if output_format not in FORMATS:
        raise UsageError(
            f"--format: unknown format {output_format!r}; choose from {', '.join(FORMATS)}"
        )
    merged = merge_reports([load_report(p) for p in reports], split_values(fail_on))
    emit_report(merged, output_format, output, show_native=show_native)
    exit_with(0 if merged.passed else 1)
