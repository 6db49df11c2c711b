"""`neuron-migrate scan`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from neuron_migrate import api
from neuron_migrate.errors import UsageError
from neuron_migrate.output import write_output

FORMATS = ("terminal", "json")


def register(app: typer.Typer) -> None:
    app.command(name="scan")(scan)


def scan(
    path: Path = typer.Argument(..., help="A file or folder to scan. Nothing is executed."),
    target: str | None = typer.Option(
        None, "--target", "-t", help="torch-neuronx version to check against (default: newest)."
    ),
    output_format: str = typer.Option(
        "terminal", "--format", "-f", help=f"Report format: {', '.join(FORMATS)}."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report here."),
    fail_on: list[str] = typer.Option(
        [],
        "--fail-on",
        help="Fail (exit 1) on: unsupported (default), fallback, float64, xla, any, none. "
        "Repeatable or comma-separated.",
    ),
    jobs: int | None = typer.Option(
        None, "--jobs", "-j", help="Worker processes (default: all cores)."
    ),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Do not read or write the result cache."
    ),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Where the result cache lives."
    ),
    exclude: list[str] = typer.Option([], "--exclude", help="Glob of paths to skip (repeatable)."),
    max_file_size: float = typer.Option(
        2.0, "--max-file-size", help="Skip files larger than this many MB."
    ),
    show_native: bool = typer.Option(False, "--show-native", help="List native op uses too."),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="Progress bar on stderr (default: when a terminal)."
    ),
) -> None:
    """Find every torch_xla use and classify every torch op against the compatibility matrix."""
    if output_format not in FORMATS:
        raise UsageError(
            f"--format: unknown format {output_format!r}; choose from {', '.join(FORMATS)}"
        )
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    err = Console(stderr=True)
    show_progress = err.is_terminal if progress is None else progress
    with Progress(
        TextColumn("scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not show_progress,
    ) as bar:
        task = bar.add_task("scan", total=None)
        report = api.scan(
            path,
            target=target,
            fail_on=tuple(fail_on),
            jobs=jobs,
            use_cache=not no_cache,
            cache_dir=cache_dir,
            exclude=tuple(exclude),
            max_bytes=int(max_file_size * 1024 * 1024),
            on_progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    if output_format == "json":
        from neuron_migrate.report.json_report import render_json

        write_output(render_json(report), output)
    else:
        from neuron_migrate.report.terminal import render_terminal

        if output is not None:
            with output.open("w", encoding="utf-8") as handle:
                render_terminal(
                    report, Console(file=handle, width=100, no_color=True), show_native=show_native
                )
        else:
            render_terminal(report, Console(), show_native=show_native)
    if output is not None:
        err.print(f"report written to {output}")
    sys.stdout.flush()
    raise typer.Exit(0 if report.passed else 1)
