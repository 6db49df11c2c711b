"""`neuron-migrate scan`."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from neuron_migrate.errors import UsageError
from neuron_migrate.report.formats import FORMATS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console

    from neuron_migrate.api import ScanReport

OPTIONS_HELP = "Repeatable or comma-separated."


def register(app: typer.Typer) -> None:
    app.command(name="scan")(scan)


def split_values(values: list[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


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
        + OPTIONS_HELP,
    ),
    select: list[str] = typer.Option(
        [],
        "--select",
        help="Report only these rule codes or prefixes (NM1, NM902). " + OPTIONS_HELP,
    ),
    ignore: list[str] = typer.Option(
        [], "--ignore", help="Never report these rule codes or prefixes. " + OPTIONS_HELP
    ),
    baseline: Path | None = typer.Option(
        None, "--baseline", help="Fail only on findings not recorded in this baseline file."
    ),
    write_baseline: Path | None = typer.Option(
        None, "--write-baseline", help="Record today's findings in this baseline file."
    ),
    changed_since: str | None = typer.Option(
        None, "--changed-since", help="Scan only files changed since this git ref."
    ),
    shard: str | None = typer.Option(
        None, "--shard", help="Scan shard I of N (e.g. 2/4); merge with `report merge`."
    ),
    config: Path | None = typer.Option(
        None, "--config", help="Read [tool.neuron-migrate] from this pyproject.toml."
    ),
    no_config: bool = typer.Option(False, "--no-config", help="Ignore pyproject.toml."),
    jobs: int | None = typer.Option(
        None, "--jobs", "-j", help="Worker processes (default: all cores)."
    ),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Do not read or write the result cache."
    ),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Where the result cache lives."
    ),
    exclude: list[str] = typer.Option(
        [],
        "--exclude",
        help="Glob of paths to skip, relative to PATH (repeatable; adds to the config's).",
    ),
    max_file_size: float = typer.Option(
        2.0, "--max-file-size", help="Skip files larger than this many MB."
    ),
    show_native: bool = typer.Option(False, "--show-native", help="List native op uses too."),
    progress: bool | None = typer.Option(
        None, "--progress/--no-progress", help="Progress bar on stderr (default: when a terminal)."
    ),
) -> None:
    """Find every torch_xla use and classify every torch op against the compatibility matrix."""
    from neuron_migrate.baseline import load_baseline
    from neuron_migrate.baseline import write_baseline as save_baseline
    from neuron_migrate.config import resolve_config, with_baseline_path

    if output_format not in FORMATS:
        raise UsageError(
            f"--format: unknown format {output_format!r}; choose from {', '.join(FORMATS)}"
        )
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    shard_spec = None
    if shard is not None:
        from neuron_migrate.shard import parse_shard

        shard_spec = parse_shard(shard)
    if not path.exists() and not path.is_symlink():
        raise UsageError(f"no such file or directory: {path}")
    settings = with_baseline_path(resolve_config(path, config, isolated=no_config))
    baseline_path = baseline or (Path(settings.baseline) if settings.baseline else None)
    known = load_baseline(baseline_path) if baseline_path and not write_baseline else None

    from neuron_migrate import api  # the engine loads only when a scan runs

    # `--progress` draws the bar even when stderr is not a terminal (a CI log, a pipe).
    show_progress = sys.stderr.isatty() if progress is None else progress
    with _progress_bar(show_progress) as on_progress:
        report = api.scan(
            path,
            target=target,
            fail_on=split_values(fail_on),
            jobs=jobs,
            use_cache=not no_cache,
            cache_dir=cache_dir,
            exclude=tuple(exclude),
            max_bytes=int(max_file_size * 1024 * 1024),
            on_progress=on_progress,
            config=settings,
            select=split_values(select),
            ignore=split_values(ignore),
            baseline=known,
            changed_since=changed_since,
            shard=shard_spec,
        )
    if write_baseline is not None:
        report.baseline = save_baseline(write_baseline, report.findings, report.target)
        _stderr().print(f"baseline written to {write_baseline}: {len(report.findings)} findings")
    emit_report(report, output_format, output, show_native=show_native)
    exit_with(0 if report.passed else 1)


@contextmanager
def _progress_bar(show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr while the block runs; rich loads only when one is drawn."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True, force_terminal=True)
    columns = (TextColumn("scanning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("scan", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def exit_with(code: int) -> None:
    """Exit with the gate's verdict. `sys.exit`, not `typer.Exit`: the entry point runs the app
    with standalone_mode=False, where click returns an Exit's code instead of exiting."""
    sys.stdout.flush()
    sys.exit(code)


def emit_report(
    report: ScanReport, output_format: str, output: Path | None, *, show_native: bool = False
) -> None:
    """Render `report` to stdout or to `output` (atomically); shared with `report merge`."""
    if output_format == "terminal":
        from rich.console import Console

        from neuron_migrate.report.terminal import render_terminal

        if output is not None:
            with output.open("w", encoding="utf-8") as handle:
                render_terminal(
                    report, Console(file=handle, width=100, no_color=True), show_native=show_native
                )
        else:
            render_terminal(report, Console(), show_native=show_native)
    else:
        from neuron_migrate.output import write_output
        from neuron_migrate.report.formats import render_chunks

        write_output(render_chunks(report, output_format), output)
    if output is not None:
        _stderr().print(f"report written to {output}")
    sys.stdout.flush()
